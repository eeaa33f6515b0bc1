"""``scrapy check [SPIDER...]``: Scrapy's command, with an unknown spider refused in one line.

Scrapy's check raised a ``KeyError`` traceback (exit status 1) for a spider name it does
not know; here that is one line (``focused: error: unknown spider ...``) and exit status
2, as for ``scrapy crawl`` and ``scrapy parse``.
"""

from __future__ import annotations

import argparse

from scrapy.commands.check import Command as ScrapyCheck

from focused.cli import CheckedLogging, fail, unknown_spider


class Command(CheckedLogging, ScrapyCheck):
    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        assert self.crawler_process is not None
        for name in args:
            problem = unknown_spider(self.crawler_process.spider_loader, name)
            if problem:
                fail(problem)
                self.exitcode = 2
                return
        super().run(args, opts)
