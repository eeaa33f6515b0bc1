"""A host that does not resolve or does not answer: one WARNING line, not a traceback.

Scrapy logs a request whose download raised a DNS or connection error twice at ERROR:
RetryMiddleware's "Gave up retrying" and the scraper's "Error downloading" with the
whole traceback (and Scrapy's robots.txt middleware logs its own). For a crawl started
offline that is a screenful of tracebacks saying only "no network". Here, once Scrapy's
retries (``RETRY_TIMES``) are spent, such a failure is:

- logged once, at WARNING: ``focused: <GET http://x.invalid/> failed: DNS lookup failed
  for x.invalid (3 attempts)``; a robots.txt download is logged by
  :class:`~focused.robots.FocusedRobotsTxtMiddleware` instead (its host is disallowed
  for a while, RFC 9309), so still once;
- counted in the stats ``focused/errors/<kind>`` (``dns``, ``refused``, ``connect``);
  ``focused/errors/first`` keeps the first one's reason (the ``crawl`` command quotes it
  when a real-web crawl fetched nothing);
- raised again as :class:`NetworkError`, an ``IgnoreRequest``: the request's errback
  (the scheduler's, which records it in the error queue) gets it as before, and Scrapy
  does not log it again.

A robots.txt download that timed out is not retried: a host that accepts connections
and never answers (a hanging host) then holds its waiting requests for one
``DOWNLOAD_TIMEOUT``, not ``1 + RETRY_TIMES`` of them; it is a network failure of kind
``timeout`` as above, its host disallowed for a while and robots.txt fetched again later
(RFC 9309, :class:`~focused.robots.FocusedRobotsTxtMiddleware`).

Retries, their stats (``retry/*``) and every other failure (time-outs of pages, lost
connections, data loss) stay Scrapy's. Two middlewares, on both sides of
RetryMiddleware (550): :class:`QuietNetworkGiveUp` (560) asks RetryMiddleware to log its
give-up of such a failure at DEBUG (and not to retry a robots.txt time-out),
:class:`NetworkErrorMiddleware` (540) does the rest.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from scrapy.exceptions import (
    CannotResolveHostError,
    DownloadConnectionRefusedError,
    DownloadTimeoutError,
    IgnoreRequest,
)
from twisted.internet import defer
from twisted.internet.error import (
    ConnectError,
    ConnectionRefusedError,
    DNSLookupError,
    TCPTimedOutError,
)
from twisted.internet.error import TimeoutError as ConnectTimeoutError

if TYPE_CHECKING:
    from typing import Self

    from scrapy import Request
    from scrapy.crawler import Crawler

logger = logging.getLogger(__name__)

#: exception classes of each kind, most specific first (a DNSLookupError is no ConnectError)
KINDS: tuple[tuple[str, tuple[type[BaseException], ...]], ...] = (
    ("dns", (CannotResolveHostError, DNSLookupError)),
    ("refused", (DownloadConnectionRefusedError, ConnectionRefusedError)),
    ("connect", (ConnectError,)),
)


#: a download that took longer than ``DOWNLOAD_TIMEOUT`` (a robots.txt one is of kind
#: ``timeout``; a page's stays Scrapy's)
TIMEOUTS: tuple[type[BaseException], ...] = (
    DownloadTimeoutError,
    ConnectTimeoutError,
    TCPTimedOutError,
    defer.TimeoutError,
)


def kind_of(exception: BaseException, request: Request | None = None) -> str | None:
    """``dns``, ``refused`` or ``connect`` for a network failure (``timeout`` for a
    robots.txt ``request`` that timed out), else None."""
    for kind, classes in KINDS:
        if isinstance(exception, classes):
            return kind
    if request is not None and isinstance(exception, TIMEOUTS) and is_robots_txt(request):
        return "timeout"
    return None


def reason(kind: str, url: str) -> str:
    """A few words for the user: "DNS lookup failed for example.org"."""
    parts = urlsplit(url)
    host = parts.hostname or url
    port = parts.port or (443 if parts.scheme == "https" else 80)
    if kind == "dns":
        return f"DNS lookup failed for {host}"
    if kind == "refused":
        return f"{host}:{port} refused the connection"
    if kind == "timeout":
        return f"{host}:{port} did not answer in time"
    return f"could not connect to {host}:{port}"


def is_robots_txt(request: Request) -> bool:
    return bool(request.meta.get("dont_obey_robotstxt")) and urlsplit(request.url).path == (
        "/robots.txt"
    )


class NetworkError(IgnoreRequest):
    """A DNS or connection failure, after Scrapy's retries; ``original`` is the
    download's exception, ``kind`` and ``reason`` as in :func:`kind_of` and
    :func:`reason`."""

    def __init__(self, kind: str, reason: str, original: BaseException) -> None:
        super().__init__(reason)
        self.kind = kind
        self.reason = reason
        self.original = original


class QuietNetworkGiveUp:
    """Downloader middleware (560, above RetryMiddleware): RetryMiddleware logs its
    give-up of a DNS or connection failure at DEBUG (request meta
    ``give_up_log_level``), since :class:`NetworkErrorMiddleware` logs it; a robots.txt
    download that timed out is not retried (``dont_retry``)."""

    def process_exception(self, request: Request, exception: Exception) -> None:
        kind = kind_of(exception, request)
        if kind == "timeout":
            request.meta["dont_retry"] = True  # a hanging host: one time-out, not three
        elif kind is not None:
            request.meta.setdefault("give_up_log_level", "DEBUG")


class NetworkErrorMiddleware:
    """Downloader middleware (540, below RetryMiddleware): a DNS or connection failure
    that RetryMiddleware gave up on is logged in one WARNING line, counted in
    ``focused/errors/<kind>`` and raised again as :class:`NetworkError`."""

    def __init__(self, crawler: Crawler) -> None:
        self.stats = crawler.stats

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler)

    def process_exception(self, request: Request, exception: Exception) -> Any:
        kind = kind_of(exception, request)
        if kind is None:
            return None
        why = reason(kind, request.url)
        if self.stats is not None:
            self.stats.inc_value(f"focused/errors/{kind}")
            if self.stats.get_value("focused/errors/first") is None:
                self.stats.set_value("focused/errors/first", why)
        if not is_robots_txt(request):  # the robots.txt middleware logs its own line
            attempts = int(request.meta.get("retry_times", 0)) + 1
            logger.warning(
                "focused: %s failed: %s (%d attempt%s)",
                request,
                why,
                attempts,
                "" if attempts == 1 else "s",
            )
        raise NetworkError(kind, why, exception)
