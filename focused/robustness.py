"""Scrapy glue of the defences in :mod:`focused.web.sanitize` (a hostile web).

Most hostile cases are Scrapy's own job and only need the right settings: time-outs
(``DOWNLOAD_TIMEOUT``), size (``DOWNLOAD_MAXSIZE``, also on the inflated size of a gzip
bomb), retries, redirect loops (``REDIRECT_MAX_TIMES`` and the seen-URL filter),
``ROBOTSTXT_OBEY``, ``DEPTH_LIMIT``, ``URLLENGTH_LIMIT``, other hosts
(``OffsiteMiddleware`` with ``spider.allowed_domains``). What Scrapy lacks is here.
"""

from __future__ import annotations

import logging
import re
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from itertools import islice
from typing import TYPE_CHECKING, Any
from urllib.parse import urljoin, urlparse

from lxml import etree
from scrapy.downloadermiddlewares.cookies import CookiesMiddleware
from scrapy.downloadermiddlewares.httpcompression import HttpCompressionMiddleware
from scrapy.downloadermiddlewares.redirect import MetaRefreshMiddleware, RedirectMiddleware
from scrapy.exceptions import IgnoreRequest
from scrapy.http import HtmlResponse, Response, TextResponse, XmlResponse
from scrapy.link import Link
from scrapy.linkextractors import IGNORED_EXTENSIONS, LinkExtractor, _is_valid_url
from scrapy.linkextractors.lxmlhtml import XHTML_NAMESPACE
from scrapy.responsetypes import responsetypes
from scrapy.spidermiddlewares.urllength import UrlLengthMiddleware
from scrapy.utils import response as scrapy_response
from scrapy.utils._compression import _DecompressionMaxSizeExceeded
from scrapy.utils.httpobj import urlparse_cached
from scrapy.utils.misc import rel_has_nofollow
from scrapy.utils.response import get_base_url
from tldextract import TLDExtract
from w3lib.html import strip_html5_whitespace
from w3lib.url import safe_url_string

from focused.bounded import remember
from focused.defaults import get
from focused.frontier.seen import url_fingerprint
from focused.politeness import SlotDelays
from focused.robots import HostGivenUp, RedirectRefused, is_robots
from focused.web import codings, sanitize
from focused.web.streaks import ServerErrorStreaks
from focused.web.urljoins import FolderJoins, backslashes_as_slashes

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.crawler import Crawler
    from scrapy.settings import BaseSettings
    from scrapy.statscollectors import StatsCollector

logger = logging.getLogger(__name__)

#: Place in ``DOWNLOADER_MIDDLEWARES``: requests pass it after the robots.txt and offsite
#: checks (so refused requests do not count against a host), responses after
#: ``HttpCompressionMiddleware`` (590) has inflated them.


class RobustnessMiddleware:
    """Downloader middleware: a page cap per host, charset repair, binary bodies.

    - At most ``FOCUSED_MAX_PAGES_PER_HOST`` downloads per host name (0: no cap); retries
      and robots.txt do not count. Further requests to the host are dropped
      (``focused/skipped/host_cap``): a calendar or another endless URL space on one
      host cannot eat the crawl.
    - A text response whose ``Content-Type`` charset is wrong (GBK served as
      ``charset=utf-8`` or ``iso-8859-1``) or no charset at all (``charset=zlib``,
      ``undefined``: Scrapy raised) is decoded with the ``<meta>`` charset or the
      sniffed one instead (:func:`focused.web.sanitize.repair_encoding`,
      ``focused/charset/repaired``).
    - A "text" response whose body is binary (:func:`focused.web.sanitize.looks_binary`)
      becomes a plain :class:`~scrapy.http.Response` (no text, no links), which the
      spider skips (``focused/skipped/binary``).
    - A page with a few NUL bytes is still a page: they are removed
      (``focused/pages/nul_stripped``). A UTF-16/32 page without a byte order mark is
      decoded by its header's charset (``focused/charset/wide``), not taken for binary.
    - A page nested deeper than lxml parses (:func:`focused.web.sanitize.tree_cut`, on
      the part of it the spider parses: ``FOCUSED_MAX_PARSE_BYTES``, ``_TAGS``) is counted
      (``focused/pages/truncated_tree``): what is deeper is lost.
    - The requests of a host given up for asking to wait too long
      (``FOCUSED_MAX_RETRY_AFTER_TOTAL``, :class:`focused.politeness.SlotDelays`) are
      dropped (``focused/skipped/retry_after``), retries included.
    - A host (host and port) that answers 5xx or 429 ``FOCUSED_MAX_SERVER_ERRORS`` times in a
      row (every attempt counts, robots.txt aside; any other answer ends the streak,
      :class:`focused.web.streaks.ServerErrorStreaks`) is given up for the run: one
      WARNING line, ``focused/hosts/given_up``; its further requests, retries included,
      are dropped (``focused/skipped/server_errors``, the error queue).

    Settings: ``FOCUSED_MAX_PAGES_PER_HOST``, ``FOCUSED_MAX_SERVER_ERRORS``,
    ``FOCUSED_SERVER_ERRORS_SECONDS``.
    """

    def __init__(
        self,
        max_per_host: int = 0,
        stats: StatsCollector | None = None,
        delays: SlotDelays | None = None,
        max_parse_bytes: int = 0,
        max_parse_tags: int = 0,
        *,
        max_server_errors: int = 0,
        server_errors_seconds: float = 0.0,
    ) -> None:
        self.max_per_host = max(0, int(max_per_host))
        self.server_errors = ServerErrorStreaks(max_server_errors, server_errors_seconds)
        #: the part of a page the spider parses (``FOCUSED_MAX_PARSE_BYTES`` and
        #: ``FOCUSED_MAX_PARSE_TAGS``; 0: all)
        self.max_parse_bytes = max(0, int(max_parse_bytes))
        self.max_parse_tags = max(0, int(max_parse_tags))
        self.stats = stats
        self.per_host: Counter[str] = Counter()
        self.delays = delays

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> RobustnessMiddleware:
        # the Retry-After pauses (also without ROBOTSTXT_OBEY, whose middleware makes them)
        delays = SlotDelays.of(crawler)
        return cls(
            get(crawler.settings, "FOCUSED_MAX_PAGES_PER_HOST"),
            crawler.stats,
            delays,
            get(crawler.settings, "FOCUSED_MAX_PARSE_BYTES"),
            get(crawler.settings, "FOCUSED_MAX_PARSE_TAGS"),
            max_server_errors=get(crawler.settings, "FOCUSED_MAX_SERVER_ERRORS"),
            server_errors_seconds=get(crawler.settings, "FOCUSED_SERVER_ERRORS_SECONDS"),
        )

    def _inc(self, key: str) -> None:
        if self.stats is not None:
            self.stats.inc_value(key)

    def process_request(self, request: Request) -> None:
        meta = request.meta
        delays = self.delays
        if delays is not None and delays.given_up(request) and not meta.get("dont_obey_robotstxt"):
            self._inc("focused/skipped/retry_after")
            raise HostGivenUp(f"{request.url}: its host keeps asking to retry later")
        if self.server_errors.gave_up and not is_robots(request):
            netloc = urlparse_cached(request).netloc.lower()
            if self.server_errors.given_up(netloc):
                self._inc("focused/skipped/server_errors")
                raise HostGivenUp(f"{request.url}: its host answers only server errors")
        if not self.max_per_host:
            return
        if meta.get("retry_times") or meta.get("dont_obey_robotstxt"):
            return  # a retry of a counted request, or robots.txt itself
        host = (urlparse_cached(request).hostname or "").lower()
        if self.per_host[host] >= self.max_per_host:
            self._inc("focused/skipped/host_cap")
            if self.per_host[host] == self.max_per_host:
                self.per_host[host] += 1  # log once per host
                logger.info(
                    "focused: %s reached FOCUSED_MAX_PAGES_PER_HOST=%d; its other URLs are dropped",
                    host,
                    self.max_per_host,
                )
            raise IgnoreRequest(f"host {host} reached its cap of {self.max_per_host} pages")
        self.per_host[host] += 1

    def _server_error_streak(self, request: Request, status: int) -> None:
        netloc = urlparse_cached(request).netloc.lower()
        if self.server_errors.answered(netloc, status):
            self._inc("focused/hosts/given_up")
            logger.warning(
                "focused: %s answered %d server errors (5xx or 429) in a row, the last %d, over"
                " FOCUSED_MAX_SERVER_ERRORS: it is given up for this run, its other"
                " requests are dropped",
                netloc,
                self.server_errors.limit,
                status,
            )

    def _parsed(self, response: TextResponse) -> bytes:
        """The part of the page the spider parses (the part that lxml can cut)."""
        body = response.body
        wide = sanitize.is_wide(response.encoding)
        return body[
            : sanitize.parse_cut(body, self.max_parse_bytes, self.max_parse_tags, wide=wide)
        ]

    def _check_tree(self, response: TextResponse) -> None:
        """Count (and log) an HTML page that nests deeper than lxml parses."""
        if isinstance(response, HtmlResponse) and sanitize.tree_cut(self._parsed(response)):
            self._inc("focused/pages/truncated_tree")
            logger.info(
                "focused: %s nests deeper than %d elements: lxml drops what is deeper",
                response.url,
                sanitize.LXML_MAX_DEPTH,
            )

    def process_response(self, request: Request, response: Response) -> Response:
        # a 429 or 503 with Retry-After is a pause the politeness honours
        # (FOCUSED_MAX_RETRY_AFTER_TOTAL bounds those), not a server error
        paused = response.status in (429, 503) and b"Retry-After" in response.headers
        if self.server_errors.limit and not paused and not is_robots(request):
            self._server_error_streak(request, response.status)
        if not isinstance(response, TextResponse) or not response.body:
            return response
        raw_type = response.headers.get(b"Content-Type")
        content_type = raw_type.decode("latin-1") if raw_type else None
        wide = sanitize.wide_encoding(content_type, response.body)
        if wide is not None:  # UTF-16/32 by its header, no BOM: half NUL bytes, not binary
            self._inc("focused/charset/wide")
            return response if response.encoding == wide else response.replace(encoding=wide)
        if sanitize.looks_binary(response.body):
            self._inc("focused/skipped/binary")
            return Response(**{name: getattr(response, name) for name in Response.attributes})
        bom = sanitize.wide_bom(response.body)
        if bom is not None:  # the BOM decides (WHATWG), whatever the header says:
            # its NUL bytes are the text's, and no charset repair applies
            if response.encoding != bom:
                response = response.replace(encoding=bom)
            self._check_tree(response)
            return response
        if b"\x00" in response.body:
            self._inc("focused/pages/nul_stripped")
            response = response.replace(body=sanitize.strip_nul(response.body))
        self._check_tree(response)
        encoding = sanitize.repair_encoding(content_type, response.body)
        if encoding is not None:
            self._inc("focused/charset/repaired")
            logger.debug(
                "focused: %s declared %r; decoding it as %s",
                response.url,
                content_type,
                encoding,
            )
            return response.replace(encoding=encoding)
        return response


class FocusedHttpCompressionMiddleware(HttpCompressionMiddleware):
    """Scrapy's ``HttpCompressionMiddleware``, except that a body that does not decode as
    its ``Content-Encoding`` says (``gzip`` on plain HTML) is kept as sent, without the
    header, and counted (``focused/compression/undecodable``); Scrapy's raised, and the
    page was lost with a traceback. A body that begins as a stream of its coding but is
    cut short or corrupt is a bad page of its own (:meth:`_broken`): Scrapy's decoders
    gave what they could of it, and half a page was stored as the page. Its size limits
    (``IgnoreRequest``) are Scrapy's, except for robots.txt: only its first
    ``FOCUSED_ROBOTS_MAX_BYTES`` are inflated, as the download of an uncompressed one
    stops there
    (:class:`focused.robots.FocusedRobotsTxtMiddleware` parses them). One that inflated
    over ``DOWNLOAD_MAXSIZE`` was refused, and the robots.txt middleware allowed the
    whole host. Replaces Scrapy's in ``DOWNLOADER_MIDDLEWARES`` (same place, 590)."""

    def __init__(self, stats: StatsCollector | None = None, *, crawler: Crawler) -> None:
        super().__init__(stats, crawler=crawler)
        self.robots_max_bytes = max(0, get(crawler.settings, "FOCUSED_ROBOTS_MAX_BYTES"))

    def process_response(  # type: ignore[override]
        self, request: Request, response: Response
    ) -> Request | Response:
        response = self._without_identity(response)
        if response.status == 206:  # its Content-Range counts the bytes as sent
            request.meta[sanitize.WIRE_LENGTH] = len(response.body)
        else:  # (a 206 before it, retried or refreshed: that answer's length)
            request.meta.pop(sanitize.WIRE_LENGTH, None)
        robots = self._robots_prefix(request, response)
        if robots is not None:
            return robots
        try:
            return super().process_response(request, response)
        except IgnoreRequest:
            raise
        except codings.BrokenCoding as exc:
            return self._broken(response, exc)
        except Exception as exc:  # noqa: BLE001 - gzip, zlib, brotli, zstd errors alike
            if self.stats is not None:
                self.stats.inc_value("focused/compression/undecodable")
            encoding = response.headers.get(b"Content-Encoding", b"").decode("latin-1")
            logger.warning(
                "focused: %s does not decode as Content-Encoding %r (%s): kept as sent",
                response.url,
                encoding,
                type(exc).__name__,
            )
            headers = response.headers.copy()
            del headers[b"Content-Encoding"]
            cls = responsetypes.from_args(headers=headers, url=response.url, body=response.body)
            return response.replace(cls=cls, headers=headers)

    @staticmethod
    def _without_identity(response: Response) -> Response:
        """``response`` without ``identity`` in its ``Content-Encoding`` (no coding at all,
        RFC 9110; the header goes when nothing else is in it). Scrapy took it for a coding
        it cannot decode: a WARNING line for every such page, and in ``gzip, identity``
        the gzip was not decoded (the page skipped as binary)."""
        values = response.headers.getlist(b"Content-Encoding")
        if not values or b"identity" not in b",".join(values).lower():
            return response
        kept = [
            token.strip()
            for value in values
            for token in value.split(b",")
            if token.strip() and token.strip().lower() != b"identity"
        ]
        headers = response.headers.copy()
        del headers[b"Content-Encoding"]
        if kept:
            headers[b"Content-Encoding"] = b", ".join(kept)
        return response.replace(headers=headers)

    @staticmethod
    def _decode(body: bytes, encoding: bytes, max_size: int) -> bytes:
        """Scrapy's ``_decode``, whole or not at all (:func:`focused.web.codings.decode`):
        a stream cut short or corrupt raises :class:`~focused.web.codings.BrokenCoding`
        (Scrapy's decoders gave what they could of it: half a page), a body that is no
        stream of its coding ``ValueError`` (kept as sent)."""
        try:
            decoded = codings.decode(body, encoding.decode("latin-1"), max_size)
        except codings.TooLarge as exc:  # Scrapy's own refusal (IgnoreRequest)
            raise _DecompressionMaxSizeExceeded(exc.size, max_size) from None
        if decoded is None:
            raise ValueError(f"not a {encoding!r} stream")
        return decoded

    def _broken(self, response: Response, exc: codings.BrokenCoding) -> Response:
        """A page whose compressed body is cut short or corrupt: not the page, nor any
        part of it that could be trusted; or one of more gzip members or zstd frames than
        any server sends (:data:`~focused.web.codings.MAX_MEMBERS`). Counted
        (``focused/skipped/truncated_coding``, ``focused/skipped/corrupt_coding``,
        ``focused/skipped/coding_members``), logged in one line, and handed on as a
        plain :class:`~scrapy.http.Response` (no text): the spider skips it, nothing is
        stored, and it is journaled done (the server sends the same bytes again)."""
        stat, what = {
            "cut": ("truncated_coding", "cut short (the stream ends before its end)"),
            "members": (
                "coding_members",
                f"of more than {codings.MAX_MEMBERS} members (streams one after another)",
            ),
        }.get(exc.kind, ("corrupt_coding", "that is corrupt"))
        if self.stats is not None:
            self.stats.inc_value(f"focused/skipped/{stat}")
        logger.warning("focused: %s sent a %s body %s: skipped", response.url, exc.coding, what)
        return Response(**{name: getattr(response, name) for name in Response.attributes})

    def _robots_prefix(self, request: Request, response: Response) -> Response | None:
        """A compressed robots.txt inflated up to ``FOCUSED_ROBOTS_MAX_BYTES`` and one more
        byte (over it, the robots.txt middleware cuts it at its last whole line); None
        for another response, or one of a coding this does not inflate (Scrapy's way)."""
        codings = b",".join(response.headers.getlist(b"Content-Encoding")).decode("latin-1")
        if not codings or not self.robots_max_bytes or not is_robots(request):
            return None
        body = sanitize.inflate_prefix(
            response.body, reversed(codings.split(",")), self.robots_max_bytes + 1
        )
        if body is None:
            return None
        headers = response.headers.copy()
        del headers[b"Content-Encoding"]
        cls = responsetypes.from_args(headers=headers, url=response.url, body=body)
        return response.replace(cls=cls, headers=headers, body=body)


class FocusedUrlLengthMiddleware(UrlLengthMiddleware):
    """Scrapy's ``UrlLengthMiddleware`` (a link longer than ``URLLENGTH_LIMIT`` is dropped
    and counted in ``urllength/request_ignored_count``), except the log: Scrapy logged
    each such URL whole at INFO (a page of 8 KB links made a 29 MB log, one 7.9 MB
    ``href`` a 7.9 MB line). Here each is one DEBUG line with its first 200 characters
    and its length, and the first one of each page's host one INFO line like it.
    Replaces Scrapy's in ``SPIDER_MIDDLEWARES`` (same place, 800)."""

    #: hosts already named at INFO (emptied when full: at worst a host is named again)
    HOSTS = 10_000

    def __init__(self, maxlength: int) -> None:
        super().__init__(maxlength)
        self._told: dict[str, bool] = {}

    def get_processed_request(self, request: Request, response: Response | None) -> Request | None:
        if len(request.url) <= self.maxlength:
            return request
        self.crawler.stats.inc_value("urllength/request_ignored_count")
        host = urlparse_cached(response).netloc if response is not None else ""
        told = host in self._told
        if not told:
            remember(self._told, host, True, self.HOSTS)
        logger.log(
            logging.DEBUG if told else logging.INFO,
            "focused: ignoring a link longer than URLLENGTH_LIMIT (%d) on %s: %s (%d characters)%s",
            self.maxlength,
            _shorter(response.url) if response is not None else "a start request",
            _shorter(request.url),
            len(request.url),
            "" if told else "; the host's next ones at DEBUG",
        )
        return None


class _BadRedirect(Exception):
    """A redirect to a URL that is not followed (:func:`focused.web.sanitize.scheme_problem`)."""

    def __init__(self, problem: str, url: str) -> None:
        super().__init__(f"{problem}: {url}")
        self.problem, self.url = problem, url


class _CheckedRedirects:
    """Mixin of Scrapy's redirect middlewares: the URL they build a request for is
    checked first, as a link is (:func:`focused.web.sanitize.scheme_problem`), and
    against ``URLLENGTH_LIMIT`` (``too_long``), which Scrapy applies to links only.

    A redirect off the spider's ``allowed_domains`` from a ``dont_filter`` request is
    not followed either (``offsite``): Scrapy's redirect copies ``dont_filter`` onto the
    new request, and its ``OffsiteMiddleware`` lets every ``dont_filter`` request
    through, so a page that answered 503 once (its retry is ``dont_filter``) and then
    redirected to another host was fetched and stored off the crawl's domains. A
    robots.txt redirected off them is not followed here either, so that its host is
    told why (:class:`focused.robots.RedirectRefused`). A request with
    ``meta["allow_offsite"]`` may still leave them, as in Scrapy."""

    crawler: Crawler

    def __init__(self, settings: BaseSettings) -> None:
        super().__init__(settings)  # type: ignore[call-arg]
        self.url_length_limit = settings.getint("URLLENGTH_LIMIT")

    def _build_redirect_request(
        self, source_request: Request, response: Response, *, url: str, **kwargs: Any
    ) -> Request:
        url = sanitize.canonical_ip_url(url)
        problem = sanitize.scheme_problem(url)
        if problem is None and self.url_length_limit and len(url) > self.url_length_limit:
            problem = "too_long"
        if problem is not None:
            raise _BadRedirect(problem, url)
        redirected: Request = super()._build_redirect_request(  # type: ignore[misc]
            source_request, response, url=url, **kwargs
        )
        if (
            (source_request.dont_filter or is_robots(source_request))
            and not source_request.meta.get("allow_offsite")
            and not self._on_site(redirected)
        ):
            raise _BadRedirect("offsite", url)
        return redirected

    def _on_site(self, request: Request) -> bool:
        """Whether Scrapy's ``OffsiteMiddleware`` would let ``request`` through were it
        not ``dont_filter``: its host is one of the spider's ``allowed_domains`` or a
        subdomain of one (no ``allowed_domains``: every host)."""
        spider = self.crawler.spider
        domains = [d for d in getattr(spider, "allowed_domains", None) or [] if d]
        if not domains:
            return True
        host = urlparse_cached(request).hostname or ""
        return any(host == d or host.endswith(f".{d}") for d in domains)

    def _followed(
        self, request: Request, response: Response
    ) -> tuple[Request | Response | None, str, str]:
        """Scrapy's answer, or ``(None, problem, target)`` (counted in
        ``focused/redirects/ignored/<problem>``) when the redirect makes no URL to
        follow."""
        try:
            return super().process_response(request, response), "", ""  # type: ignore[misc]
        except _BadRedirect as bad:
            problem, target = bad.problem, bad.url
        except ValueError:  # w3lib raised: no URL at all
            problem, target = "bad_url", self._unparsed(response)
        if self.crawler.stats is not None:
            self.crawler.stats.inc_value(f"focused/redirects/ignored/{problem}")
        return None, problem, target

    def _unparsed(self, response: Response) -> str:
        """The target to show when w3lib could not even parse it."""
        return ""


def settle_base_url(response: Response) -> bool:
    """Make Scrapy's ``get_base_url(response)`` (its selector, link extractor and meta
    refresh all call it) safe: when the page's ``<base href>`` makes no URL (``http://[::1``,
    a port out of range, a lone surrogate), w3lib raised ``ValueError`` and the spider
    lost the page with a traceback; the page's own URL is then its base, as browsers
    take it (WHATWG: a base URL that fails to parse falls back to the document's).
    True when the base was replaced."""
    if not isinstance(response, TextResponse):
        return False
    try:
        get_base_url(response)
    except ValueError:
        scrapy_response._baseurl_cache[response] = response.url
        return True
    return False


def _shorter(url: str, limit: int = 200) -> str:
    """``url`` for a log line: at most ``limit`` characters."""
    return url if len(url) <= limit else f"{url[:limit]}..."


class FocusedRedirectMiddleware(_CheckedRedirects, RedirectMiddleware):
    """Scrapy's ``RedirectMiddleware``, except that a ``Location`` that makes no URL to
    follow (``http://[::1``, a port out of range, ``javascript:``, ``mailto:``,
    ``file:``, credentials, a bad host name, longer than ``URLLENGTH_LIMIT``) drops the
    redirecting request (``IgnoreRequest``, one INFO line,
    ``focused/redirects/ignored/<problem>``). Scrapy's raised ``ValueError`` ("Error
    downloading" and a traceback at ERROR), or passed the 3xx answer on for ``file:``
    and ``ftp:``. Replaces Scrapy's (same place, 600)."""

    def process_response(  # type: ignore[override]
        self, request: Request, response: Response
    ) -> Request | Response:
        followed, problem, target = self._followed(request, response)
        if followed is not None:
            return followed
        shown = _shorter(target)
        logger.info("focused: %s redirects to %r (%s): dropped", response.url, shown, problem)
        raise RedirectRefused(f"redirect to {shown!r} not followed ({problem})", target)

    def _unparsed(self, response: Response) -> str:
        return (response.headers.get(b"Location") or b"").decode("latin-1")


#: the content of a page's refresh meta tags, and the URL in it (for a log line)
_REFRESH_CONTENT = "//meta[translate(@http-equiv, 'REFSH', 'refsh') = 'refresh']/@content"
_REFRESH_URL = re.compile(r"url\s*=\s*(.*)", re.IGNORECASE | re.DOTALL)


def _self_form(url: str) -> int:
    """The seen-URL form of ``url`` without its scheme's default port
    (``http://h:80/a`` is ``http://h/a``: one page), for a refresh to the page itself."""
    return url_fingerprint(sanitize.without_default_port(url))


class FocusedMetaRefreshMiddleware(_CheckedRedirects, MetaRefreshMiddleware):
    """Scrapy's ``MetaRefreshMiddleware``, except that a ``<meta http-equiv="refresh">``
    to a URL not followed (as for :class:`FocusedRedirectMiddleware`) leaves the page as
    it is: stored, its links followed (``focused/redirects/ignored/<problem>``, a DEBUG
    line). Scrapy's raised ``ValueError`` and the page was lost. Replaces Scrapy's (same
    place, 580).

    A ``Refresh`` HTTP header (``Refresh: 0; url=/new.html``, which browsers follow as
    they follow the meta tag, and Scrapy read not at all) is followed by the same rules
    when the page has no refresh meta tag: within ``METAREFRESH_MAXDELAY``, checked as a
    redirect is, counted in ``focused/redirects/refresh_header``; one to the page itself
    (a page that reloads, in any spelling) leaves it a page, as a meta refresh there
    does (:meth:`_build_redirect_request`)."""

    def process_response(  # type: ignore[override]
        self, request: Request, response: Response
    ) -> Request | Response:
        if settle_base_url(response) and self.crawler.stats is not None:
            self.crawler.stats.inc_value("focused/pages/bad_base")
        followed, problem, target = self._followed(request, response)
        if followed is response and b"Refresh" in response.headers:
            followed, problem, target = self._refresh_header(request, response)
        if followed is not None:
            return followed
        logger.debug(
            "focused: %s refreshes to %r (%s): ignored", response.url, _shorter(target), problem
        )
        return response

    def _build_redirect_request(
        self, source_request: Request, response: Response, *, url: str, **kwargs: Any
    ) -> Request:
        """A refresh to the page itself, in any spelling the seen-URL set takes for the
        same URL (a fragment, ``./``, another case of the scheme or host, escapes, the
        scheme's default port written or not), or
        back to a URL of the redirects that led to it, is no move: the scheduler would
        drop the request as seen, and the page would be lost, neither stored nor its
        links followed. It stays a page (``focused/redirects/ignored/self``)."""
        chain = (response.url, source_request.url, *source_request.meta.get("redirect_urls", ()))
        target = _self_form(url)
        if any(target == _self_form(seen) for seen in chain):
            raise _BadRedirect("self", url)
        return super()._build_redirect_request(source_request, response, url=url, **kwargs)

    def _refresh_header(
        self, request: Request, response: Response
    ) -> tuple[Request | Response | None, str, str]:
        """:meth:`_followed` for the ``Refresh`` header of ``response``, whose page has no
        meta refresh that Scrapy followed."""
        if (
            request.meta.get("dont_redirect", False)
            or request.method == "HEAD"
            or urlparse_cached(request).scheme not in {"http", "https"}
            or (isinstance(response, HtmlResponse) and response.xpath(_REFRESH_CONTENT))
        ):
            return response, "", ""
        value = (response.headers.get(b"Refresh") or b"").decode("latin-1")
        got = sanitize.refresh_header(value)
        if got is None or not got[1] or got[0] >= self._maxdelay:
            return response, "", ""
        try:
            # the URL's bytes as sent, read as Scrapy reads a Location (UTF-8, the
            # others escaped): decoded as latin-1 and encoded again by the Request, a
            # /café.html sent as UTF-8 was fetched as /caf%C3%83%C2%A9.html
            written = safe_url_string(got[1].encode("latin-1"))
            url = urljoin(response.url, written)
            redirected = self._redirect_request_using_get(request, response, url)
        except _BadRedirect as bad:
            problem, target = bad.problem, bad.url
        except ValueError:
            problem, target = "bad_url", got[1]
        else:
            if self.crawler.stats is not None:
                self.crawler.stats.inc_value("focused/redirects/refresh_header")
            return self._redirect(redirected, request, "refresh header"), "", ""
        if self.crawler.stats is not None:
            self.crawler.stats.inc_value(f"focused/redirects/ignored/{problem}")
        return None, problem, target

    def _unparsed(self, response: Response) -> str:
        """The refresh's ``url=`` as the page writes it (w3lib could not parse it)."""
        if not isinstance(response, TextResponse):
            return ""
        content = response.xpath(_REFRESH_CONTENT).get() or ""
        found = _REFRESH_URL.search(content)
        return found.group(1).strip().strip("'\"") if found else content


def _next_of(url: str, target: str, params: dict[str, str]) -> bool:
    """Whether a ``Link`` header's link (``target``, ``params``) names the next or
    previous page of the page at ``url``: a ``rel`` in :data:`PAGER_RELS`, and no
    ``anchor`` naming another resource."""
    if not target or PAGER_RELS.isdisjoint(params.get("rel", "").lower().split()):
        return False
    return "anchor" not in params or _names_itself(url, params["anchor"])


def _names_itself(url: str, anchor: str) -> bool:
    """Whether a ``Link`` header's ``anchor`` (a URI reference, joined to ``url``) is
    ``url`` itself, compared in the seen-URL form without the default port (as
    :func:`_self_form`: ``HTTP://H/p``, ``http://h:80/p`` and ``http://h/p#top`` are
    ``http://h/p``; ``/café`` is ``/caf%C3%A9``; ``http://h`` is ``http://h/``)."""
    try:
        return _self_form(urljoin(url, anchor)) == _self_form(url)
    except ValueError:
        return False


#: The link elements of a page, as Scrapy's extractor scans them (tags a and area, href)
_LINK_COUNT = "count(//*[local-name() = 'a' or local-name() = 'area'][@href])"
#: the elements read for the pages they name beside the ``<a>``/``<area>`` links:
#: ``<link>`` (by its ``href``) and the frames (by their ``src``)
_PAGER_TAGS = tuple(
    t for name in ("link", "frame", "iframe") for t in (name, f"{{{XHTML_NAMESPACE}}}{name}")
)
#: the elements of :data:`_PAGER_TAGS` that may name a page (counted past the elements
#: :meth:`FocusedLinkExtractor._pager_links` looks at)
_PAGER_COUNT = (
    "count(//*[local-name() = 'link'][@rel][@href]"
    " | //*[local-name() = 'frame' or local-name() = 'iframe'][@src])"
)
#: the frames inside a ``<noscript>`` (a tag manager's ``ns.html?id=GTM-...``): no
#: content, shown only when scripts are off
_NOSCRIPT_FRAMES = (
    "//*[local-name() = 'noscript']//*[local-name() = 'frame' or local-name() = 'iframe']"
)


class _NoscriptFrames:
    """The frames inside a ``<noscript>`` of a document, found on the first question
    (one XPath over the page, only for a page with a frame to follow)."""

    def __init__(self, root: Any) -> None:
        self.root = root
        self.frames: set[Any] | None = None

    def holds(self, el: Any) -> bool:
        if self.frames is None:
            self.frames = set(self.root.xpath(_NOSCRIPT_FRAMES))
        return el in self.frames


#: the ``rel`` words of a ``<link>`` that names the next or previous page of a series
#: (pagination: a listing whose pages 2..N are named only there)
PAGER_RELS = frozenset({"next", "prev", "previous"})
#: the same tags for lxml's ``iter`` (Scrapy's extractor drops only the XHTML namespace)
_LINK_TAGS = ("a", "area", f"{{{XHTML_NAMESPACE}}}a", f"{{{XHTML_NAMESPACE}}}area")
#: ``<template>`` (and its XHTML name): its content is inert, never shown nor followed by
#: a browser (a client-side template's ``<a href="/item/{{id}}">``): no link of the page
_TEMPLATE_TAGS = ("template", f"{{{XHTML_NAMESPACE}}}template")
#: a URL whose join with any page URL is itself (a scheme and a host)
_HAS_HOST = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^/?#]")
#: an element's text as Scrapy's extractor reads it
_string = etree.XPath("string()")

#: Scrapy's ignored extensions, except ``.rss``: a feed's items are followed (:func:`read_feed`)
FOLLOWED_EXTENSIONS = tuple(e for e in IGNORED_EXTENSIONS if e != "rss")


def _pager_target(el: Any) -> tuple[bool, str | None, str | None, str]:
    """Of a ``<link>``, ``<frame>`` or ``<iframe>``: whether :data:`_PAGER_COUNT` counts
    it, the ``href`` (``src``) of the page it names (None or empty: none), its ``rel``
    and the stat of its links."""
    if _local(el.tag) == "link":
        href, rel = el.get("href"), el.get("rel")
        candidate = href is not None and rel is not None
        if not rel or PAGER_RELS.isdisjoint(rel.lower().split()):
            return candidate, None, rel, "focused/links/pager"
        return candidate, href, rel, "focused/links/pager"
    src = el.get("src")  # a frame's page, shown inside this one
    return src is not None, src, None, "focused/links/frames"


def _shown(
    root: Any, tags: tuple[str, ...], inert: Callable[[Any], None] | None = None
) -> Iterator[Any]:
    """``root.iter(*tags)`` without the elements inside a ``<template>`` (each handed
    to ``inert``): a template's content is no part of the page a browser shows. A
    declarative shadow root (``<template shadowrootmode="open">``, or the older
    ``shadowroot``) is shown, a browser renders it: its content is the page's. Only the
    outermost inert template's content is walked (a template within one is inside it
    already): each element is looked at a bounded number of times, however deep
    templates nest."""
    hidden: set[Any] = set()
    within: set[Any] = set()  # the templates inside an inert one
    for el in root.iter(*tags, *_TEMPLATE_TAGS):
        if el.tag in _TEMPLATE_TAGS:  # met before its content (document order)
            if el not in within and not _shadow_root(el):
                hidden.update(el.iter(*tags))
                within.update(el.iter(*_TEMPLATE_TAGS))
        elif el in hidden:
            if inert is not None:
                inert(el)
        else:
            yield el


def _shadow_root(template: Any) -> bool:
    """Whether ``template`` is a declarative shadow root, which browsers render."""
    mode = template.get("shadowrootmode") or template.get("shadowroot") or ""
    return mode.strip().lower() in ("open", "closed")


def _browser_href(href: str) -> str:
    """``href`` as a browser reads it on an http(s) page: without the HTML whitespace
    around it, its backslashes before the query read as slashes
    (:func:`~focused.web.urljoins.backslashes_as_slashes`)."""
    return backslashes_as_slashes(strip_html5_whitespace(href))


def _browser_hrefs(
    iter_links: Callable[[Any], Iterator[tuple[Any, str, str]]],
) -> Callable[[Any], Iterator[tuple[Any, str, str]]]:
    """Scrapy's ``_iter_links`` with each value read by :func:`_browser_href` (the
    extractor's path when built with arguments of its own)."""

    def browser(document: Any) -> Iterator[tuple[Any, str, str]]:
        for el, attr, value in iter_links(document):
            yield el, attr, _browser_href(value)

    return browser


class FocusedLinkExtractor(LinkExtractor):
    """Scrapy's link extractor, restricted to http(s) links, and at most ``max_links``
    link elements read per page.

    Scrapy's own keeps ``file:`` and ``ftp:`` links (a hostile page could make the
    crawler read ``file:///etc/passwd``) and drops ``mailto:``, ``javascript:``,
    ``data:`` and malformed URLs silently. Here all of them are dropped and counted in
    ``focused/links/ignored/<scheme>`` (``bad_url`` for malformed ones). Links to
    ``.rss`` files, which Scrapy's ignores, are kept: they are feeds. The pages a
    ``<link rel="next">`` or ``rel="prev"``, a ``<frame>`` or an ``<iframe>`` names come
    after them (:meth:`_pager_links`), when the extractor is built with no argument but
    ``deny_extensions`` (it reads all of a page's ``<a>``/``<area>``): one built with
    ``restrict_xpaths``, ``tags``, ``attrs``... gives the links Scrapy's gives alone.

    ``max_links`` (``FOCUSED_MAX_LINKS_PER_PAGE``; 0: no cap): only the first this many
    link elements (``<a>``/``<area>`` with ``href``, in document order, then the pager
    ``<link>`` and frames of :meth:`_pager_links`: one cap for all) are read; the
    links among them are extracted as Scrapy does (joined, filtered, deduplicated), and
    the elements left unread are counted in ``focused/links/capped``. Each element read
    costs ~80 us (``urljoin``, ``safe_url_string``, Scrapy's filters): a page of 200,000
    links held the reactor for 16 s.

    Built with no argument but ``deny_extensions``, it gives Scrapy's links (same URLs,
    texts, ``nofollow``, order, counts) by a shorter path, :meth:`_fast_links`: the link
    elements found by lxml in C (``iter("a", "area")``), the text of a repeated URL
    read once, and what follows from an absolute URL alone (its ``safe_url_string``, its
    join with the page URL, its verdict: allowed or the reason it is dropped) looked up
    in a bounded cache, since pages of a site link the same URLs over and over.
    """

    #: entries of the URL cache (it is emptied when full: ~2 MB at most)
    CACHE_SIZE = 8192

    def __init__(
        self,
        count: Callable[..., Any] | None = None,
        max_links: int = 0,
        max_path_repeats: int = 0,
        **kwargs: Any,
    ) -> None:
        """``count(stat_key)`` is called for each dropped link and ``count(stat_key, n)``
        for the ``n`` link elements past the cap (e.g. ``stats.inc_value``). A link whose
        path repeats a segment (or a block of segments) more than ``max_path_repeats``
        times in a row is dropped (:func:`focused.web.sanitize.repeated_path`, counted in
        ``focused/links/ignored/repeated_path``; 0: never)."""
        self._fast = set(kwargs) <= {"deny_extensions"}
        kwargs.setdefault("deny_extensions", FOLLOWED_EXTENSIONS)
        super().__init__(**kwargs)
        #: Scrapy's extension test in one C call (``str.endswith`` of a tuple) instead of
        #: a generator over its ~90 extensions: the same verdict (:meth:`_scrapy_allows`);
        #: read here once, as Scrapy reads ``deny_extensions`` once
        self._deny_suffixes = tuple(self.deny_extensions)
        self.count = count
        self.max_links = max(0, int(max_links))
        self.max_path_repeats = max(0, int(max_path_repeats))
        #: (absolute URL, encoding) -> (link URL, verdict): "" allowed, "-" dropped by
        #: Scrapy's filters, else the scheme problem counted for it; None: a bad URL
        self._urls: dict[tuple[str, str], tuple[str, str] | None] = {}
        #: ``urljoin`` of the hrefs a site's pages repeat, shared by the pages of a folder
        self._joins = FolderJoins(self.CACHE_SIZE)
        parser = self.link_extractor  # a page's link elements come from its _iter_links
        parser._iter_links = _browser_hrefs(parser._iter_links)  # type: ignore[method-assign]
        if self.max_links:
            parser._iter_links = self._capped(parser._iter_links)  # type: ignore[method-assign]

    def extract_links(self, response: TextResponse) -> list[Link]:
        return self.links_and_urls(response)[0]

    def links_and_urls(self, response: TextResponse) -> tuple[list[Link], Callable[[str], str]]:
        """The page's links (:meth:`extract_links`), and ``href`` -> the URL this
        extractor makes of it on this page (a link's ``url`` for its ``href``; raises
        ``ValueError`` for an ``href`` that makes no URL). The ``href``s read for the
        links are not joined again: the text around each link and the chrome links
        (:mod:`focused.web.template`) look their URLs up here."""
        root = response.selector.root
        base_url, encoding, page_url = get_base_url(response), response.encoding, response.url
        join = self._joins.of(base_url)
        urls: dict[str, str] = {}
        if self._fast and hasattr(root, "iter") and hasattr(root, "xpath"):
            links, read = self._fast_links(root, page_url, encoding, join, urls)
            budget = self.max_links - read if self.max_links else None
            links += self._pager_links(root, links, page_url, encoding, join, budget=budget)
            if b"Link" in response.headers:
                room = self.max_links - len(links) if self.max_links else None
                links += self._header_links(response, links, room)
        else:  # built with arguments: their links alone (no pager, no frames, no header)
            links = super().extract_links(response)

        def url_of(href: str) -> str:
            url = urls.get(href)
            if url is not None:
                return url
            got = self._resolve(join(_browser_href(href)), encoding, page_url)
            if got is None:
                raise ValueError(f"no URL: {href!r}")
            urls[href] = got[0]
            return got[0]

        return links, url_of

    def _fast_links(
        self,
        root: Any,
        page_url: str,
        encoding: str,
        join: Callable[[str], str],
        urls: dict[str, str] | None = None,
    ) -> tuple[list[Link], int]:
        """Scrapy's ``LxmlLinkExtractor.extract_links`` (unique links, no restriction,
        filters by scheme and extension) for the document ``root``; see the class.
        ``join``: ``urljoin`` with the page's base URL (:class:`FolderJoins`).
        ``urls`` gets ``href`` -> URL for every ``href`` read that makes one (a repeated
        ``href`` is not joined again: its URL is already among the links or dropped).
        With the links, the number of link elements read (at most ``max_links``)."""
        out: list[Link] = []
        seen: set[str] = set()
        bad: set[str] = set()  # hrefs that make no URL
        if urls is None:
            urls = {}
        cap, read = self.max_links, 0
        for el in _shown(root, _LINK_TAGS, self._inert_link):
            href = el.get("href")
            if href is None:
                continue
            read += 1
            if cap and read > cap:
                if self.count is not None:
                    self.count("focused/links/capped", max(1, int(root.xpath(_LINK_COUNT)) - cap))
                break
            if href in urls:  # its URL is in seen: a duplicate
                continue
            got = self._href_url(href, join, encoding, page_url)
            if got is None:  # no URL (a port out of range, a broken IPv6 host): counted once
                self._bad_href(href, bad)
                continue
            url, verdict = got
            urls[href] = url
            if url in seen:
                continue
            seen.add(url)
            if verdict:
                if verdict != "-" and self.count is not None:
                    self.count(f"focused/links/ignored/{verdict}")
                continue
            out.append(Link(url, _string(el) or "", nofollow=rel_has_nofollow(el.get("rel"))))
        return out, min(read, cap) if cap else read

    def _inert_link(self, el: Any) -> None:
        """Count a link element inside a ``<template>`` (not followed)."""
        if el.get("href") is not None and self.count is not None:
            self.count("focused/links/ignored/template")

    def _pager_links(
        self,
        root: Any,
        links: list[Link],
        page_url: str,
        encoding: str,
        join: Callable[[str], str],
        *,
        budget: int | None = None,
    ) -> list[Link]:
        """The pages a ``<link rel="next">`` (or ``prev``), a ``<frame src>`` or an
        ``<iframe src>`` names that ``links`` (the page's ``<a>``/``<area>`` links) do
        not: a listing whose further pages are named only in its ``<head>`` (as search
        engines read it), a site whose content pages are shown in frames. Each is
        checked as a link is (scheme, host, path, Scrapy's filters; counted when
        dropped), its text the element's ``title``, and counted in
        ``focused/links/pager`` or ``focused/links/frames``. Other ``<link>`` elements
        (stylesheets, ``alternate`` language copies, ``canonical``) name no page to
        follow, nor does a frame inside ``<noscript>`` (a tag manager's stand-in for its
        script: no content).

        They share the page's cap with its ``<a>``/``<area>``: at most ``budget`` of
        them are read (what ``max_links`` leaves; None: all), and those left unread are
        counted in ``focused/links/capped``. At most ``max_links`` ``<link>``, ``<frame>``
        and ``<iframe>`` elements are looked at (a page of 50,000 stylesheet links cost
        150 ms); past them, every further ``<link>`` with a ``rel`` and an ``href`` and
        every further frame with a ``src`` is counted in ``focused/links/capped``
        (counted by lxml, not read)."""
        out: list[Link] = []
        seen = {link.url for link in links}
        bad: set[str] = set()
        read = unread = looked = candidates = 0
        hidden = _NoscriptFrames(root)
        for el in _shown(root, _PAGER_TAGS):
            looked += 1
            if self.max_links and looked > self.max_links:
                unread += max(0, int(root.xpath(_PAGER_COUNT)) - candidates)
                break
            candidate, href, rel, stat = _pager_target(el)
            candidates += candidate
            if not href or (stat == "focused/links/frames" and hidden.holds(el)):
                continue
            read += 1
            if budget is not None and read > budget:
                unread += 1
                continue
            url = self._new_url(self._href_url(href, join, encoding, page_url), href, seen, bad)
            if url is None:
                continue
            out.append(Link(url, el.get("title") or "", nofollow=rel_has_nofollow(rel)))
            if self.count is not None:
                self.count(stat)
        if unread and self.count is not None:
            self.count("focused/links/capped", unread)
        return out

    def _header_links(
        self, response: TextResponse, links: list[Link], room: int | None = None
    ) -> list[Link]:
        """The pages an HTTP ``Link`` header (RFC 8288) names as the ``next`` or
        ``prev`` page of ``response`` that ``links`` do not: a listing paged that way
        alone, as ``<link rel="next">`` pages one in its ``<head>``. The targets are
        joined to the response's URL (a header knows no ``<base>``), checked as a link
        is, each with its ``title`` as text, counted in ``focused/links/pager``; at most
        ``max_links`` links of the headers are read, and at most ``room`` followed (what
        the page's cap leaves after its other links; the rest counted in
        ``focused/links/capped``). A link with an ``anchor`` naming another resource
        than ``response`` (RFC 8288 section 3.2: "the next page of /other/1") is not this
        page's next page. Other relations (``preload``, ``stylesheet``, ``canonical``,
        ``alternate``) name no page to follow."""
        out: list[Link] = []
        seen = {link.url for link in links}
        bad: set[str] = set()
        for target, params in self._header_values(response):
            rel = params.get("rel", "")
            if not _next_of(response.url, target, params):
                continue
            if room is not None and len(out) >= room:
                if self.count is not None:
                    self.count("focused/links/capped")
                continue
            try:
                joined = urljoin(response.url, target)
            except ValueError:
                got = None
            else:
                got = self._resolve(joined, "utf-8", response.url)
            url = self._new_url(got, target, seen, bad)
            if url is None:
                continue
            out.append(Link(url, params.get("title", ""), nofollow=rel_has_nofollow(rel)))
            if self.count is not None:
                self.count("focused/links/pager")
        return out

    def _header_values(self, response: TextResponse) -> list[tuple[str, dict[str, str]]]:
        """The links of ``response``'s ``Link`` headers (:func:`sanitize.link_header`;
        a header in UTF-8, else latin-1), at most ``max_links`` of them."""
        found: list[tuple[str, dict[str, str]]] = []
        for raw in response.headers.getlist(b"Link"):
            left = self.max_links - len(found) if self.max_links else 0
            if self.max_links and left <= 0:
                break
            try:
                value = raw.decode("utf-8")
            except UnicodeDecodeError:
                value = raw.decode("latin-1")
            found += sanitize.link_header(value, left)
        return found

    def _href_url(
        self, href: str, join: Callable[[str], str], encoding: str, page_url: str
    ) -> tuple[str, str] | None:
        """(link URL, verdict) of ``href`` on the page (:meth:`_resolve`); None when it
        makes no URL."""
        try:
            joined = join(_browser_href(href))
        except ValueError:
            return None
        return self._resolve(joined, encoding, page_url)

    def _new_url(
        self, got: tuple[str, str] | None, href: str, seen: set[str], bad: set[str]
    ) -> str | None:
        """The URL to follow of ``href`` resolved to ``got`` ((URL, verdict) or None),
        or None: ``href`` makes no URL (counted once, :meth:`_bad_href`), the URL is in
        ``seen`` (which it then joins), or its verdict refuses it (counted in
        ``focused/links/ignored/<verdict>``; ``-``: Scrapy's filters, not counted)."""
        if got is None:
            self._bad_href(href, bad)
            return None
        url, verdict = got
        if url in seen:
            return None
        seen.add(url)
        if verdict:
            if verdict != "-" and self.count is not None:
                self.count(f"focused/links/ignored/{verdict}")
            return None
        return url

    def _bad_href(self, href: str, bad: set[str]) -> None:
        """Count ``href``, which makes no URL, in ``focused/links/ignored/bad_url`` unless
        ``bad`` (the page's such hrefs so far) has it."""
        if href not in bad and self.count is not None:
            self.count("focused/links/ignored/bad_url")
        bad.add(href)

    def _resolve(self, joined: str, encoding: str, page_url: str) -> tuple[str, str] | None:
        """(link URL, verdict) of an absolute ``joined`` URL; None when it is bad."""
        key = (joined, encoding)
        try:
            return self._urls[key]
        except KeyError:
            pass
        got: tuple[str, str] | None
        try:
            safe = safe_url_string(joined, encoding=encoding)
        except ValueError:
            got = None
        else:
            url = sanitize.canonical_ip_url(urljoin(page_url, safe))
            path = urlparse(url).path  # parsed once for the two path checks
            problem = sanitize.scheme_problem(url) or self._path_problem(url, path)
            if problem is None:
                problem = "" if self._scrapy_allows(url, path) else "-"
            got = (url, problem)
            if not _HAS_HOST.match(safe):  # the join with the page URL depends on the page
                return got
        return remember(self._urls, key, got, self.CACHE_SIZE)

    def _scrapy_allows(self, url: str, path: str | None = None) -> bool:
        """Scrapy's ``LinkExtractor._link_allowed(Link(url))``. Built with no argument but
        ``deny_extensions``, its only filters are the scheme (``_is_valid_url``) and the
        extension of the path, lower-cased (``url_has_any_extension``: ``any`` of
        ``endswith``), which ``endswith`` of the suffixes' tuple gives in one call."""
        if not self._fast:
            return LinkExtractor._link_allowed(self, Link(url))
        if not _is_valid_url(url):
            return False
        if path is None:
            path = urlparse(url).path
        return not path.lower().endswith(self._deny_suffixes)

    def _capped(
        self, iter_links: Callable[[Any], Iterator[tuple[Any, str, str]]]
    ) -> Callable[[Any], Iterator[tuple[Any, str, str]]]:
        def capped(document: Any) -> Iterator[tuple[Any, str, str]]:
            found = iter_links(document)
            yield from islice(found, self.max_links)
            if next(found, None) is None or self.count is None:
                return
            # the rest counted by lxml (iterating them here cost 0.5 s for 200,000)
            total = int(document.xpath(_LINK_COUNT)) if hasattr(document, "xpath") else 0
            self.count("focused/links/capped", max(1, total - self.max_links))

        return capped

    def _path_problem(self, url: str, path: str | None = None) -> str | None:
        """``repeated_path`` when ``url``'s path (``path``, when already parsed) repeats
        a block of segments more than ``max_path_repeats`` times in a row, else None."""
        if self.max_path_repeats and sanitize.repeated_path(
            urlparse(url).path if path is None else path, self.max_path_repeats
        ):
            return "repeated_path"
        return None

    def _link_allowed(self, link: Link) -> bool:
        problem = sanitize.scheme_problem(link.url) or self._path_problem(link.url)
        if problem is not None:
            if self.count is not None:
                self.count(f"focused/links/ignored/{problem}")
            return False
        return super()._link_allowed(link)


#: Content types of a feed; any other XML type is a feed when its root is rss or feed.
FEED_TYPES = frozenset({"application/rss+xml", "application/atom+xml"})


@dataclass(frozen=True, slots=True)
class Feed:
    """An RSS 2.0 or Atom feed: its title, the text of its items (titles and summaries)
    and its items' links, each with the item's title as its text."""

    title: str
    text: str
    links: list[Link]


def _local(tag: object) -> str:
    return tag.rsplit("}", 1)[-1] if isinstance(tag, str) else ""


def _child_text(element: Any, *names: str) -> str:
    for child in element:
        if _local(child.tag) in names:
            return " ".join("".join(child.itertext()).split())
    return ""


def _atom_href(entry: Any) -> str:
    """The entry's ``rel="alternate"`` link (the default rel), else none."""
    for child in entry:
        if _local(child.tag) == "link" and child.get("rel", "alternate") == "alternate":
            return child.get("href") or ""
    return ""


def read_feed(
    response: TextResponse,
    max_links: int = 0,
    count: Callable[..., Any] | None = None,
) -> Feed | None:
    """The feed ``response`` holds, or None when it is not one (HTML is never a feed).

    A feed is an XML response (Scrapy's :class:`~scrapy.http.XmlResponse`: an XML content
    type) of type ``application/rss+xml`` or ``application/atom+xml``, or whose root is
    ``<rss>`` or ``<feed>``. Its links are the ``<item><link>`` (RSS) or the
    ``<entry><link rel="alternate" href>`` (Atom), joined to the feed's URL, the http(s)
    ones only (the others counted in ``focused/links/ignored/<scheme>``), each once, at
    most ``max_links`` of them (0: all; the rest counted in ``focused/links/capped``).
    """
    if not isinstance(response, XmlResponse):
        return None
    raw_type = response.headers.get(b"Content-Type") or b""
    content_type = raw_type.decode("latin-1").split(";")[0].strip().lower()
    try:
        root = response.selector.root
    except Exception:  # noqa: BLE001 - an XML body lxml cannot parse is no feed
        return None
    kind = _local(getattr(root, "tag", None))
    if kind not in ("rss", "feed") and content_type not in FEED_TYPES:
        return None
    atom = kind == "feed"
    channel = root if atom else next((c for c in root if _local(c.tag) == "channel"), root)
    links: list[Link] = []
    seen: set[str] = set()
    texts: list[str] = []
    unread = 0
    for entry in root.iter():
        if _local(entry.tag) != ("entry" if atom else "item"):
            continue
        title = _child_text(entry, "title")
        texts += [title, _child_text(entry, "summary", "content", "description")]
        href = (_atom_href(entry) if atom else _child_text(entry, "link")).strip()
        if not href:
            continue
        if max_links and len(links) >= max_links:
            unread += 1
            continue
        url = _feed_url(response, href)
        problem = "bad_url" if url is None else sanitize.scheme_problem(url)
        if problem is not None:
            if count is not None:
                count(f"focused/links/ignored/{problem}")
        elif url not in seen:
            seen.add(url)
            links.append(Link(url, title))
    if unread and count is not None:
        count("focused/links/capped", unread)
    text = " ".join(t for t in texts if t)
    return Feed(_child_text(channel, "title"), text, links)


def _feed_url(response: TextResponse, href: str) -> str | None:
    try:
        return sanitize.canonical_ip_url(
            safe_url_string(urljoin(response.url, href), response.encoding)
        )
    except ValueError:
        return None


#: the Public Suffix List snapshot tldextract ships, never fetched (``suffix_list_urls``
#: empty: no download, no cache folder)
_OFFLINE_SUFFIXES = TLDExtract(
    include_psl_private_domains=True, suffix_list_urls=(), cache_dir=None
)


class FocusedCookiesMiddleware(CookiesMiddleware):
    """Scrapy's cookies middleware (on with ``COOKIES_ENABLED``, off in this project),
    except that whether a cookie's domain is a public suffix is read from the suffix
    list tldextract ships. Scrapy's own asks tldextract, which downloads the Public
    Suffix List from publicsuffix.org or GitHub on the first cookie: a connection the
    address filter never sees, and two tracebacks when there is no network."""

    def _process_cookies(self, cookies: Any, *, jar: Any, request: Any) -> None:
        for cookie in cookies:
            cookie_domain = cookie.domain.removeprefix(".")
            hostname = urlparse_cached(request).hostname
            if hostname is None:
                continue
            request_domain = hostname.lower()
            if cookie_domain and not _OFFLINE_SUFFIXES(cookie_domain).domain:
                if cookie_domain != request_domain:
                    continue  # a cookie for a whole public suffix: refused
                cookie.domain = request_domain
            jar.set_cookie_if_ok(cookie, request)
