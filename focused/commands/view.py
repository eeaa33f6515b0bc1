"""``scrapy view URL``: Scrapy's command, where the URL asked for is the crawl's seed.

``view`` is ``fetch`` that opens the page in a browser (:mod:`focused.commands.fetch`):
the URL on the command line may be on loopback (a sandbox served by ``scrapy sandbox``);
a redirect from it to another kind of internal address is still refused.
"""

from __future__ import annotations

import argparse
from typing import Any, ClassVar

from scrapy.commands.view import Command as ScrapyView

from focused.cli import STORES_NOTHING, CheckedLogging, seed_from_command_line


class Command(CheckedLogging, ScrapyView):
    default_settings: ClassVar[dict[str, Any]] = {
        **ScrapyView.default_settings,
        STORES_NOTHING: True,
    }

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        if len(args) == 1 and not opts.spider:
            assert self.settings is not None
            seed_from_command_line(self.settings, args[0])
        super().run(args, opts)
