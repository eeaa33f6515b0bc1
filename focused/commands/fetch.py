"""``scrapy fetch URL``: Scrapy's command, where the URL asked for is the crawl's seed.

The project refuses addresses inside the network unless a seed is of their kind
(:class:`focused.addressfilter.AddressFilterMiddleware`). Scrapy's ``fetch`` runs a
spider without seeds, so ``scrapy fetch http://127.0.0.1:8000/`` of a sandbox served by
``scrapy sandbox`` was refused. Here the URL on the command line is the seed
(``FOCUSED_SEEDS``), as a topic's seeds are for ``scrapy crawl focused``; a redirect
from it to another kind of internal address is still refused.

It stores nothing, so it runs without ``JOBDIR`` (:class:`focused.cli.StoresNothing`):
one in settings.py is a crawl's and is not used (no folder made, the crawl's frontier
journal neither opened nor changed, even while that crawl runs); ``-s JOBDIR=...`` is
refused in one line, exit status 2.
"""

from __future__ import annotations

import argparse
from typing import Any, ClassVar

from scrapy.commands.fetch import Command as ScrapyFetch

from focused.cli import STORES_NOTHING, StoresNothing, seed_from_command_line


class Command(StoresNothing, ScrapyFetch):
    default_settings: ClassVar[dict[str, Any]] = {
        **ScrapyFetch.default_settings,
        STORES_NOTHING: True,
    }

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        if len(args) == 1 and not opts.spider:
            assert self.settings is not None
            seed_from_command_line(self.settings, args[0])
        super().run(args, opts)
