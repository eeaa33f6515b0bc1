"""``scrapy list``: Scrapy's command, with ``LOG_FILE``, ``SPIDER_LOADER_CLASS`` and
``SPIDER_MODULES`` checked first (:class:`focused.cli.CheckedLogging`): a spider loader
or spider module that does not import is one line and exit status 2, not Scrapy's
``ModuleNotFoundError`` traceback."""

from __future__ import annotations

from scrapy.commands.list import Command as ScrapyList

from focused.cli import CheckedLogging


class Command(CheckedLogging, ScrapyList):
    pass
