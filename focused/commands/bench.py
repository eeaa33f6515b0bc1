"""``scrapy bench``: Scrapy's quick benchmark, allowed to reach its own loopback server.

Scrapy's ``bench`` serves a site of links on ``http://localhost:8998`` and follows them
for ten seconds with the project's settings. The project refuses loopback addresses
unless a seed is on loopback, and the benchmark's spider has no seeds, so every request
was refused and the benchmark measured nothing. Here the benchmark's own server is the
seed (``FOCUSED_SEEDS``, unless the user set it), as a topic's seeds are for ``scrapy
crawl focused``. It stores nothing, so it runs without ``JOBDIR``, as ``scrapy fetch``
does (one in settings.py is not used, ``-s JOBDIR=...`` is refused in one line:
:class:`focused.cli.StoresNothing`). A Scrapy setting its getter cannot read
(``-s CLOSESPIDER_PAGECOUNT=abc``) is one line and exit status 2, checked before the
server starts (:func:`focused.config.check_scrapy_settings`), as ``scrapy crawl`` does.
"""

from __future__ import annotations

import argparse

from scrapy.commands.bench import Command as ScrapyBench
from scrapy.commands.bench import _BenchSpider

from focused import config
from focused.cli import StoresNothing, fail, seed_from_command_line


class Command(StoresNothing, ScrapyBench):
    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        assert self.settings is not None
        try:
            config.check_scrapy_settings(self.settings)
        except config.ConfigError as exc:
            fail(str(exc), self.settings)
            self.exitcode = 2
            return
        seed_from_command_line(self.settings, _BenchSpider.baseurl)
        super().run(args, opts)
