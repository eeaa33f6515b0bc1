"""``scrapy crawl`` with the focused spider's input checked first.

Same command as Scrapy's, except that for the ``focused`` spider a bad topic or a bad
``FOCUSED_*`` setting prints one line (``focused: error: ...``) and exits with status 2
before anything is fetched, instead of a traceback.
"""

from __future__ import annotations

import argparse
import sys

from scrapy.commands.crawl import Command as ScrapyCrawl

from focused import config
from focused.defaults import get
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
