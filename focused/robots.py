"""robots.txt that holds for every request: Scrapy 2.19's middleware, two holes closed.

1. **Concurrent first requests** (the bug the ``kill -9`` crash test caught). While a
   host's robots.txt downloads, Scrapy 2.19's ``RobotsTxtMiddleware.robot_parser`` makes
   every other request to that host ``await maybe_deferred_to_future(deferred)`` on one
   shared ``Deferred``. ``Deferred.asFuture`` consumes the result (its callback returns
   ``None``), so the first waiter gets the parser and **every further waiter gets None,
   which means "allow all"**: it is downloaded unchecked (scrapy/scrapy#6802 replaced the
   per-waiter ``Deferred`` that passed the parser on). A crawl meets it whenever its
   first burst holds three or more URLs of a host: a resumed ``JOBDIR`` (the frontier is
   full at once), many seeds, a worker joining a shared frontier. Here every waiter gets
   its own ``Deferred`` fed by a callback that passes the parser on.
2. **Unreachable robots.txt** (RFC 9309, section 2.3.1.4: a server error or a network
   error means "complete disallow"). Scrapy lets a host's every URL through when its
   robots.txt download raises (time-out, refused connection, ...) and parses the error
   page of a 5xx answer (usually: allow all). Here, once Scrapy's own retries
   (``RETRY_TIMES``) are spent, such a host is disallowed for
   ``FOCUSED_ROBOTS_RETRY_AFTER`` seconds; the first request to it after that downloads
   its robots.txt again. When the host answered (a 5xx: it is up), its requests meanwhile
   fail with :class:`RobotsPostponed`, which the scheduler takes as "wait", not as an
   error: they are fetched once robots.txt is. When it did not answer (a time-out, a
   refused connection), they fail as their own downloads would.
   A 429 Too Many Requests is taken as a 5xx (as Google's crawler takes it): the host
   asked for fewer requests, and "allow all" would have sent it its every URL at once,
   unchecked by its rules. Any other 4xx still means "allow all" (RFC 9309, section
   2.3.1.3), and so does a robots.txt download that a middleware ignored
   (``IgnoreRequest``), as in Scrapy.
3. **A robots.txt redirected where the crawl may not go** (off ``allowed_domains``, to
   an address it refuses, to a URL it cannot follow: :class:`RedirectRefused`). RFC 9309
   (section 2.3.1.2) asks to follow the redirect; Scrapy's ``OffsiteMiddleware`` and the
   project's address filter rightly do not, and Scrapy then took the host as "allow all",
   so the pages its rules forbid were fetched. The rules being unknown, the host's URLs
   are not fetched in this run (with ``JOBDIR`` they wait for the next).
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Any
from weakref import WeakKeyDictionary

from scrapy import signals
from scrapy.downloadermiddlewares.robotstxt import RobotsTxtMiddleware
from scrapy.exceptions import IgnoreRequest, StopDownload
from scrapy.robotstxt import RobotParser
from scrapy.utils.defer import maybe_deferred_to_future
from scrapy.utils.httpobj import urlparse_cached
from twisted.internet.defer import Deferred

from focused.defaults import get
from focused.politeness import SlotDelays

if TYPE_CHECKING:
    from typing import Self

    from scrapy import Request
    from scrapy.crawler import Crawler
    from scrapy.http import Headers, Response

logger = logging.getLogger(__name__)


def is_robots(request: Request) -> bool:
    """Whether ``request`` is the robots.txt download of Scrapy's robots.txt middleware."""
    return bool(request.meta.get("dont_obey_robotstxt")) and (
        urlparse_cached(request).path == "/robots.txt"
    )


class RobotsPostponed(IgnoreRequest):
    """A request held back while its host's robots.txt is unreachable: ``retry_at``
    (``time.monotonic()``) is when robots.txt is fetched again, ``None`` when the host was
    given up for this run (``FOCUSED_ROBOTS_UNREACHABLE_TRIES``)."""

    #: counted when the request waits: ``_next_run`` as well with ``retry_at`` None
    stat = "focused/scheduler/robots_postponed"

    def __init__(self, reason: str, retry_at: float | None) -> None:
        super().__init__(f"robots.txt unreachable ({reason})")
        self.retry_at = retry_at


class RedirectRefused(IgnoreRequest):
    """A redirect the crawl does not follow (off its domains, to a refused address, to a
    URL it cannot fetch): the redirecting request is dropped. For robots.txt it means the
    host's rules cannot be read (:meth:`FocusedRobotsTxtMiddleware._robots_error`)."""

    def __init__(self, message: str, target: str) -> None:
        super().__init__(message)
        self.target = target


class HostGivenUp(RobotsPostponed):
    """A request of a host given up for this run (it answers nothing but server errors,
    or keeps asking to wait): no failure, it waits in the journal for the next run (a
    resume after the outage fetches it), as the requests of a host whose robots.txt
    stays unreachable do."""

    stat = "focused/scheduler/given_up_postponed"

    def __init__(self, reason: str) -> None:
        IgnoreRequest.__init__(self, reason)
        self.retry_at = None


class Unreachable(RobotParser):
    """Stands for the robots.txt of a host that could not be fetched: nothing allowed."""

    def __init__(self, reason: str, retry_at: float, *, answered: bool = False) -> None:
        self.reason = reason
        self.retry_at = retry_at  # time.monotonic() after which robots.txt is fetched again
        #: the host answered (a 5xx): it is up, its URLs wait; without an answer (time-out,
        #: refused connection) they fail as their own downloads would
        self.answered = answered

    @classmethod
    def from_crawler(cls, crawler: Crawler, robotstxt_body: bytes) -> Self:
        return cls("no robots.txt", 0.0)

    def allowed(self, url: str | bytes, user_agent: str | bytes) -> bool:
        return False


class FocusedRobotsTxtMiddleware(RobotsTxtMiddleware):
    """Downloader middleware: Scrapy's ``RobotsTxtMiddleware`` where robots.txt holds for
    every request (see the module docstring).

    - Each request that waits for a host's robots.txt gets the parsed robots.txt (Scrapy
      2.19 hands ``None``, "allow all", to all waiters but the first).
    - A robots.txt that cannot be fetched (an exception, a 5xx or a 429 answer, after
      Scrapy's retries) disallows its host for ``FOCUSED_ROBOTS_RETRY_AFTER`` seconds (RFC 9309);
      the host's requests meanwhile fail: after a 5xx answer with
      :class:`RobotsPostponed` (an ``IgnoreRequest``: the scheduler keeps them waiting),
      after no answer with ``IgnoreRequest`` (failed, as their downloads would); then
      robots.txt is fetched again. After ``FOCUSED_ROBOTS_UNREACHABLE_TRIES`` 5xx answers
      in a row the host is not asked again in this run (its URLs wait in ``JOBDIR`` for
      the next).

    Replaces Scrapy's in ``DOWNLOADER_MIDDLEWARES`` (same place, 100). Settings: Scrapy's
    ``ROBOTSTXT_OBEY``, ``ROBOTSTXT_PARSER``, ``ROBOTSTXT_USER_AGENT``. Stats: Scrapy's
    ``robotstxt/*`` plus ``focused/robotstxt/unreachable`` (failed robots.txt fetches)
    and ``focused/robotstxt/refused`` (requests dropped for it).
    """

    #: seconds a host whose robots.txt could not be fetched stays disallowed (when the
    #: settings have no ``FOCUSED_ROBOTS_RETRY_AFTER``)
    RETRY_AFTER: float = 60.0

    def __init__(self, crawler: Crawler) -> None:
        super().__init__(crawler)
        settings = crawler.settings
        self.retry_after = float(settings.get("FOCUSED_ROBOTS_RETRY_AFTER", self.RETRY_AFTER))
        self.tries = max(1, get(settings, "FOCUSED_ROBOTS_UNREACHABLE_TRIES"))
        self._failures: dict[str, int] = {}  # netloc -> unreachable robots.txt in a row
        self.max_bytes = max(0, get(crawler.settings, "FOCUSED_ROBOTS_MAX_BYTES"))
        self.delays = SlotDelays.of(crawler)
        self._received: WeakKeyDictionary[Request, int] = WeakKeyDictionary()  # bytes so far
        if self.max_bytes:
            crawler.signals.connect(self._headers_received, signal=signals.headers_received)
            crawler.signals.connect(self._bytes_received, signal=signals.bytes_received)

    # --- only the first FOCUSED_ROBOTS_MAX_BYTES of a robots.txt ----------------------
    def _headers_received(self, headers: Headers, request: Request, **_: Any) -> None:
        """A robots.txt larger than ``DOWNLOAD_MAXSIZE`` is not refused by its
        ``Content-Length``: its download stops at the cap instead (``_bytes_received``).
        A compressed one keeps ``DOWNLOAD_MAXSIZE``, which bounds its inflated size."""
        if is_robots(request) and not headers.get(b"Content-Encoding"):
            request.meta["download_maxsize"] = 0
            self._received[request] = 0

    def _bytes_received(self, data: bytes, request: Request, **_: Any) -> None:
        if request not in self._received:
            return
        self._received[request] += len(data)
        if self._received[request] > self.max_bytes:  # so a stopped body is over the cap
            del self._received[request]
            raise StopDownload(fail=False)  # the response holds what came so far

    def _truncated(self, response: Response) -> Response:
        if response.request is not None:
            self._received.pop(response.request, None)
        body = response.body
        if not self.max_bytes or len(body) <= self.max_bytes:
            return response
        cut = body.rfind(b"\n", 0, self.max_bytes + 1)
        body = body[: cut + 1] if cut >= 0 else body[: self.max_bytes]
        self._stats.inc_value("focused/robotstxt/truncated")
        logger.info(
            "focused: robots.txt of %s is over %d bytes: only its first %d are parsed",
            urlparse_cached(response).netloc,
            self.max_bytes,
            len(body),
        )
        return response.replace(body=body)

    # --- every waiter gets the parser --------------------------------------------------
    async def robot_parser(self, request: Request) -> RobotParser | None:
        netloc = urlparse_cached(request).netloc
        parser = self._parsers.get(netloc)
        if isinstance(parser, Deferred):
            waiter: Deferred[RobotParser | None] = Deferred()

            def relay(result: Any) -> Any:
                waiter.callback(result)
                return result  # the next waiter gets the parser too

            parser.addBoth(relay)
            return await maybe_deferred_to_future(waiter)
        if isinstance(parser, Unreachable) and time.monotonic() >= parser.retry_at:
            del self._parsers[netloc]  # time to fetch it again (Scrapy's code does it)
        return await super().robot_parser(request)

    def process_request_2(self, rp: RobotParser | None, request: Request) -> None:
        if isinstance(rp, Unreachable):
            self._stats.inc_value("focused/robotstxt/refused")
            if not rp.answered:
                logger.debug("robots.txt unreachable (%s): %s dropped", rp.reason, request)
                raise IgnoreRequest(f"robots.txt unreachable ({rp.reason})")
            logger.debug("robots.txt unreachable (%s): %s postponed", rp.reason, request)
            retry_at = rp.retry_at if rp.retry_at != float("inf") else None
            raise RobotsPostponed(rp.reason, retry_at)
        super().process_request_2(rp, request)

    # --- an unreachable robots.txt disallows its host for a while -------------------
    async def _parse_robots(self, response: Response, netloc: str, request: Request) -> None:
        if response.status >= 500 or response.status == 429:
            self._stats.inc_value("robotstxt/response_count")
            self._stats.inc_value(f"robotstxt/response_status_count/{response.status}")
            self._unreachable(netloc, f"HTTP {response.status}", answered=True)
            return
        self._failures.pop(netloc, None)
        await super()._parse_robots(self._truncated(response), netloc, request)
        self._crawl_delay(netloc, request)

    def _crawl_delay(self, netloc: str, request: Request) -> None:
        """robots.txt's ``Crawl-delay`` for our user agent spaces the host's downloads."""
        parser = self._parsers.get(netloc)
        crawl_delay = getattr(parser, "crawl_delay", None)
        if crawl_delay is None:
            return
        useragent = self._robotstxt_useragent or request.headers.get(
            b"User-Agent", self._default_useragent
        )
        try:
            delay = crawl_delay(useragent)
        except Exception:  # noqa: BLE001 - a parser's problem must not stop the crawl
            logger.debug("focused: no Crawl-delay from %s", netloc, exc_info=True)
            return
        if delay:
            self.delays.set_floor(request, float(delay))

    def _robots_error(self, exc: Exception, netloc: str) -> None:
        # a DNS or connection failure comes as focused.network.NetworkError (an
        # IgnoreRequest, so Scrapy logs no traceback): its host is unreachable all the same
        if isinstance(exc, RedirectRefused):
            self._redirect_refused(netloc, exc)
            return
        original = getattr(exc, "original", None)
        if isinstance(exc, IgnoreRequest) and original is None:
            self._failures.pop(netloc, None)
            super()._robots_error(exc, netloc)  # Scrapy's "allow all"
            return
        cause = original if isinstance(original, Exception) else exc
        self._stats.inc_value(f"robotstxt/exception_count/{type(cause)}")
        self._unreachable(netloc, str(getattr(exc, "reason", "") or type(cause).__name__))

    def _redirect_refused(self, netloc: str, exc: RedirectRefused) -> None:
        """robots.txt redirects where the crawl may not go: its rules cannot be read, so
        the host's URLs wait for the next run (RFC 9309 would follow the redirect)."""
        self._stats.inc_value("focused/robotstxt/redirect_refused")
        logger.warning(
            "focused: robots.txt of %s redirects to %s, which this crawl does not follow"
            " (%s): its rules cannot be read, so its URLs are not fetched in this run"
            " (FOCUSED_ALLOWED_DOMAINS names the hosts a crawl may go to)",
            netloc,
            exc.target[:200],
            exc,
        )
        rules = Unreachable("robots.txt redirected out of scope", float("inf"), answered=True)
        self._settle(netloc, rules)

    def _unreachable(self, netloc: str, reason: str, *, answered: bool = False) -> None:
        self._stats.inc_value("focused/robotstxt/unreachable")
        if not answered:  # the host itself does not answer: its downloads would fail too
            retry_at = time.monotonic() + self.retry_after
            logger.warning(
                "focused: robots.txt of %s unreachable (%s): its URLs are disallowed for %g s"
                " (RFC 9309), then robots.txt is fetched again",
                netloc,
                reason,
                self.retry_after,
            )
            self._settle(netloc, Unreachable(reason, retry_at))
            return
        failures = self._failures[netloc] = self._failures.get(netloc, 0) + 1
        if failures < self.tries:
            retry_at = time.monotonic() + self.retry_after
            logger.warning(
                "focused: robots.txt of %s unreachable (%s): its URLs are disallowed for %g s"
                " (RFC 9309) and wait, then robots.txt is fetched again",
                netloc,
                reason,
                self.retry_after,
            )
        else:
            retry_at = float("inf")
            self._stats.inc_value("focused/robotstxt/given_up")
            logger.warning(
                "focused: robots.txt of %s unreachable (%s) %d times in a row: its URLs are"
                " not fetched in this run (with JOBDIR they wait for the next)",
                netloc,
                reason,
                failures,
            )
        self._settle(netloc, Unreachable(reason, retry_at, answered=True))

    def _settle(self, netloc: str, parser: Unreachable) -> None:
        """``parser`` stands for ``netloc``'s robots.txt; the requests waiting for it get it."""
        waiting = self._parsers[netloc]
        assert isinstance(waiting, Deferred)
        self._parsers[netloc] = parser
        waiting.callback(parser)
