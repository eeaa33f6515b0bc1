"""``scrapy runspider FILE``: Scrapy's command, with a hint for the project's own spider.

Scrapy imports ``FILE`` as a module named after it, so ``focused/spiders/focused.py``
comes back as the ``focused`` package, which holds no spider: Scrapy said "No spider
found in file". The project's spider takes its topic and its settings through
``scrapy crawl``: the command says so in one line (exit status 2).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from scrapy.commands.runspider import Command as ScrapyRunSpider
from scrapy.exceptions import UsageError

from focused.cli import CheckedLogging


class Command(CheckedLogging, ScrapyRunSpider):
    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        if len(args) == 1 and _is_project_spider(Path(args[0])):
            raise UsageError(
                f"{args[0]} is the project's focused spider: run it with"
                " scrapy crawl focused -a topic=NAME (in the project folder)"
            )
        super().run(args, opts)


def _is_project_spider(path: Path) -> bool:
    from focused.spiders import focused as module

    try:
        return path.resolve() == Path(module.__file__ or "").resolve()
    except OSError:
        return False
