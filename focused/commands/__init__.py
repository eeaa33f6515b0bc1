"""Scrapy commands of the focused project (``COMMANDS_MODULE = "focused.commands"``)."""
