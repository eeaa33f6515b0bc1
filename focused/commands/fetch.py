"""``scrapy fetch URL``: Scrapy's command, where the URL asked for is the crawl's seed.

The project refuses addresses inside the network unless a seed is of their kind
(:class:`focused.addressfilter.AddressFilterMiddleware`). Scrapy's ``fetch`` runs a
spider without seeds, so ``scrapy fetch http://127.0.0.1:8000/`` of a sandbox served by
``scrapy sandbox`` was refused. Here the URL on the command line is the seed
(``FOCUSED_SEEDS``), as a topic's seeds are for ``scrapy crawl focused``; a redirect
from it to another kind of internal address is still refused.

It takes spider arguments as ``scrapy crawl`` does (``-a NAME=VALUE``), so that
``scrapy fetch --spider focused -a topic=chemistry URL`` fetches the URL as the focused
spider does. Bad input is one line (``focused: error: ...``) and exit status 2, checked
before anything is fetched (:func:`input_problem`): a malformed URL, a Scrapy setting
its getter cannot read (``-s DOWNLOAD_TIMEOUT=abc``), an unknown ``--spider``, and for
the focused spider what ``scrapy parse`` checks of it (no topic or an unknown one, a
spider argument it does not take, a bad setting); an error raised while the spider is
made (the sandbox's port taken) is one line too. A URL that gets no response (its host
refuses the connection, the address filter or robots.txt refuses it) is one line saying
why (:func:`why_no_response`), exit status 1: Scrapy's fetch printed nothing, status 0.

It stores nothing, so it runs without ``JOBDIR`` (:class:`focused.cli.StoresNothing`):
one in settings.py is a crawl's and is not used (no folder made, the crawl's frontier
journal neither opened nor changed, even while that crawl runs); ``-s JOBDIR=...`` is
refused in one line, exit status 2.
"""

from __future__ import annotations

import argparse
from typing import Any, ClassVar

from scrapy.commands.fetch import Command as ScrapyFetch
from scrapy.exceptions import UsageError

from focused import config
from focused.cli import (
    STORES_NOTHING,
    SpiderArguments,
    StoresNothing,
    fail,
    keep_start_error,
    seed_from_command_line,
    unknown_spider,
)
from focused.commands.parse import START_ERRORS, focused_problem, is_focused, url_problem
from focused.outcome import why_no_response


def input_problem(
    settings: Any, loader: Any, url: str | None, opts: argparse.Namespace
) -> str | None:
    """Why ``scrapy fetch``, ``view`` or ``shell`` cannot fetch ``url`` (none: the shell
    without one) with ``opts.spider`` and its ``opts.spargs``, in one line; None when it
    can."""
    if url is not None:
        problem = url_problem(url)
        if problem is not None:
            return problem
    try:  # what Scrapy's getters cannot read (-s DOWNLOAD_TIMEOUT=abc), for any spider
        config.check_scrapy_settings(settings)
    except config.ConfigError as exc:
        return str(exc)
    if not opts.spider:
        return None
    problem = unknown_spider(loader, opts.spider)
    if problem is not None:
        return problem
    spidercls = loader.load(opts.spider)
    if is_focused(spidercls):
        return focused_problem(settings, spidercls, opts.spargs)
    return None


class Command(SpiderArguments, StoresNothing, ScrapyFetch):
    default_settings: ClassVar[dict[str, Any]] = {
        **ScrapyFetch.default_settings,
        STORES_NOTHING: True,
    }

    #: the first error raised while the spider is made; one line when Scrapy stops
    problem: str | None = None
    #: whether the URL's response reached the command (printed, or shown by ``view``)
    _answered = False
    _crawler: Any = None

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        if len(args) != 1:
            raise UsageError
        assert self.settings is not None and self.crawler_process is not None
        process = self.crawler_process
        problem = input_problem(self.settings, process.spider_loader, args[0], opts)
        if problem is not None:
            fail(problem)
            self.exitcode = 2
            return
        if not opts.spider:
            seed_from_command_line(self.settings, args[0])
        crawl = process.crawl

        def crawl_with_arguments(spidercls: Any, *a: Any, **kw: Any) -> Any:
            """Scrapy's ``crawl``, given the spider arguments (Scrapy's fetch has none)
            and keeping an error raised while the spider is made for one line."""
            self._crawler = process.create_crawler(spidercls)
            started = crawl(self._crawler, *a, **{**opts.spargs, **kw})
            keep_start_error(started, START_ERRORS, self._keep)
            return started

        process.crawl = crawl_with_arguments  # type: ignore[method-assign]
        super().run(args, opts)
        if self.problem is not None:
            fail(self.problem)
            self.exitcode = 2
            return
        if not self._answered and self.exitcode == 0:
            fail(f"no response for {args[0]} ({why_no_response(self._crawler)})")
            self.exitcode = 1

    def _print_response(self, response: Any, opts: argparse.Namespace) -> None:
        self._answered = True
        super()._print_response(response, opts)  # type: ignore[misc]

    def _keep(self, exc: BaseException) -> None:
        if self.problem is None:
            self.problem = str(exc)
