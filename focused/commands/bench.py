"""``scrapy bench``: Scrapy's quick benchmark, allowed to reach its own loopback server.

Scrapy's ``bench`` serves a site of links on ``http://localhost:8998`` and follows them
for ten seconds with the project's settings. The project refuses loopback addresses
unless a seed is on loopback, and the benchmark's spider has no seeds, so every request
was refused and the benchmark measured nothing. Here the benchmark's own server is the
seed (``FOCUSED_SEEDS``, unless the user set it), as a topic's seeds are for ``scrapy
crawl focused``. It stores nothing, so it runs without ``JOBDIR``, as ``scrapy fetch``
does (one in settings.py is not used, ``-s JOBDIR=...`` is refused in one line:
:class:`focused.cli.StoresNothing`).
"""

from __future__ import annotations

import argparse

from scrapy.commands.bench import Command as ScrapyBench
from scrapy.commands.bench import _BenchSpider

from focused.cli import StoresNothing, seed_from_command_line


class Command(StoresNothing, ScrapyBench):
    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        assert self.settings is not None
        seed_from_command_line(self.settings, _BenchSpider.baseurl)
        super().run(args, opts)
