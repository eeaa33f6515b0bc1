"""``scrapy runspider FILE``: Scrapy's command, with a hint for the project's own spider,
and a subclass of the focused spider checked and explained as ``scrapy crawl`` does.

Scrapy imports ``FILE`` as a module named after it, so ``focused/spiders/focused.py``
comes back as the ``focused`` package, which holds no spider: Scrapy said "No spider
found in file". The project's spider takes its topic and its settings through
``scrapy crawl``: the command says so in one line (exit status 2).

A file whose spider is a subclass of :class:`~focused.spiders.focused.FocusedSpider`
(``class Chem(FocusedSpider): topic = "chemistry"``) is crawled by the ``crawl``
command's :meth:`~focused.commands.crawl.Command.run_focused`: a bad topic, argument,
setting or output folder is one line and exit status 2 (it was the spider's
``ConfigError`` or ``TopicError`` traceback, exit status 1), and the crawl's end is
explained as for ``scrapy crawl``.

A file that is not Python (a ``SyntaxError``) is refused as Scrapy refuses one that does
not import: ``Unable to load 'FILE': invalid syntax (FILE, line 6)``, exit status 2 (it
was a traceback, exit status 1).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from scrapy.commands.runspider import Command as ScrapyRunSpider
from scrapy.commands.runspider import _import_file
from scrapy.exceptions import UsageError
from scrapy.utils.spider import iter_spider_classes

from focused.cli import CheckedLogging


class Command(CheckedLogging, ScrapyRunSpider):
    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        if len(args) == 1 and _is_project_spider(Path(args[0])):
            raise UsageError(
                f"{args[0]} is the project's focused spider: run it with"
                " scrapy crawl focused -a topic=NAME (in the project folder)"
            )
        spidercls = _focused_spider_in(args[0]) if len(args) == 1 else None
        if spidercls is None:
            super().run(args, opts)
            return
        from focused.commands.crawl import Command as Crawl

        crawl = Crawl()
        crawl.settings = self.settings
        crawl.crawler_process = self.crawler_process
        crawl.run_focused(spidercls, opts)
        self.exitcode = crawl.exitcode


def _is_project_spider(path: Path) -> bool:
    from focused.spiders import focused as module

    try:
        return path.resolve() == Path(module.__file__ or "").resolve()
    except OSError:
        return False


def _focused_spider_in(filename: str) -> Any:
    """The spider Scrapy would run from ``filename`` (the last one it defines) when it is
    a subclass of the focused spider; None otherwise, and for a file Scrapy cannot load
    (Scrapy says why)."""
    from focused.spiders.focused import FocusedSpider

    path = Path(filename)
    if not path.is_file():
        return None
    try:
        module = _import_file(path)
    except (ImportError, ValueError):
        return None
    except SyntaxError as exc:  # Scrapy's import lets it through: a traceback, exit 1
        raise UsageError(f"Unable to load {filename!r}: {exc}") from None
    classes = list(iter_spider_classes(module))
    if classes and issubclass(classes[-1], FocusedSpider):
        return classes[-1]
    return None
