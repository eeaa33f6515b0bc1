"""Turns the tests' DNS guard on in a child process of the tests (``FOCUSED_DNS_GUARD``
set, this folder on ``PYTHONPATH``): see ``focused_dns_guard``."""

import focused_dns_guard

focused_dns_guard.install_from_env()
