"""A download that fails (a host that does not resolve or does not answer, a page that
times out, a connection lost mid-answer, a page over ``DOWNLOAD_MAXSIZE``): one WARNING
line, not a traceback.

Scrapy logs a request whose download raised twice at ERROR: RetryMiddleware's "Gave up
retrying" and the scraper's "Error downloading" with the whole traceback (and Scrapy's
robots.txt middleware logs its own). For a crawl started offline that is a screenful of
tracebacks saying only "no network", and on the real web each bad page adds sixty lines
to the log (a hostile server can flood it). Here, once Scrapy's retries
(``RETRY_TIMES``) are spent, such a failure is:

- logged once, at WARNING: ``focused: <GET http://x.invalid/> failed: DNS lookup failed
  for x.invalid (3 attempts)``; a robots.txt download is logged by
  :class:`~focused.robots.FocusedRobotsTxtMiddleware` instead (its host is disallowed
  for a while, RFC 9309), so still once;
- counted in the stats ``focused/errors/<kind>`` (``dns``, ``refused``, ``connect``,
  ``timeout``, ``dataloss``: a body shorter than its ``Content-Length``, then the
  connection closed, ``lost``: the connection closed or reset before a whole answer,
  ``cancelled``: over ``DOWNLOAD_MAXSIZE``, ``header_too_long``: a status or header
  line longer than Twisted reads, :data:`MAX_HEADER_LINE`; ``headers_too_large``:
  more than ``FOCUSED_MAX_HEADER_BYTES`` of status and header lines; ``malformed``: a
  status line that is not HTTP's, an invalid or conflicting ``Content-Length``, a
  ``Transfer-Encoding`` other than chunked (:class:`MalformedAnswer`), a chunked body
  Twisted refuses (a chunk size that is no hex number); ``tls``: a failed TLS
  handshake, with what OpenSSL said, e.g. ``wrong version number`` for an ``https:``
  URL on a port that speaks plain HTTP: it was "closed the connection");
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

A status or header line over :data:`MAX_HEADER_LINE` bytes (Twisted's
``LineReceiver.MAX_LENGTH``, 16 KiB) made Twisted's HTTP client close the connection as
if the server had (a ``ConnectionDone`` like any clean close): it was reported as
"closed the connection". :func:`refuse_long_header_lines` (run when this module is
imported, as the middlewares are) makes that parser raise :class:`HeaderTooLong`
instead, which Twisted hands on as the reason of the failed download (the connection
is closed the same way), so it is told apart: kind ``header_too_long``, not retried
(the server sends the same header again).

Twisted keeps every header line of a response, and every continuation line of one
header, with no bound on their number: a server that sends headers for ever (a line of
1000 bytes at a time) grew the crawler by 1.1 GB in a 5 s ``DOWNLOAD_TIMEOUT``, and
``DOWNLOAD_MAXSIZE`` counts only the body. :func:`cap_header_bytes` makes the parser
count the bytes received before the body (1xx answers included) and raise
:class:`HeadersTooLarge` past ``FOCUSED_MAX_HEADER_BYTES`` (256 KiB, Chromium's own
limit): kind ``headers_too_large``, not retried.

A response Twisted's parser refuses before its body (a status line that is not HTTP's,
``Content-Length: -5``, two ``Content-Length`` headers that disagree, which RFC 9110
calls an unrecoverable error, ``Transfer-Encoding: gzip``) failed with a ``ResponseFailed``
and was told as "closed the connection before a whole answer", and retried
``RETRY_TIMES`` times, though the server had closed nothing and sends the same answer
again. The same wrapper of the parser turns the parser's error into
:class:`MalformedAnswer`, kind ``malformed``: "sent a malformed answer (an invalid or
conflicting Content-Length)", not retried.

A chunked body with a bad chunk size (``zz\r\n``, or a chunk without its CRLF) made
Twisted drop the connection and report the body as cut short: Scrapy's
``ResponseDataLossError``, told as "sent a body shorter than its Content-Length" (an
answer with no ``Content-Length``) and retried. Twisted's refusal is among its causes,
so it is kind ``malformed`` too: "sent a malformed answer (a malformed chunked body:
Chunk-size must be an integer)", not retried.

A body shorter than its ``Content-Length`` (Scrapy's ``ResponseDataLossError``, with
``DOWNLOAD_FAIL_ON_DATALOSS``) was told as "closed the connection before a whole
answer", like a reset, and retried ``RETRY_TIMES`` times although a server that declares
a length it does not send sends the same short body again. It is its own kind,
``dataloss`` ("sent a body shorter than its Content-Length"), retried once (a transfer
cut short by the network is worth a second try) and not again once the retry came back
short too (request meta :data:`~focused.meta.DATALOSS`).

Retries, their stats (``retry/*``, ``downloader/exception_type_count/*``) and every
other failure stay Scrapy's. Two middlewares, on both sides of
RetryMiddleware (550): :class:`QuietNetworkGiveUp` (560) asks RetryMiddleware to log its
give-up of such a failure at DEBUG (and not to retry a robots.txt time-out),
:class:`NetworkErrorMiddleware` (540) does the rest.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from OpenSSL import SSL
from scrapy.exceptions import (
    CannotResolveHostError,
    DownloadCancelledError,
    DownloadConnectionRefusedError,
    DownloadFailedError,
    DownloadTimeoutError,
    IgnoreRequest,
    ResponseDataLossError,
)
from twisted.internet import defer
from twisted.internet.error import (
    ConnectError,
    ConnectionDone,
    ConnectionLost,
    ConnectionRefusedError,
    DNSLookupError,
    TCPTimedOutError,
)
from twisted.internet.error import TimeoutError as ConnectTimeoutError
from twisted.web._newclient import (
    HEADER,
    STATUS,
    HTTPClientParser,
    ParseError,
    ResponseFailed,
    ResponseNeverReceived,
)
from twisted.web.http import _MalformedChunkedDataError

from focused.addressfilter import name_refusal
from focused.defaults import DEFAULTS, get
from focused.meta import DATALOSS

if TYPE_CHECKING:
    from typing import Self

    from scrapy import Request
    from scrapy.crawler import Crawler

logger = logging.getLogger(__name__)

#: a download that took longer than ``DOWNLOAD_TIMEOUT``
TIMEOUTS: tuple[type[BaseException], ...] = (
    DownloadTimeoutError,
    ConnectTimeoutError,
    TCPTimedOutError,
    defer.TimeoutError,
)

#: exception classes of each kind, most specific first (a DNSLookupError and a
#: time-out to connect are no plain ConnectError)
KINDS: tuple[tuple[str, tuple[type[BaseException], ...]], ...] = (
    ("dns", (CannotResolveHostError, DNSLookupError)),
    ("refused", (DownloadConnectionRefusedError, ConnectionRefusedError)),
    ("timeout", TIMEOUTS),
    ("connect", (ConnectError,)),
    ("dataloss", (ResponseDataLossError,)),
    (
        "lost",
        (
            DownloadFailedError,
            ResponseNeverReceived,
            ResponseFailed,
            ConnectionLost,
            ConnectionDone,
        ),
    ),
    ("cancelled", (DownloadCancelledError,)),
)


#: the longest status or header line Twisted's HTTP client reads (its ``LineReceiver``'s)
MAX_HEADER_LINE: int = HTTPClientParser.MAX_LENGTH


class HeaderTooLong(Exception):
    """A response's status or header line is longer than :data:`MAX_HEADER_LINE`."""


def _line_too_long(parser: HTTPClientParser, line: bytes) -> None:
    """``HTTPClientParser.lineLengthExceeded``: raise, instead of closing the
    connection as a clean close does. ``HTTP11ClientProtocol.dataReceived`` closes it
    and fails the request with this error as its reason."""
    raise HeaderTooLong(f"a status or header line longer than {parser.MAX_LENGTH} bytes")


def refuse_long_header_lines() -> None:
    """Make Twisted's HTTP client fail a response with a line too long with
    :class:`HeaderTooLong` (idempotent)."""
    HTTPClientParser.lineLengthExceeded = _line_too_long  # type: ignore[method-assign,assignment]


refuse_long_header_lines()


class HeadersTooLarge(Exception):
    """A response's status and header lines add up to more than
    ``FOCUSED_MAX_HEADER_BYTES``."""


#: the most bytes of status and header lines a response may have (0: no cap), set from
#: ``FOCUSED_MAX_HEADER_BYTES`` by :class:`NetworkErrorMiddleware` (one value per process)
header_bytes_cap: list[int] = [DEFAULTS["FOCUSED_MAX_HEADER_BYTES"]]

#: Twisted's own ``dataReceived`` (also when this module is imported again)
_twisted_data_received = getattr(
    HTTPClientParser.dataReceived, "twisted", HTTPClientParser.dataReceived
)


def _counted_data(parser: HTTPClientParser, data: bytes) -> None:
    """``HTTPClientParser.dataReceived`` that counts the bytes received before the body
    (the status and header lines, and the 1xx answers before them, which Twisted skips)
    and raises :class:`HeadersTooLarge` once more than :data:`header_bytes_cap` came
    and the headers have not ended. Twisted keeps every header line, and every
    continuation line of one header, with no bound on their number (so does Scrapy's
    lenient parser, a subclass that reads them its own way): a server sending headers
    for ever filled the memory until ``DOWNLOAD_TIMEOUT``."""
    if parser.state not in (STATUS, HEADER):
        _twisted_data_received(parser, data)
        return
    seen = getattr(parser, "_focused_header_bytes", 0) + len(data)
    parser._focused_header_bytes = seen  # type: ignore[attr-defined]
    try:
        _twisted_data_received(parser, data)
    except (ParseError, ValueError, KeyError) as exc:
        if isinstance(exc, ParseError) or parser.state in (STATUS, HEADER):
            raise MalformedAnswer(malformed_detail(exc)) from exc
        raise
    cap = header_bytes_cap[0]
    if cap and seen > cap and parser.state in (STATUS, HEADER):
        raise HeadersTooLarge(f"more than {cap} bytes of status and header lines")


class MalformedAnswer(Exception):
    """A response Twisted's parser refused before its body: a status line that is not
    HTTP's, an invalid or conflicting ``Content-Length``, a ``Transfer-Encoding`` it does
    not read. The argument says which, for the log line."""


def malformed_detail(exc: BaseException) -> str:
    """A few words on what Twisted's parser refused (``exc``, raised while it read the
    status and header lines)."""
    if isinstance(exc, ParseError):
        line = exc.args[1] if len(exc.args) > 1 else b""
        shown = repr(bytes(line[:60])) if isinstance(line, bytes) else "?"
        return f"a status line that is not HTTP's: {shown}"
    if isinstance(exc, KeyError):
        coding = exc.args[0] if exc.args else b""
        name = coding.decode("latin-1") if isinstance(coding, bytes) else str(coding)
        return f"Transfer-Encoding: {name[:60]}, which is not chunked"
    return "an invalid or conflicting Content-Length"


def cap_header_bytes() -> None:
    """Make Twisted's HTTP client fail a response whose headers go over
    :data:`header_bytes_cap` with :class:`HeadersTooLarge` (idempotent)."""
    _counted_data.twisted = _twisted_data_received  # type: ignore[attr-defined]
    HTTPClientParser.dataReceived = _counted_data  # type: ignore[method-assign]


cap_header_bytes()


def _causes(exception: BaseException) -> Iterator[BaseException]:
    """``exception`` and its causes (Scrapy raises ``DownloadFailedError`` from Twisted's
    ``ResponseFailed`` or ``ResponseNeverReceived``, whose ``reasons`` are failures)."""
    seen: set[int] = set()
    todo: list[BaseException] = [exception]
    while todo:
        exc = todo.pop()
        if id(exc) in seen:
            continue
        seen.add(id(exc))
        yield exc
        for reason in getattr(exc, "reasons", None) or ():
            value = getattr(reason, "value", None)
            if isinstance(value, BaseException):
                todo.append(value)
        todo += [e for e in (exc.__cause__, exc.__context__) if e is not None]


def _header_too_long(exception: BaseException) -> bool:
    """Whether :class:`HeaderTooLong` is among the causes of ``exception``."""
    return any(isinstance(exc, HeaderTooLong) for exc in _causes(exception))


def _headers_too_large(exception: BaseException) -> bool:
    """Whether :class:`HeadersTooLarge` is among the causes of ``exception``."""
    return any(isinstance(exc, HeadersTooLarge) for exc in _causes(exception))


def malformed(exception: BaseException) -> str | None:
    """What was malformed when a :class:`MalformedAnswer`, or Twisted's refusal of a
    chunked body (a chunk size that is no hex number, a chunk without its CRLF), is
    among the causes of ``exception``, else None."""
    for exc in _causes(exception):
        if isinstance(exc, MalformedAnswer):
            return str(exc)
        if isinstance(exc, _MalformedChunkedDataError):
            said = str(exc).rstrip(".")
            return "a malformed chunked body" + (f": {said}" if said else "")
    return None


def tls_problem(exception: BaseException) -> str | None:
    """What OpenSSL said when ``exception`` comes from a failed TLS handshake or record
    (``wrong version number``: the port does not speak TLS), else None."""
    for exc in _causes(exception):
        if isinstance(exc, SSL.Error):
            errors = exc.args[0] if exc.args and isinstance(exc.args[0], list) else []
            said = [str(e[-1]) for e in errors if isinstance(e, tuple) and e and e[-1]]
            return ", ".join(said) or type(exc).__name__
    return None


def kind_of(exception: BaseException) -> str | None:
    """The kind of a failed download (:data:`KINDS`, ``header_too_long``,
    ``headers_too_large``, ``malformed`` or ``tls``), else None."""
    if _header_too_long(exception):
        return "header_too_long"
    if _headers_too_large(exception):
        return "headers_too_large"
    if malformed(exception) is not None:
        return "malformed"
    if tls_problem(exception) is not None:
        return "tls"
    for kind, classes in KINDS:
        if isinstance(exception, classes):
            return kind
    return None


def reason(kind: str, url: str, exception: BaseException | None = None) -> str:
    """A few words for the user: "DNS lookup failed for example.org"."""
    parts = urlsplit(url)
    host = parts.hostname or url
    port = parts.port or (443 if parts.scheme == "https" else 80)
    if kind == "dns":
        return f"DNS lookup failed for {host}"
    if kind == "malformed":
        said = malformed(exception) if exception is not None else None
        return f"{host}:{port} sent a malformed answer" + (f" ({said})" if said else "")
    if kind == "tls":
        said = tls_problem(exception) if exception is not None else None
        return f"{host}:{port} failed the TLS handshake" + (f" ({said})" if said else "")
    what = {
        "refused": "refused the connection",
        "timeout": "did not answer in time",
        "dataloss": "sent a body shorter than its Content-Length, then closed the connection",
        "lost": "closed the connection before a whole answer",
        "cancelled": "sent more than DOWNLOAD_MAXSIZE",
        "header_too_long": (
            f"sent a status or header line over {MAX_HEADER_LINE} bytes (longer than Twisted reads)"
        ),
        "headers_too_large": (
            f"sent more than {header_bytes_cap[0]} bytes of headers (FOCUSED_MAX_HEADER_BYTES)"
        ),
    }
    if kind in what:
        return f"{host}:{port} {what[kind]}"
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
    give-up of a failed download at DEBUG (request meta
    ``give_up_log_level``), since :class:`NetworkErrorMiddleware` logs it; a robots.txt
    download that timed out, and a response with a header line too long, are not
    retried (``dont_retry``), nor a body shorter than its ``Content-Length`` a second
    time (:data:`~focused.meta.DATALOSS`). A host name the address
    filter refused (it resolves to an internal address) fails as a DNS error: it is
    dropped here (``IgnoreRequest``), neither retried nor reported as a DNS failure."""

    def process_exception(self, request: Request, exception: Exception) -> None:
        kind = kind_of(exception)
        if kind == "dns":
            refusal = name_refusal(request)
            if refusal is not None:  # refused by the address filter, not a DNS failure
                raise refusal
        if kind == "timeout" and is_robots_txt(request):
            request.meta["dont_retry"] = True  # a hanging host: one time-out, not three
        elif kind in ("header_too_long", "headers_too_large", "malformed"):
            request.meta["dont_retry"] = True  # the server sends the same headers again
            request.meta.setdefault("give_up_log_level", "DEBUG")
        elif kind == "dataloss":
            if request.meta.get(DATALOSS):  # short again on its retry: the server lies
                request.meta["dont_retry"] = True
            request.meta[DATALOSS] = True  # copied onto the retry
            request.meta.setdefault("give_up_log_level", "DEBUG")
        elif kind is not None:
            request.meta.setdefault("give_up_log_level", "DEBUG")


class NetworkErrorMiddleware:
    """Downloader middleware (540, below RetryMiddleware): a failed download
    (:data:`KINDS`) that RetryMiddleware gave up on is logged in one WARNING line,
    counted in ``focused/errors/<kind>`` and raised again as :class:`NetworkError`."""

    def __init__(self, crawler: Crawler) -> None:
        self.stats = crawler.stats
        header_bytes_cap[0] = max(0, get(crawler.settings, "FOCUSED_MAX_HEADER_BYTES"))

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler)

    def process_exception(self, request: Request, exception: Exception) -> Any:
        kind = kind_of(exception)
        if kind is None:
            return None
        why = reason(kind, request.url, exception)
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
