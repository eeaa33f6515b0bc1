"""``scrapy shell [URL]``: Scrapy's command, where the URL asked for is the crawl's seed.

As for ``scrapy fetch`` (:mod:`focused.commands.fetch`): the URL on the command line
may be on loopback (a sandbox served by ``scrapy sandbox``), and ``fetch()`` in the shell
then reaches the addresses of its kind; other internal addresses stay refused. As
``scrapy fetch``, it takes spider arguments (``scrapy shell --spider focused -a
topic=chemistry URL``), refuses bad input in one line, exit status 2 (a malformed URL,
an unknown ``--spider``, no topic or a bad one for the focused spider), and runs without
``JOBDIR`` (one in settings.py is not used, ``-s JOBDIR=...`` is refused in one line:
:class:`focused.cli.StoresNothing`). The URL of the command line that gets no response is
``scrapy fetch``'s one line, exit status 1 (:meth:`Command.update_vars`).
"""

from __future__ import annotations

import argparse
import functools
import sys
from typing import Any, ClassVar

from scrapy.commands.shell import Command as ScrapyShell
from scrapy.utils.url import guess_scheme

from focused.cli import (
    STORES_NOTHING,
    SpiderArguments,
    StoresNothing,
    fail,
    seed_from_command_line,
)
from focused.commands.fetch import input_problem
from focused.commands.parse import START_ERRORS
from focused.outcome import why_no_response


class Command(SpiderArguments, StoresNothing, ScrapyShell):
    default_settings: ClassVar[dict[str, Any]] = {
        **ScrapyShell.default_settings,
        STORES_NOTHING: True,
    }

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        assert self.settings is not None and self.crawler_process is not None
        process = self.crawler_process
        url = guess_scheme(args[0]) if args else None  # a local file: file://
        problem = input_problem(self.settings, process.spider_loader, url, opts)
        if problem is not None:
            fail(problem)
            self.exitcode = 2
            return
        if args and not opts.spider:
            seed_from_command_line(self.settings, args[0])
        create = process._create_crawler

        def create_with_arguments(spidercls: Any) -> Any:
            """Scrapy's crawler, whose spider is made with the spider arguments (Scrapy's
            shell has none)."""
            crawler = create(spidercls)
            crawler._create_spider = functools.partial(crawler._create_spider, **opts.spargs)
            return crawler

        process._create_crawler = create_with_arguments  # type: ignore[method-assign]
        self._first = bool(args)  # the URL of the command line is fetched first
        try:
            super().run(args, opts)
        except START_ERRORS as exc:  # raised while the spider is made: the sandbox's port
            fail(str(exc))
            self.exitcode = 2

    def update_vars(self, vars: dict[str, Any]) -> None:  # noqa: A002 - Scrapy's name
        """The URL of the command line that got no response (its host refusing the
        connection, so its robots.txt unreachable; the address filter; robots.txt): one
        line saying why, exit status 1, instead of a shell (or ``-c`` code) whose
        ``response`` is None (``-c "response.status"``: an ``AttributeError``
        traceback)."""
        first, self._first = getattr(self, "_first", False), False
        if first and vars.get("response") is None and vars.get("request") is not None:
            fail(f"no response for {vars['request'].url} ({why_no_response(vars.get('crawler'))})")
            sys.exit(1)
        super().update_vars(vars)
