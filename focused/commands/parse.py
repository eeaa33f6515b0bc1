"""``scrapy parse URL``: Scrapy's command, with bad input refused in one line.

Same command as Scrapy's, except that bad input prints one line (``focused: error:
...``) and exits with status 2, instead of a traceback, Twisted's "Unhandled error in
Deferred" (or asyncio's "Task exception was never retrieved") and status 0 or 1:

- an argument that is no URL, a malformed URL (no host, a port out of range, a broken
  IPv6 address), ``--depth`` below 1, a bad ``LOG_LEVEL``;
- ``--spider`` naming no spider, or no ``--spider`` and no spider whose domains take the
  URL (the ``focused`` spider takes none: ``--spider focused``);
- a callback that the spider does not have (``-c``), or ``--rules`` that find none;
- for the ``focused`` spider, as for ``scrapy crawl focused``: a bad topic, a spider
  argument it does not take, a bad ``FOCUSED_*`` setting, an empty
  ``FOCUSED_OUTPUT_DIR`` (:mod:`focused.commands.crawl`), checked before the spider
  is made; the sandbox's port taken, raised while it is made;
  and a URL off loopback (``127.0.0.0/8``) while the web it crawls is the sandbox
  (``FOCUSED_WEB=sandbox``, or ``auto`` with the real web unreachable), whose pages
  are what its relevance and targets are about;
- ``-s JOBDIR=...``: it stores nothing and keeps no frontier (a ``JOBDIR`` in
  settings.py is not used: no folder made, a crawl's frontier journal neither opened
  nor changed, even while that crawl runs; :class:`focused.cli.StoresNothing`).

A URL that does not answer is no bad input: Scrapy's "No response downloaded" stays.
"""

from __future__ import annotations

import argparse
import functools
from collections.abc import AsyncIterator, Callable
from typing import Any, ClassVar
from urllib.parse import urlsplit

from scrapy.commands.parse import Command as ScrapyParse
from scrapy.exceptions import UsageError
from scrapy.http import Request, Response
from scrapy.utils.defer import maybe_deferred_to_future
from scrapy.utils.spider import spidercls_for_request
from twisted.internet.defer import Deferred
from w3lib.url import is_url

from focused import config
from focused.cli import (
    EMPTY_OUTPUT_DIR,
    STORES_NOTHING,
    StoresNothing,
    fail,
    keep_start_error,
    unknown_spider,
)
from focused.defaults import get
from focused.outcome import why_no_response
from focused.web.addresses import classify, parse_host
from focused.web.sites import WebError
from focused.web.topics import TopicError, load_topic

#: what may be raised while the focused spider is made that is the user's input
START_ERRORS = (TopicError, config.ConfigError, WebError)


class CallbackError(ValueError):
    """The callback to parse a response with cannot be found (``-c``, ``--rules``)."""


def url_problem(url: str) -> str | None:
    """Why ``url`` cannot be parsed, in one line; None when it can."""
    if not is_url(url):
        hint = "" if "://" in url else f" (say 'http://{url}')"
        return f"{url!r} is not a URL: give an http(s) or file URL{hint}"
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises for a port out of range or not a number
        Request(url)
    except ValueError as exc:
        return f"malformed URL {url!r} ({exc})"
    if parts.scheme in ("http", "https") and not parts.hostname:
        return f"malformed URL {url!r} (no host)"
    return None


def off_sandbox(url: str) -> str | None:
    """Why an http(s) ``url`` is no page of the sandbox web (served on loopback), in one
    line; None when it is on loopback (or no http(s) URL)."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https"):
        return None
    host = parts.hostname or ""
    address = parse_host(host)
    if address is not None and classify(address) == "loopback":
        return None
    if address is None and host.rstrip(".") == "localhost":
        return None
    return (
        f"{url} is not on loopback (127.0.0.0/8), and the web this run crawls is the"
        " sandbox: parse a sandbox page (scrapy sandbox serves them), or that site with"
        " -s FOCUSED_WEB=real"
    )


def is_focused(spidercls: type | None) -> bool:
    """Whether ``spidercls`` is the focused spider (or a subclass), whose input is checked
    as ``scrapy crawl focused`` checks it."""
    from focused.spiders.focused import FocusedSpider  # not for every scrapy command

    return spidercls is not None and issubclass(spidercls, FocusedSpider)


def focused_problem(
    settings: Any, spidercls: Any, spargs: dict[str, str], url: str | None = None
) -> str | None:
    """The focused spider's input (or a subclass's: its class attribute ``topic``, its
    ``custom_settings``) checked as ``scrapy crawl focused`` checks it, before the spider
    is made: its arguments ``spargs``, its topic, its settings, and with ``url`` (``scrapy
    parse``'s) a URL off loopback for ``FOCUSED_WEB=sandbox``; one line, None when good."""
    settings = settings.copy()  # with the spider's settings, as its crawler's
    spidercls.update_settings(settings)
    if not str(get(settings, "FOCUSED_OUTPUT_DIR")).strip():
        return EMPTY_OUTPUT_DIR
    try:
        config.check_spider_args(spargs)
        topic = load_topic(
            spidercls.topic_argument(spargs.get("topic")),
            get(settings, "FOCUSED_TOPICS_DIR") or None,
        )
        if url is not None and str(get(settings, "FOCUSED_WEB")) == "sandbox":
            problem = off_sandbox(url)  # before any folder is made
            if problem is not None:
                return problem
        config.validate(settings, topic)  # it stores nothing: no folder is made
    except (TopicError, config.ConfigError) as exc:
        return str(exc)
    return None


class Command(StoresNothing, ScrapyParse):
    default_settings: ClassVar[dict[str, Any]] = {
        **ScrapyParse.default_settings,
        STORES_NOTHING: True,
    }

    #: the first bad input found once the crawl started; one line when it stops
    problem: str | None = None

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        if len(args) != 1:
            raise UsageError
        url = args[0]
        spidercls, problem = None, url_problem(url)
        if problem is None:
            spidercls, problem = self._find_spidercls(url, opts)
        if problem is None and is_focused(spidercls):
            problem = self._focused_problem(url, opts, spidercls)
        if problem is not None:
            fail(problem)
            self.exitcode = 2
            return
        self.set_spidercls(url, opts)
        self.start_parsing(url, opts)
        if self.problem is not None:
            fail(self.problem)
            self.exitcode = 2
            return
        self.print_results(opts)

    def _find_spidercls(self, url: str, opts: argparse.Namespace) -> tuple[type | None, str | None]:
        """The spider class Scrapy will parse ``url`` with, or why there is none (and a
        ``--depth`` below 1) in one line."""
        if opts.depth < 1:
            return None, f"--depth must be at least 1, got {opts.depth}"
        assert self.crawler_process is not None
        loader = self.crawler_process.spider_loader
        names = ", ".join(sorted(loader.list())) or "none"
        if opts.spider:
            problem = unknown_spider(loader, opts.spider)
            return (None, problem) if problem else (loader.load(opts.spider), None)
        found = spidercls_for_request(loader, Request(url))
        if found is None:
            return None, f"no spider is set for {url}; name one with --spider (spiders: {names})"
        return found, None

    def _focused_problem(self, url: str, opts: argparse.Namespace, spidercls: Any) -> str | None:
        """The focused spider's input checked as ``scrapy crawl focused`` checks it, and a
        URL off loopback for ``FOCUSED_WEB=sandbox``, before the spider is made."""
        assert self.settings is not None
        return focused_problem(self.settings, spidercls, opts.spargs, url)

    def _keep(self, exc: BaseException | str) -> None:
        """Keep the first problem for the line printed when the crawl stops."""
        if self.problem is None:
            self.problem = str(exc)

    def set_spidercls(self, url: str, opts: argparse.Namespace) -> None:
        """Scrapy's spider class, whose start (the URL's request) first checks the URL
        against the web the focused spider crawls, and keeps a callback that is not
        found (``-c``) for one line instead of a traceback."""
        super().set_spidercls(url, opts)
        if self.spidercls is None:
            return
        scrapy_start = self.spidercls.start
        command = self

        async def start(spider: Any) -> AsyncIterator[Any]:
            if getattr(getattr(spider, "web", None), "kind", "") == "sandbox":
                problem = off_sandbox(url)  # FOCUSED_WEB=auto, the real web unreachable
                if problem is not None:
                    command._keep(problem)
                    return
            try:
                async for request in scrapy_start(spider):
                    yield request
            except CallbackError as exc:
                command._keep(exc)

        self.spidercls.start = start  # type: ignore[method-assign]

    def start_parsing(self, url: str, opts: argparse.Namespace) -> None:
        """Scrapy's, with a bad topic or setting raised while the spider is made kept for
        one line (:func:`focused.cli.keep_start_error`)."""
        process = self.crawler_process
        assert process is not None
        assert self.spidercls is not None
        self.pcrawler = self._create_crawler(self.spidercls)
        keep_start_error(process.crawl(self.pcrawler, **opts.spargs), START_ERRORS, self._keep)
        process.start()
        if process.bootstrap_failed and self.problem is None:
            self.exitcode = 1
        if not self.first_response and self.problem is None:  # Scrapy's: an ERROR, status 0
            fail(f"no response for {url} ({why_no_response(self.pcrawler)})")
            self.exitcode = 1

    def prepare_request(self, spider: Any, request: Request, opts: argparse.Namespace) -> Request:
        request = super().prepare_request(spider, request, opts)
        assert request.callback is not None
        request.callback = self._guarded(request.callback)
        return request

    def _get_items_and_requests(
        self, spider_output: Any, opts: argparse.Namespace, depth: int, spider: Any, callback: Any
    ) -> Any:
        # the next depth's requests get the guarded callback too
        return super()._get_items_and_requests(
            spider_output, opts, depth, spider, self._guarded(callback)
        )

    def _guarded(self, callback: Callable[..., Any]) -> Callable[..., Any]:
        """Scrapy's callback (which finds the spider's callback for each response and
        collects what it returns), made a coroutine: a callback not found is kept for one
        line instead of a "Spider error processing" traceback, and Scrapy is handed no
        Deferred (deprecated, and reported as one returned by the spider's own callback).
        """
        if getattr(callback, "_focused_guarded", False):
            return callback

        async def guarded(response: Response, **cb_kwargs: Any) -> Any:
            try:
                result = callback(response, **cb_kwargs)
            except CallbackError as exc:
                self._keep(exc)
                return []
            if isinstance(result, Deferred):  # what Scrapy's callback returns
                return await maybe_deferred_to_future(result)
            return result

        functools.update_wrapper(guarded, callback)
        guarded._focused_guarded = True  # type: ignore[attr-defined]
        return guarded

    def _get_callback(
        self, *, spider: Any, opts: argparse.Namespace, response: Response | None = None
    ) -> Any:
        try:
            return super()._get_callback(spider=spider, opts=opts, response=response)
        except CallbackError:
            raise
        except ValueError as exc:  # "Cannot find callback 'nope' in spider: focused"
            message = str(exc)
            raise CallbackError(message[:1].lower() + message[1:]) from None

    def get_callback_from_rules(self, spider: Any, response: Response) -> Any:
        if not getattr(spider, "rules", None):  # Scrapy logs an error, then raises one
            raise CallbackError(
                f"spider {spider.name!r} has no CrawlSpider rules (--rules); name its"
                " callback with -c"
            )
        return super().get_callback_from_rules(spider, response)
