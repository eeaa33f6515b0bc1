"""``scrapy crawl`` with the focused spider's input checked first.

Same command as Scrapy's, except that for the ``focused`` spider a bad topic or a bad
``FOCUSED_*`` setting prints one line (``focused: error: ...``) and exits with status 2
before anything is fetched, instead of a traceback. A crawl stopped because it could not
store its pages (finish reason ``store_failed``, :mod:`focused.stop`) exits with status 1.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from scrapy import signals
from scrapy.commands.crawl import Command as ScrapyCrawl

from focused import config
from focused.defaults import get
from focused.stop import STORE_FAILED, stopped
from focused.web.topics import TopicError, load_topic


class Command(ScrapyCrawl):
    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        if args and args[0] == "focused":
            try:
                settings = self.settings
                topic = load_topic(
                    opts.spargs.get("topic", ""), get(settings, "FOCUSED_TOPICS_DIR") or None
                )
                config.validate(settings, topic)
            except (TopicError, config.ConfigError) as exc:
                print(f"focused: error: {exc}", file=sys.stderr)
                self.exitcode = 2
                return
        super().run(args, opts)

    def _create_crawler(self, spidercls: Any) -> Any:
        crawler = super()._create_crawler(spidercls)

        def closed(reason: str) -> None:  # the page store or the journal failed
            if reason == STORE_FAILED or stopped(crawler):
                self.exitcode = 1

        crawler.signals.connect(closed, signal=signals.spider_closed, weak=False)
        return crawler
