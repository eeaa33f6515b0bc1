"""``scrapy shell [URL]``: Scrapy's command, where the URL asked for is the crawl's seed.

As for ``scrapy fetch`` (:mod:`focused.commands.fetch`): the URL on the command line
may be on loopback (a sandbox served by ``scrapy sandbox``), and ``fetch()`` in the shell
then reaches the addresses of its kind; other internal addresses stay refused. As
``scrapy fetch``, it runs without ``JOBDIR`` (one in settings.py is not used, ``-s
JOBDIR=...`` is refused in one line: :class:`focused.cli.StoresNothing`).
"""

from __future__ import annotations

import argparse
from typing import Any, ClassVar

from scrapy.commands.shell import Command as ScrapyShell

from focused.cli import STORES_NOTHING, StoresNothing, seed_from_command_line


class Command(StoresNothing, ScrapyShell):
    default_settings: ClassVar[dict[str, Any]] = {
        **ScrapyShell.default_settings,
        STORES_NOTHING: True,
    }

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        if args and not opts.spider:
            assert self.settings is not None
            seed_from_command_line(self.settings, args[0])
        super().run(args, opts)
