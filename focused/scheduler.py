"""The focused crawler's Scrapy scheduler: the four queues of Liu, Xia & Xu (2010) in one
place (waiting, in flight, done, error)."""

from __future__ import annotations

import dataclasses
import hashlib
import heapq
import logging
import os
import pickle
from collections.abc import Callable, Sequence
from pathlib import Path
from time import monotonic
from typing import TYPE_CHECKING, Any, NamedTuple
from urllib.parse import urlsplit

from scrapy import Request, signals
from scrapy.core.scheduler import BaseScheduler
from scrapy.resolver import dnscache
from scrapy.utils.asyncio import call_later
from scrapy.utils.httpobj import urlparse_cached
from scrapy.utils.job import job_dir
from scrapy.utils.request import fingerprint as request_fingerprint
from scrapy.utils.request import request_from_dict

from focused import signals as focused_signals
from focused.defaults import get
from focused.downloader import DrawnDelaySlot
from focused.frontier.hostaware import DEFAULT_SCAN, HostCheck
from focused.frontier.journal import (
    DONE,
    ERROR,
    IN_FLIGHT,
    WAITING,
    Journal,
    JournalError,
    Row,
    store_holds,
    stored_urls,
)
from focused.frontier.memory import (
    MAX_EVIDENCE,
    META_EVIDENCE,
    Entry,
    Frontier,
    MemoryFrontier,
    Rescorer,
)
from focused.frontier.rescoring import RescoreSchedule
from focused.frontier.seen import SeenSet, url_fingerprint
from focused.habits import ignored_by_scheduler
from focused.meta import (
    ANCHOR_RELEVANCE,
    CHROME,
    CHROME_PRIORITY,
    DEPTH,
    HOPS,
    LINK_VALUE,
    PARENT_URL,
    M,
)
from focused.output.atomic import write_bytes
from focused.output.record import read_record
from focused.output.store import DB_NAME as PAGES_DB
from focused.ranking.annealing import Annealer
from focused.ranking.modelstate import dumps_state, loads_state
from focused.robots import RobotsPostponed
from focused.stop import stop_crawl, then_for
from focused.strategies import strategy_class
from focused.web.sanitize import WIRE_LENGTH, partial_content

if TYPE_CHECKING:
    from typing import Self

    from scrapy.core.downloader import Downloader
    from scrapy.crawler import Crawler
    from scrapy.http import Response
    from scrapy.spiders import Spider
    from scrapy.statscollectors import StatsCollector

logger = logging.getLogger(__name__)

#: Entry flag bits
DONT_FILTER = 1
REFERER = 2  # the request had exactly ``Referer: <parent_url>``
#: meta keys packed into the compact entry (all others go to ``extra``)
PACKED_META = frozenset({DEPTH, LINK_VALUE, M, HOPS, ANCHOR_RELEVANCE, PARENT_URL, META_EVIDENCE})
#: Entry flag bits: a packed meta key the request did not have, or whose value is not
#: packed because it would not come back exactly (then it is kept in ``extra`` as given).
#: An entry journaled before these bits existed has none set: every key present, as then.
_ABSENT = (
    (DEPTH, 1 << 2),
    (LINK_VALUE, 1 << 3),
    (M, 1 << 4),
    (HOPS, 1 << 5),
    (ANCHOR_RELEVANCE, 1 << 6),
    (PARENT_URL, 1 << 7),
)
_ALL_ABSENT = sum(bit for _, bit in _ABSENT)
_NO_DEPTH, _NO_VALUE, _NO_M, _NO_HOPS, _NO_ANCHOR, _NO_PARENT = (bit for _, bit in _ABSENT)
_U16 = 0xFFFF  # depth and hops are packed in 16 bits
#: meta keys a download leaves behind that must not follow a request back to the queue
#: (``download_slot`` only when the downloader set it: see :func:`_slot_left_behind`)
TRANSIENT_META = frozenset({"download_slot", "download_latency"})
#: the learnt model's file under JOBDIR (``learning``)
MODEL_NAME = "learning-model.npz"
#: meta key of a ``dont_filter`` copy of a waiting URL: ``(fingerprint of the copy, URL)``
COPY_META = "focused_copy"
#: what became of the items of a page being scraped: one went through the pipelines (or
#: failed in one, or the store did not store it): the page waits for the store's word
_HELD = 1
#: a pipeline dropped one (``DropItem``, not :class:`focused.signals.NotStored`)
_DROPPED = 2


def _slot_left_behind(request: Request) -> bool:
    """Whether ``meta["download_slot"]`` is the one Scrapy's downloader set when it fetched
    the request (or the URL it was redirected from): the slot it would compute again, the
    host name (``CONCURRENT_REQUESTS_PER_IP``'s IP slots are not told apart). A slot the
    user chose is any other value, or one on a request never downloaded."""
    meta = request.meta
    slot = meta.get("download_slot")
    if slot is None:
        return False
    redirects = meta.get("redirect_urls") or ()
    if not (redirects or "download_latency" in meta or "retry_times" in meta):
        return False  # never downloaded: the user's
    if slot == (urlparse_cached(request).hostname or ""):
        return True
    return any(slot == (urlparse_cached(Request(u)).hostname or "") for u in redirects)


def _without_transient(request: Request) -> dict[str, Any]:
    """``request.meta`` without what its download left behind."""
    drop_slot = _slot_left_behind(request)
    return {
        k: v
        for k, v in request.meta.items()
        if k != "download_latency" and (k != "download_slot" or not drop_slot)
    }


class _Packed(NamedTuple):
    """The packed meta values of a compact entry, and the :data:`_ABSENT` bits of the keys
    not packed (missing, or a value that would not come back exactly: 0 / ``""`` here)."""

    depth: int
    hops: int
    value: Any  # the float link value, or what was given in its place (``_NO_VALUE`` set)
    m: float
    anchor: float
    parent: str
    evidence: bytes | None  # None: not packed (missing, empty, too long or not bytes)
    absent: int


def _pack_meta(meta: dict[str, Any]) -> _Packed:
    """The values of ``meta`` packed only where they come back exactly."""
    absent = 0
    depth, hops = meta.get(DEPTH), meta.get(HOPS)
    value, m, anchor = meta.get(LINK_VALUE), meta.get(M), meta.get(ANCHOR_RELEVANCE)
    parent, evidence = meta.get(PARENT_URL), meta.get(META_EVIDENCE)
    if type(depth) is not int or not 0 <= depth <= _U16:
        absent |= _NO_DEPTH
        depth = 0
    if type(hops) is not int or not 0 <= hops <= _U16:
        absent |= _NO_HOPS
        hops = 0
    if not isinstance(value, float):
        absent |= _NO_VALUE
    if not isinstance(m, float):
        absent |= _NO_M
        m = 0.0
    if not isinstance(anchor, float):
        absent |= _NO_ANCHOR
        anchor = 0.0
    if type(parent) is not str:
        absent |= _NO_PARENT
        parent = ""
    if type(evidence) is not bytes or not 0 < len(evidence) <= MAX_EVIDENCE:
        evidence = None
    return _Packed(depth, hops, value, m, anchor, parent, evidence, absent)


def _unpacked_meta(request: Request, packed: _Packed) -> dict[str, Any]:
    """The meta of ``request`` a compact entry keeps in ``extra`` as given: every key not
    packed, a packed key whose value was not, and no slot or latency its download left."""
    meta = request.meta
    rest = {
        k: v
        for k, v in meta.items()
        if k not in PACKED_META
        and k not in TRANSIENT_META
        or k == "download_slot"
        and not _slot_left_behind(request)
    }
    for key, bit in _ABSENT:
        if packed.absent & bit and key in meta:
            rest[key] = meta[key]
    if META_EVIDENCE in meta and packed.evidence is None:
        rest[META_EVIDENCE] = meta[META_EVIDENCE]
    return rest


def _whole_entry(request: Request, fp: int, flags: int) -> Entry:
    """An entry that keeps ``request`` whole (one a compact entry would not rebuild
    exactly), less what its download left behind."""
    meta = request.meta
    if "download_latency" in meta or "download_slot" in meta:
        request = request.replace(meta=_without_transient(request))
    return Entry(
        url=request.url,
        fp=fp,
        priority=request.priority,
        value=_as_float(meta.get(LINK_VALUE)),
        flags=flags | _ALL_ABSENT,
        extra={"request": request},
    )


def _as_float(value: Any) -> float:
    """A link value for ordering (0.0 when it is none or not a number)."""
    try:
        return float(value or 0.0)
    except (TypeError, ValueError):
        return 0.0


def partial_answer(response: Response, request: Request) -> bool:
    """Whether ``response`` is a part of its page, not the page
    (:func:`~focused.web.sanitize.partial_content`)."""
    return partial_content(
        response.status,
        b"Range" in request.headers,
        response.headers.get(b"Content-Range"),
        request.meta.get(WIRE_LENGTH, len(response.body)),  # as sent, before decoding
    )


class DownloadFailureMiddleware:
    """Downloader middleware: tells the scheduler about every request whose download
    failed for good (:data:`focused.signals.download_failed`).

    Its ``process_exception`` sees each exception of a download and of the other
    downloader middlewares' ``process_request`` (an ``IgnoreRequest`` of robots.txt, the
    offsite filter or the per-host cap), whatever the request's callback and errback.
    Give it the lowest order (``DOWNLOADER_MIDDLEWARES``, the project's settings use 5):
    Scrapy calls ``process_exception`` from the highest order down and stops at the first
    that returns a request or response, so a failure that ``RetryMiddleware`` (550) retries
    never reaches it; one it gives up on does. An exception raised by a downloader
    middleware's ``process_response`` does not go through ``process_exception`` and is not
    seen; an HTTP error status is (``response_received``, status >= 400).
    """

    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler)

    def process_exception(self, request: Request, exception: BaseException) -> None:
        self.crawler.signals.send_catch_log(
            focused_signals.download_failed, request=request, exception=exception
        )


def wake_engine(crawler: Any) -> None:
    """Make the engine ask the scheduler for a request again (its next call)."""
    try:
        engine = getattr(crawler, "engine", None)
    except RuntimeError:
        return
    nextcall = getattr(getattr(engine, "_slot", None), "nextcall", None)
    if nextcall is not None:
        nextcall.schedule()


class HostGate:
    """Which download slots (hosts) can take a request now: the Scrapy side of the
    host-aware pick (:mod:`focused.frontier.hostaware`).

    Read from the downloader (``crawler.engine.downloader``): a slot's ``concurrency``,
    ``delay`` (``DOWNLOAD_DELAY``, AutoThrottle's, a robots.txt ``Crawl-delay`` or a
    ``Retry-After`` pause that :mod:`focused.politeness` set), ``lastseen`` (the start of
    its last download) and ``transferring``, and ``downloader.active`` (every request in
    the downloader, before its slot too: in the middlewares, waiting for robots.txt). A
    host can take one now when it has fewer than ``concurrency`` requests in the
    downloader and, with a delay, the new request would start within :attr:`LEAD`
    seconds (the slot starts one request per delay, from its last start; with the
    project's :class:`focused.downloader.FocusedDownloader`, per its own random draw of
    that delay, the one the downloader will apply). A slot that
    does not exist yet has the settings' concurrency and delay. :meth:`blocked` tells a
    *full* host (all its concurrency taken, no delay in the way: a request handed to it
    waits only for a transfer to end, the scheduler still gives it one when no host is
    free) from a *delayed* one (never given one until its delay runs out).

    Only hosts this scheduler handed a request to recently (or with requests in the
    downloader) can be busy, so :meth:`blocked` looks at those only (a handful: the
    requests in flight plus the hosts fetched within their delay). When a pick finds no
    free host, :meth:`wake_later` makes the engine ask again when the first host whose
    delay holds it back is free (a finished download wakes the engine anyway), so a
    crawl that waits does not spin.
    """

    #: a request may be handed out this many seconds before its slot can start it
    LEAD = 0.05

    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        self.recent: set[str] = set()
        self._hostnames: dict[str, str] = {}
        self._timer: Any = None
        self._wake_at = float("inf")
        #: earliest time a host blocked by its delay alone is free (from :meth:`blocked`)
        self.free_at = float("inf")
        #: picks that found no free host while URLs waited
        self.waits = 0

    def downloader(self) -> Downloader | None:
        try:
            engine = getattr(self.crawler, "engine", None)
        except RuntimeError:  # Scrapy 2.19: no engine yet
            return None
        return getattr(engine, "downloader", None)

    def handed_out(self, request: Request) -> None:
        """``request`` goes to the downloader: its host may be busy from now on."""
        d = self.downloader()
        if d is not None:
            self.recent.add(d.get_slot_key(request))

    def wait(self, d: Downloader, key: str, n: int, now: float) -> float | None:
        """Seconds until the slot ``key`` (with ``n`` requests in the downloader) can take
        one more (0: now) when its delay holds it back; ``None`` when it is full (all its
        ``concurrency`` taken, no delay in the way: a finished download frees it)."""
        slot = d.slots.get(key)
        if slot is None:
            per_slot = d.per_slot_settings.get(key, {})
            conc = int(per_slot.get("concurrency", d.ip_concurrency or d.domain_concurrency))
            delay = float(per_slot.get("delay", getattr(d, "_delay", 0.0)))
            lastseen, transferring = 0.0, 0
        else:
            conc, delay = slot.concurrency, slot.delay
            lastseen, transferring = slot.lastseen, len(slot.transferring)
        if delay > 0:
            # the slot's own draw of its next gap (focused.downloader), else the delay
            first = slot.next_delay() if isinstance(slot, DrawnDelaySlot) else delay
            pending = max(0, n - transferring)  # each starts one delay after the previous
            start = max(lastseen + first, now) + pending * delay
            if start - now > self.LEAD:
                return start - now - self.LEAD
        if conc > 0 and n >= conc:
            return None
        return 0.0

    def blocked(self) -> tuple[set[str], set[str]]:
        """``(busy, delayed)``: the slot keys that cannot take a request now, and those of
        them that their delay holds back (the others are full); sets :attr:`free_at`."""
        self.free_at = float("inf")
        d = self.downloader()
        if d is None or not (self.recent or d.active):
            return set(), set()
        counts: dict[str, int] = {}
        for request in d.active:
            key = d.get_slot_key(request)
            counts[key] = counts.get(key, 0) + 1
        now = monotonic()
        busy: set[str] = set()
        delayed: set[str] = set()
        for key in self.recent.union(counts):
            n = counts.get(key, 0)
            wait = self.wait(d, key, n, now)
            if wait is None:
                busy.add(key)
            elif wait > 0:
                busy.add(key)
                delayed.add(key)
                if not n:
                    self.free_at = min(self.free_at, now + wait)
            elif not n:
                self.recent.discard(key)  # free, nothing in the downloader: forget it
        return busy, delayed

    def check(self, blocked: set[str]) -> HostCheck:
        """The frontier's predicate: the entry's slot key is not in ``blocked``."""
        d = self.downloader()
        hostnames = self._hostnames
        by_ip = bool(d is not None and d.ip_concurrency)

        def available(prefix: str, extra: Any) -> bool:
            if extra:
                key = _own_slot_key(d, extra)
                if key is not None:
                    return key not in blocked
            host = hostnames.get(prefix)
            if host is None:
                host = hostnames[prefix] = (urlsplit(prefix).hostname or "") if prefix else ""
            if by_ip:
                host = dnscache.get(host, host)
            return host not in blocked

        return available

    def key(self, blocked: set[str]) -> frozenset[str] | None:
        """What names :meth:`check` of ``blocked`` for the frontier's memo of empty picks:
        the set itself, or ``None`` (no memo) when slots are per IP
        (``CONCURRENT_REQUESTS_PER_IP``): then the answer also depends on Scrapy's DNS
        cache, which fills and forgets over time."""
        d = self.downloader()
        if d is not None and d.ip_concurrency:
            return None
        return frozenset(blocked)

    def wake_later(self) -> None:
        """No free host: make the engine ask again once the first delay runs out."""
        self.waits += 1
        at = self.free_at
        if at == float("inf") or at >= self._wake_at:
            return  # a finished download (or the timer set already) wakes the engine
        if self._timer is not None:
            self._timer.cancel()
        self._wake_at = at
        self._timer = call_later(max(0.0, at - monotonic()), self._wake)

    def _wake(self) -> None:
        self._timer = None
        self._wake_at = float("inf")
        wake_engine(self.crawler)

    def close(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None


def _own_slot_key(d: Downloader | None, extra: Any) -> str | None:
    """The download slot an entry's kept request or meta names (``None``: its host's)."""
    if not isinstance(extra, dict):
        return None
    whole = extra.get("request")
    if whole is not None:
        return d.get_slot_key(whole) if d is not None else None
    meta = extra.get("meta")
    slot = meta.get("download_slot") if isinstance(meta, dict) else None
    return slot if isinstance(slot, str) else None


class FocusedScheduler(BaseScheduler):
    """Frontier, seen-URL set and the waiting / in-flight / done / error queues of the
    crawler of Liu, Xia & Xu (2010).

    Replaces Scrapy's scheduler (``SCHEDULER = "focused.scheduler.FocusedScheduler"``).
    Requests are stored as compact :class:`~focused.frontier.memory.Entry` records (URL,
    priority and the meta keys of :mod:`focused.meta`: ``depth``, ``focused_value``,
    ``focused_m``, ``focused_hops``, ``focused_anchor_relevance``, ``focused_parent_url``;
    any other meta in ``extra``) and rebuilt as a ``scrapy.Request`` on
    the way out, with the spider's default callback. Order: ``priority`` first, then
    first-found first; with an annealing strategy (``FOCUSED_STRATEGY = "annealing"``)
    the pick is the simulated-annealing choice among the top ``FOCUSED_SA_K`` (He, Cheng &
    Cai 2009, :mod:`focused.ranking.annealing`). A URL found again with a higher priority
    while it waits is promoted, never queued twice; any other URL seen before is dropped.
    ``DUPEFILTER_CLASS`` is not used (a changed one is named in a WARNING at start, with
    Scrapy's queue settings: :mod:`focused.habits`).

    ``dont_filter``: a request for a URL that is in flight is let through only with
    ``dont_filter`` (a retry: the URL goes back to waiting); for a URL done in this run
    ``dont_filter`` queues it again, but never for one done in an earlier run of the same
    ``JOBDIR`` (no page is fetched twice across a pause/resume).

    ``dont_filter`` requests for a URL that waits are queued as a copy of their own (meta
    ``focused_copy``), as Scrapy's scheduler would queue them twice.

    Promotion changes the priority of the waiting request, not the request: a waiting
    request kept whole (see below), or promoted by one that is not plain, keeps its
    callback, errback, ``cb_kwargs``, meta, headers and everything else and only moves
    up. Between two plain requests (the spider's default callback, nothing of their own)
    the better one's packed link state comes with its priority (link value, ``m``,
    ``hops``, anchor relevance, parent URL: the state the strategy computed it from).

    Requests that are not plain (a ``Request`` subclass, a callback other than the
    spider's ``parse``, an errback, ``cb_kwargs``, ``flags``, cookies, an encoding other
    than UTF-8, a method other than GET, a body, headers other than ``Referer``) are
    kept whole in the entry's ``extra``; with ``JOBDIR`` they are journaled with
    ``Request.to_dict(spider=...)``, so a callback or errback must be a spider method
    (an unserialisable one is lost on resume: stat ``focused/scheduler/unserializable``).
    A plain request's packed meta keys come back as given: a value that would not (a
    ``depth`` or ``hops`` that is not an int in 0..65535, a link value, ``m`` or anchor
    relevance that is not a float, a parent URL that is not a str) is kept aside as
    given, and a key the request did not have is not added. The ``download_slot`` the
    downloader leaves in meta is dropped (:func:`_slot_left_behind`), a user's is kept.

    Errors: :class:`DownloadFailureMiddleware` (in ``DOWNLOADER_MIDDLEWARES`` at the lowest
    order) sends :data:`focused.signals.download_failed` for every request whose download
    failed for good, whatever its callback and errback; the scheduler records it in the
    error queue (journaled, so it is not fetched again after a resume). Until the run has
    had its first response (a status below 500, robots.txt included), its failures (and
    5xx answers) are journaled when that response comes: a run that no host answers (a
    resume started offline) does not spend the journal's waiting links as errors, they
    stay to be fetched by the next resume. That is done once: the failures of a second
    such run in a row are journaled (links to hosts that are gone for good do not come
    back for ever). A request held back because its host's robots.txt is unreachable
    (:class:`focused.robots.RobotsPostponed`) is no failure: it waits (journaled as
    waiting) until robots.txt is fetched again, and keeps the crawl open meanwhile. No
    errback of the scheduler's is put in a request. A response with status >= 400 also counts as an
    error, and so does a 206 that is a piece of its page (:func:`partial_answer`), left in flight
    in the journal (a resume fetches it again); a redirect counts the redirecting URL as done.

    ``JOBDIR``: every change is journaled in ``JOBDIR/frontier.sqlite3`` (SQLite, WAL;
    :mod:`focused.frontier.journal`) and committed on each ``next_request``, at each
    :data:`focused.signals.frontier_checkpoint` (the page store sends it before it
    commits a page) and at close. A crawl started again with the same ``JOBDIR`` gets
    the same frontier, seen set and annealing state; after ``kill -9`` the requests that
    were in flight are queued again unless ``FOCUSED_OUTPUT_DIR/pages.sqlite3`` holds
    their URL. A fetched page is journaled as done only once it is safe. With a page
    store (one that sent :data:`focused.signals.page_store_opened`, as
    :class:`focused.pipelines.PageStorePipeline` does): when the store says, with
    :data:`focused.signals.pages_stored`, that it committed the page's row (the page's
    links, yielded before its item, were journaled and committed at the
    ``frontier_checkpoint`` before that commit). Without one: once its item went through
    the pipelines. A page the spider skips (:data:`focused.signals.page_skipped`) is done
    at once; one that no item of went on to the store (none came: a response Scrapy
    ignored, a callback that yielded none; or a pipeline dropped it on purpose) is done
    once the scraper is through with it (:meth:`_scraped`); a callback that failed
    leaves it in flight (a resume fetches it again). Until then its row says "in
    flight", which a resume checks against the page store; with a page store that is so
    even after a clean close (a page it failed to store, or dropped once it stopped:
    :mod:`focused.stop`). A page the store confirmed
    is journaled done *as stored*: when a resume's page store does not hold it (the
    output folder was removed, ``pages.sqlite3`` is an older copy), it waits again and is
    fetched again (:meth:`_requeue_unstored`); a URL done without being stored (a
    redirect, a page the spider skipped) stays done. A journal that cannot be
    written (a full disk) stops the crawl with one line, and the ``frontier_checkpoint``
    handler then returns the error so that the store commits nothing more.

    ``FOCUSED_FRONTIER = "redis"`` is resolved by the settings, not here:
    :class:`focused.distributed.addon.FrontierAddon` (in the project's ``ADDONS``) sets
    ``SCHEDULER`` to :class:`focused.distributed.scheduler.RedisScheduler` (this scheduler
    on a frontier shared in Redis); built directly with ``"redis"``, this one refuses.

    Settings: ``FOCUSED_STRATEGY``, ``FOCUSED_SA_T0``, ``FOCUSED_SA_ALPHA``,
    ``FOCUSED_SA_T_MIN``, ``FOCUSED_SA_K``, ``FOCUSED_SEED``, ``FOCUSED_FRONTIER``,
    ``FOCUSED_OUTPUT_DIR``, ``FOCUSED_HOST_AWARE``, ``FOCUSED_HOST_SCAN``,
    ``FOCUSED_WAIT_FOR_LINKS``, ``JOBDIR``. With ``FOCUSED_WAIT_FOR_LINKS`` a fetched page
    holds its place in ``CONCURRENT_REQUESTS`` until its links are queued
    (:meth:`_links_pending`).
    With ``FOCUSED_HOST_AWARE`` the pick is the best (or the annealing choice) among the
    hosts whose download slot can take a request now (:class:`HostGate`).
    ``FOCUSED_WASTE_SHAPE_RECHECK``: an entry that comes up whose URL shape was learnt
    wasteful after its link was found is re-queued at the bottom and the pick is made
    again (:meth:`_requeue_wasteful`). Who judges is handed over explicitly, at open:
    the scheduler sends :data:`focused.signals.frontier_waste_check` and re-checks with
    the ``str -> bool`` a handler returns. The focused spider connects one in its
    ``from_crawler`` (its URL shapes, :mod:`focused.web.urlshape`); a spider of your own
    that connects none (or whose handler returns ``None``) gets no re-check, whatever
    methods it has. The Redis frontier's scheduler re-checks the same way
    (:class:`focused.distributed.scheduler.RedisScheduler`).
    Stats: ``focused/queue/waiting``,
    ``focused/queue/in_flight``, ``focused/queue/done``, ``focused/queue/error``,
    ``focused/frontier/promoted``, ``focused/dupefilter/filtered``,
    ``focused/annealing/accepted_worse``, ``focused/annealing/temperature``,
    ``focused/scheduler/requeued`` (retries), ``focused/scheduler/hosts_busy`` (picks that
    found no free host), ``focused/scheduler/waste_requeued`` (entries re-queued at the
    bottom when they came up), ``scheduler/enqueued``, ``scheduler/dequeued``.
    """

    def __init__(
        self,
        *,
        jobdir: str | None = None,
        anneal: bool = False,
        t0: float = 0.05,
        alpha: float = 0.995,
        t_min: float = 1e-4,
        k: int = 8,
        seed: int = 42,
        page_store: str | None = None,
        stats: StatsCollector | None = None,
        crawler: Crawler | None = None,
        frontier: Frontier | None = None,
        seen: SeenSet | None = None,
        rescore_every: int = 0,
        rescore_budget: int = 0,
        host_aware: bool = False,
        host_scan: int = DEFAULT_SCAN,
        model_save_every: int = 100,
        waste_recheck: bool = False,
        wait_for_links: bool = True,
        dupefilter_debug: bool = False,
        scheduler_debug: bool = False,
    ) -> None:
        self.jobdir = jobdir
        #: ``DUPEFILTER_DEBUG``: every filtered duplicate logged (else the first only)
        self.dupefilter_debug = dupefilter_debug
        self._duplicate_logged = False
        #: ``SCHEDULER_DEBUG``: every request that cannot be journaled logged (else the
        #: first only)
        self.scheduler_debug = scheduler_debug
        #: learnt pages between two saves of the strategy's model under JOBDIR (0: at
        #: the close only)
        self.model_save_every = max(0, int(model_save_every))
        self._model_learnt = 0  # learnt pages since the model was last saved
        self.anneal = anneal
        self.annealer: Annealer | None = Annealer(t0, alpha, t_min, k, seed) if anneal else None
        self.page_store = page_store
        #: the page store's database existed when this scheduler opened (a resume whose
        #: output folder was removed: every page journaled as stored is fetched again)
        self._store_was_there = True
        #: a page store is open (it sent ``page_store_opened``): a fetched page is done
        #: when the store commits it (``pages_stored``), not when its item is through
        self.waits_for_store = False
        self.stats = stats
        self.crawler = crawler
        self.frontier: Frontier = frontier if frontier is not None else MemoryFrontier()
        self.seen = seen if seen is not None else SeenSet()
        self.journal: Journal | None = None
        self.spider: Spider | None = None
        self.in_flight: set[int] = set()
        self._whole_waiting: set[int] = set()  # waiting entries that keep their request whole
        #: fetched, not journaled as done yet: URL fingerprint of the response -> request's
        self._fetched: dict[int, int] = {}
        #: fetched pages whose response the scraper still handles: URL fingerprint of the
        #: response -> (its request, what became of its items: :data:`_HELD`, :data:`_DROPPED`)
        self._scraping: dict[int, tuple[Request, int]] = {}
        self.done = 0
        self.errors = 0
        #: a response (status < 500) came in this run; before it, failures wait in
        #: ``_unanswered`` to be journaled (see the class doc), unless the journal's
        #: previous run was answered by no host either (``_defer_failures`` False)
        self._answered = False
        self._unanswered: list[int] = []
        self._defer_failures = True
        self.filtered = 0
        self.requeued = 0
        self.enqueued = 0
        self.dequeued = 0
        self._saved_picks = -1
        self._warned_unserializable = False
        self.rescoring = RescoreSchedule(rescore_every, rescore_budget)
        #: the hosts that can take a request now (``FOCUSED_HOST_AWARE``; needs a crawler)
        self.gate: HostGate | None = HostGate(crawler) if host_aware and crawler else None
        self.host_scan = max(1, int(host_scan))
        #: ``FOCUSED_WASTE_SHAPE_RECHECK``: re-check an entry when it comes up, with the
        #: predicate a ``frontier_waste_check`` handler returned at :meth:`open`
        self.waste_recheck = waste_recheck
        self.wait_for_links = wait_for_links
        #: the requests (by id) of pages being scraped whose links are queued already
        self._links_in: set[int] = set()
        self._held_back = False  # a pick returned None while links were pending
        self._wasteful: Callable[[str], bool] | None = None
        #: entries re-queued at the bottom when they came up (:meth:`_requeue_wasteful`)
        self.waste_requeued = 0
        self._annealer_before: tuple[float, int, int] | None = None
        #: URLs whose host's robots.txt is unreachable, waiting until it is fetched again:
        #: a heap of (time.monotonic() to queue it again, order, entry)
        self._postponed: list[tuple[float, int, Entry]] = []
        self._postponed_timer: Any = None

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        s = crawler.settings
        kind = str(get(s, "FOCUSED_FRONTIER")).strip()
        if kind == "redis":  # a subclass of this one would crawl from memory: refuse
            raise ValueError(
                "FOCUSED_FRONTIER = 'redis' needs SCHEDULER ="
                " 'focused.distributed.scheduler.RedisScheduler' (the project's ADDONS set it)"
            )
        if kind != "memory":
            raise ValueError(f"FOCUSED_FRONTIER must be 'memory' or 'redis', got {kind!r}")
        warn_ignored_settings(s)
        name = str(get(s, "FOCUSED_STRATEGY")).strip()
        return cls(
            jobdir=job_dir(s),
            anneal=strategy_class(name).anneal,
            t0=get(s, "FOCUSED_SA_T0"),
            alpha=get(s, "FOCUSED_SA_ALPHA"),
            t_min=get(s, "FOCUSED_SA_T_MIN"),
            k=get(s, "FOCUSED_SA_K"),
            seed=get(s, "FOCUSED_SEED"),
            page_store=str(Path(get(s, "FOCUSED_OUTPUT_DIR")) / PAGES_DB),
            stats=crawler.stats,
            crawler=crawler,
            rescore_every=get(s, "FOCUSED_RESCORE_EVERY"),
            rescore_budget=get(s, "FOCUSED_RESCORE_BUDGET"),
            host_aware=get(s, "FOCUSED_HOST_AWARE"),
            host_scan=get(s, "FOCUSED_HOST_SCAN"),
            model_save_every=get(s, "FOCUSED_MODEL_SAVE_EVERY"),
            waste_recheck=get(s, "FOCUSED_WASTE_SHAPE_RECHECK"),
            wait_for_links=get(s, "FOCUSED_WAIT_FOR_LINKS"),
            dupefilter_debug=s.getbool("DUPEFILTER_DEBUG"),
            scheduler_debug=s.getbool("SCHEDULER_DEBUG"),
        )

    # --- life cycle -----------------------------------------------------------------
    def open(self, spider: Spider) -> None:
        self.spider = spider
        if self.jobdir:
            # before the page store opens (and creates its database): was it there?
            self._store_was_there = bool(self.page_store) and Path(self.page_store).exists()
            self.journal = Journal.in_jobdir(self.jobdir)
            self._restore()
            self._load_model()
        if self.crawler is not None:
            for handler, signal in self._signals():
                self.crawler.signals.connect(handler, signal=signal)
            self._check_failure_middleware()
            ignores = getattr(self.frontier, "ignores", None)
            self.crawler.signals.send_catch_log(
                focused_signals.frontier_opened,
                drop_done=self.drop_done,
                drop_waiting=self.drop_waiting if callable(ignores) else None,
            )
        self._wasteful = self._waste_check()
        self._update_stats()

    def _waste_check(self) -> Callable[[str], bool] | None:
        """With ``FOCUSED_WASTE_SHAPE_RECHECK``, the re-check of entries that come up: the
        predicates the :data:`focused.signals.frontier_waste_check` handlers return (a URL
        is wasteful when one says so); ``None`` when off, without a crawler, or when no
        handler returns one."""
        if not self.waste_recheck or self.crawler is None:
            return None
        replies = self.crawler.signals.send_catch_log(focused_signals.frontier_waste_check)
        checks: list[Callable[[str], bool]] = [r for _, r in replies if callable(r)]
        if len(checks) <= 1:
            return checks[0] if checks else None
        return lambda url: any(check(url) for check in checks)

    def _check_failure_middleware(self) -> None:
        """Warn when no :class:`DownloadFailureMiddleware` reports download failures."""
        try:
            engine = getattr(self.crawler, "engine", None)
        except RuntimeError:  # Scrapy 2.19: "not set yet", no crawl started
            engine = None
        manager = getattr(getattr(engine, "downloader", None), "middleware", None)
        if manager is None:  # no engine (a scheduler used on its own)
            return
        if not any(isinstance(mw, DownloadFailureMiddleware) for mw in manager.middlewares):
            logger.warning(
                "focused: %s is not in DOWNLOADER_MIDDLEWARES: failed downloads stay in"
                " flight (and are fetched again after a resume)",
                f"{DownloadFailureMiddleware.__module__}.{DownloadFailureMiddleware.__name__}",
            )

    def close(self, reason: str) -> None:
        if self.gate is not None:
            self.gate.close()
        if self._postponed_timer is not None:
            self._postponed_timer.cancel()
            self._postponed_timer = None
        if self.crawler is not None:
            for handler, signal in self._signals():
                self.crawler.signals.disconnect(handler, signal=signal)
        if self.journal is not None:
            # A graceful close comes after the engine finished every page and the page
            # store committed its last rows (Scrapy closes the item pipelines before the
            # scheduler). Without a page store every fetched page is done; with one, a
            # page it did not say it stored (it failed, or the crawl stopped first) stays
            # in flight: a resume fetches it again unless the store holds it.
            self._scraped()
            if not self.waits_for_store:
                for fp in self._fetched.values():
                    self.journal.set_state(fp, DONE)
            self._fetched.clear()
            self._scraping.clear()
            self._save_annealer()
            self._save_model()
            kept = len(self._unanswered)  # no host answered this run: see the class doc
            self.journal.put_meta("unanswered", b"1" if kept else b"0")
            # the journal's own count: pages fetched but not stored stay in flight there
            in_flight = self.journal.counts()[IN_FLIGHT]
            try:
                self.journal.close()
            except JournalError as exc:
                self._journal_failed(exc)
            self.journal = None
            logger.info(
                "focused: frontier saved in %s (%d waiting, %d in flight%s)",
                self.jobdir,
                len(self.frontier) + len(self._postponed),
                in_flight,
                f"; {kept} failed with no host answering, fetched again by the next run"
                if kept
                else "",
            )
        self._update_stats()

    def has_pending_requests(self) -> bool:
        if self._scraping:
            self._scraped()
        if self.in_flight and not len(self.frontier):
            self._settle()  # the crawl may be over: no URL stays "in flight" for ever
        # URLs waiting for their host's robots.txt keep the crawl open
        return len(self.frontier) > 0 or bool(self._postponed)

    def _engine(self) -> Any:
        """The crawler's engine, ``None`` before it exists (reading ``crawler.engine``
        then raises ``RuntimeError`` in Scrapy 2.19)."""
        try:
            return getattr(self.crawler, "engine", None)
        except RuntimeError:
            return None

    def _links_pending(self) -> bool:
        """With ``FOCUSED_WAIT_FOR_LINKS``: whether every place of ``CONCURRENT_REQUESTS``
        is taken by a download or by a fetched page whose links the spider and the
        strategy have not queued yet, with at least one such page. The engine asks again
        when that page's scrape ends (it schedules its next call then), so the next URL
        is chosen knowing its links: with ``CONCURRENT_REQUESTS = 1`` each pick sees every
        page fetched before it, as best-first search means, and the order repeats from
        run to run (Scrapy starts the next download as soon as one ends, while its page
        is still parsed, so which page's links were in at the pick was a race)."""
        if not self.wait_for_links:
            return False
        engine = self._engine()
        downloader = getattr(engine, "downloader", None)
        slot = getattr(getattr(engine, "scraper", None), "slot", None)
        if downloader is None or slot is None:
            return False
        active = slot.active
        if self._links_in:
            self._links_in &= {id(request) for request in active}
        scraping = len(active) - len(self._links_in)
        pending = scraping > 0 and len(downloader.active) + scraping >= downloader.total_concurrency
        self._held_back = pending
        return pending

    def _on_links_queued(self, response: Response, **kwargs: Any) -> None:
        """A page's links are queued (:data:`focused.signals.links_queued`): it no longer
        holds a place while its item is stored; a pick held back for it is made now."""
        if not self.wait_for_links:
            return
        self._links_in.add(id(response.request))
        if self._held_back:
            self._held_back = False
            wake_engine(self.crawler)

    def _engine_idle(self) -> bool:
        """Whether the engine downloads and scrapes nothing: then every request that
        :meth:`next_request` handed out has ended (the engine starts its download at
        once, and the downloader holds it, robots.txt waits included, until it ends)."""
        engine = self._engine()
        if engine is None:
            return False
        try:
            return not engine.downloader.active and engine.scraper.slot.is_idle()
        except AttributeError:
            return False

    def _settle(self) -> None:
        """With the engine idle, a URL still in flight failed without a word to this
        scheduler: a downloader middleware's ``process_response`` dropped it (a
        decompression bomb, a redirect loop), which neither ``response_received`` nor
        :class:`DownloadFailureMiddleware` sees. It is an error (journaled as one)."""
        if self.in_flight and self._engine_idle():
            for fp in list(self.in_flight):
                self._finish(fp, ERROR)

    def __len__(self) -> int:
        return len(self.frontier)

    # --- in -------------------------------------------------------------------------
    def enqueue_request(self, request: Request) -> bool:
        fp = self._fingerprint(request)
        redirects = request.meta.get("redirect_urls")
        if redirects:  # the redirecting URL is handled
            self._finish(self._url_fp(redirects[-1], request.meta), DONE)
        if fp in self.in_flight:
            if not request.dont_filter:
                return self._filter(request)
            self.in_flight.discard(fp)  # a retry: back to waiting
            self.requeued += 1
        elif not self.seen.add(fp):  # seen before
            if fp in self.frontier:  # waiting
                if request.dont_filter:  # never filtered: queued once more
                    request, fp = self._copy_of(request, fp)
                    self.seen.add(fp)
                else:
                    return self._push(self._promoted(request, fp), request)
            elif not request.dont_filter or self._done_in_earlier_run(fp):
                return self._filter(request)
        return self._push(self._to_entry(request, fp), request)

    def drop_done(self, url: str, referer: str | None = None) -> bool:
        """Whether a plain GET request of ``url`` (not ``dont_filter``) would be filtered
        because the URL is done (fetched or failed: seen, neither waiting nor in flight);
        then it is counted as :meth:`enqueue_request` counts it, and the caller does not
        build it (a page's links to pages fetched already: most of its duplicates).

        A done URL stays done (only a ``dont_filter`` request queues it again), so the
        answer holds until the link would reach :meth:`enqueue_request`; a URL in flight
        is not dropped (a retry may make it wait again, and then a link promotes it).
        ``referer``: the page of the link, for the ``DUPEFILTER_DEBUG`` log line."""
        fp = url_fingerprint(url)
        if fp in self.in_flight or fp not in self.seen or fp in self.frontier:
            return False
        self._filter(url, referer)
        return True

    def drop_waiting(self, url: str, priority: int, referer: str | None = None) -> bool:
        """Whether a plain GET request of ``url`` (not ``dont_filter``) at ``priority``
        would be filtered because the URL waits at a priority at least as high (the
        frontier ignores a push that is no promotion); then it is counted as
        :meth:`enqueue_request` counts it, and the caller drops the request before it
        reaches the engine (its signals) and this scheduler. Asked with the priority the
        strategy gave, just before the request goes on to the scheduler; a URL in flight
        is not dropped (as in :meth:`drop_done`)."""
        fp = url_fingerprint(url)
        if fp in self.in_flight:
            return False
        if not self.frontier.ignores(fp, priority):  # type: ignore[attr-defined]
            return False
        self._filter(url, referer)
        return True

    def _copy_of(self, request: Request, fp: int) -> tuple[Request, int]:
        """A ``dont_filter`` request for a URL that waits: a copy with a fingerprint of
        its own (kept in meta, so its response and retries find it)."""
        run = self.journal.run if self.journal is not None else 0
        n = 0
        while True:
            n += 1
            key = f"{fp}:{run}:{n}".encode()
            copy_fp = int.from_bytes(
                hashlib.blake2b(key, digest_size=8).digest(), "big", signed=True
            )
            if copy_fp not in self.frontier and copy_fp not in self.in_flight:
                break
        meta = {**request.meta, COPY_META: (copy_fp, request.url)}
        return request.replace(meta=meta), copy_fp

    def _promoted(self, request: Request, fp: int) -> Entry:
        """The entry of a waiting URL found again: ``request``'s own when both are plain,
        else the waiting one with ``request``'s priority (the frontier ignores it when
        that is not higher)."""
        new = self._to_entry(request, fp)
        if fp not in self._whole_waiting and not _is_whole(new):
            return new  # both plain (no lookup of the waiting entry)
        old = self.frontier.get(fp)
        if old is None:
            return new
        entry = dataclasses.replace(old, priority=new.priority, seq=-1)
        if _is_whole(old):
            whole = old.extra["request"]
            entry.extra = {**old.extra, "request": whole.replace(priority=new.priority)}
        return entry

    def _push(self, entry: Entry, request: Request | None = None) -> bool:
        if not self.frontier.push(entry):
            return self._filter(request)
        if _is_whole(entry):
            self._whole_waiting.add(entry.fp)
        if self.journal is not None:
            self.journal.push(entry, self._dump_extra(entry.extra, entry.evidence))
        # Counted here, written to the stats once per dequeued request and at close (a
        # stats call costs ~1.5 us, and a page hands over dozens of links).
        self.enqueued += 1
        return True

    def _filter(self, request: Request | str | None = None, referer: str | None = None) -> bool:
        """Count a filtered duplicate (``request``, or its URL with the ``referer`` page)
        and log it as Scrapy's ``RFPDupeFilter`` does: at DEBUG, the first one only,
        every one with ``DUPEFILTER_DEBUG``; returns False (not queued)."""
        self.filtered += 1
        if request is not None and (self.dupefilter_debug or not self._duplicate_logged):
            self._log_duplicate(request, referer)
        return False

    def _log_duplicate(self, request: Request | str, referer: str | None) -> None:
        if isinstance(request, Request):
            shown = str(request)
            ref = request.headers.get("Referer") or request.meta.get(PARENT_URL)
            referer = ref.decode("latin-1") if isinstance(ref, bytes) else ref
        else:
            shown = f"<GET {request}>"
        extra = {"spider": self.spider}
        if self.dupefilter_debug:
            logger.debug(
                "Filtered duplicate request: %(request)s (referer: %(referer)s)",
                {"request": shown, "referer": referer},
                extra=extra,
            )
        else:
            logger.debug(
                "Filtered duplicate request: %(request)s - no more duplicates will be shown"
                " (see DUPEFILTER_DEBUG to show all duplicates)",
                {"request": shown},
                extra=extra,
            )
            self._duplicate_logged = True

    def _done_in_earlier_run(self, fp: int) -> bool:
        if self.journal is None:
            return False
        got = self.journal.state_of(fp)
        return got is not None and got[0] >= DONE and got[1] < self.journal.run

    # --- out ------------------------------------------------------------------------
    def next_request(self) -> Request | None:
        """The best waiting request (by the strategy's order, or the annealing pick);
        with ``FOCUSED_HOST_AWARE``, the best among the hosts that can take one now
        (:class:`HostGate`): ``None`` while every waiting URL's host is busy (the engine
        asks again when a download ends or a delay runs out; the crawl goes on)."""
        if self._postponed:
            self._release_postponed()
        if self._scraping:
            self._scraped()
        if self._links_pending():
            return None
        entry = self._pick()
        if self._wasteful is not None:
            while entry is not None and self._requeue_wasteful(entry):
                entry = self._pick()
        if entry is None:
            self._commit()
            return None
        request = self._to_request(entry)
        if self.gate is not None:
            self.gate.handed_out(request)
        self.in_flight.add(entry.fp)
        if self._whole_waiting:
            self._whole_waiting.discard(entry.fp)
        if self.journal is not None:
            self.journal.set_state(entry.fp, IN_FLIGHT)
        self._commit()
        self.dequeued += 1
        self._update_stats()
        return request

    def _requeue_wasteful(self, entry: Entry) -> bool:
        """Whether ``entry``, just taken off the frontier, was put back at the bottom:
        its URL shape was learnt wasteful (the ``frontier_waste_check`` predicate) after
        the link was found, so it waits with the chrome links and the links of that shape
        found since (priority :data:`~focused.meta.CHROME_PRIORITY` minus its depth, value and
        ``m`` 0, marked chrome, first found first among them). Its rescoring evidence is
        dropped, so no rescore lifts it again. Only plain entries above the chrome floor
        are re-queued (a request kept whole, with its own callback, is the user's), each
        once; the pick that took it does not count as an annealing step (He, Cheng & Cai
        2009's temperature cools once per URL handed out)."""
        demoted = self._waste_demoted(entry)
        if demoted is None:
            return False
        if self.annealer is not None and self._annealer_before is not None:
            a = self.annealer
            a.temperature, a.picks, a.accepted_worse = self._annealer_before
        self.frontier.push(demoted)
        if self.journal is not None:
            self.journal.push(demoted, self._dump_extra(demoted.extra))
        self.waste_requeued += 1
        return True

    def _waste_demoted(self, entry: Entry) -> Entry | None:
        """``entry`` as it waits once re-queued at the bottom (:meth:`_requeue_wasteful`),
        or ``None`` when it is not re-queued: at or below the chrome floor, kept whole,
        or of a URL shape the re-check does not call wasteful."""
        if entry.priority <= CHROME_PRIORITY or _is_whole(entry):
            return None
        if self._wasteful is None or not self._wasteful(entry.url):
            return None
        extra = dict(entry.extra) if isinstance(entry.extra, dict) else {}
        extra["meta"] = {**extra.get("meta", {}), CHROME: True}
        return dataclasses.replace(
            entry,
            priority=CHROME_PRIORITY - entry.depth,
            value=0.0,
            m=0.0,
            flags=entry.flags & ~(_NO_VALUE | _NO_M),
            extra=extra,
            seq=-1,
            evidence=b"",
        )

    def _pick(self) -> Entry | None:
        """Take the next entry off the frontier (see :meth:`next_request`).

        Host-aware: the best entry of a free host; when there is none, the best entry of
        a host that is only full (no delay holds it: its request waits in the slot for a
        transfer to end, as without host-awareness, so a crawl of one host keeps its
        order); when every waiting entry's host is held back by its delay, none.
        """
        a = self.annealer
        self._annealer_before = (a.temperature, a.picks, a.accepted_worse) if a else None
        gate = self.gate
        pick_available = getattr(self.frontier, "pop_available", None)
        if gate is not None and pick_available is not None:
            busy, delayed = gate.blocked()
            if busy:
                # the key names the predicate: a pick that found nothing is not walked
                # again for the same busy hosts until the frontier changes
                entry = pick_available(
                    gate.check(busy), self.annealer, self.host_scan, gate.key(busy)
                )
                if entry is None and len(busy) > len(delayed):
                    if not delayed:
                        return self._strict_pick()
                    entry = pick_available(
                        gate.check(delayed), self.annealer, self.host_scan, gate.key(delayed)
                    )
                if entry is None and len(self.frontier):
                    gate.wake_later()
                    if self.stats is not None:
                        self.stats.set_value("focused/scheduler/hosts_busy", gate.waits)
                        remembered = getattr(self.frontier, "remembered", 0)
                        self.stats.set_value("focused/scheduler/picks_remembered", remembered)
                return entry
        return self._strict_pick()

    def _strict_pick(self) -> Entry | None:
        """The best entry, or the annealing choice among the top K (the global order)."""
        if self.annealer is not None:
            return self.frontier.pop_annealed(self.annealer)
        return self.frontier.pop()

    def _signals(self) -> list[tuple[Any, object]]:
        return [
            (self._on_response, signals.response_received),
            (self._on_item, signals.item_scraped),
            (self._on_dropped, signals.item_dropped),
            (self._on_item, signals.item_error),
            (self._on_item, signals.spider_error),  # the callback failed: no item comes
            (self._on_store_opened, focused_signals.page_store_opened),
            (self._on_checkpoint, focused_signals.frontier_checkpoint),
            (self._on_stored, focused_signals.pages_stored),
            (self._on_rescore, focused_signals.frontier_rescore),
            (self._on_skipped, focused_signals.page_skipped),
            (self._on_aliased, focused_signals.page_aliased),
            (self._on_download_failed, focused_signals.download_failed),
            (self._on_links_queued, focused_signals.links_queued),
        ]

    def _finish(self, fp: int, state: int, journal: bool = True) -> None:
        """Move an in-flight URL to the done or error queue (no-op if not in flight)."""
        if fp not in self.in_flight:
            return
        self.in_flight.discard(fp)
        if state == DONE:
            self.done += 1
        else:
            self.errors += 1
        if journal and self.journal is not None:
            self.journal.set_state(fp, state)
        self._update_stats()

    def _on_response(self, response: Response, request: Request, spider: Spider) -> None:
        if not self._answered and response.status < 500:
            self._first_answer()
        fp = self._fingerprint(request)
        if response.status >= 500:  # a server error: a failure like a lost connection
            self._failed(fp)
        elif response.status >= 400:
            self._finish(fp, ERROR)
        elif partial_answer(response, request):
            # a piece of the page: an error, left in flight in the journal, so that a
            # resume fetches it again (a CDN filling its cache answers whole later)
            self._finish(fp, ERROR, journal=False)
        elif fp in self.in_flight:
            # Done, but journaled as done only once the page is safe (its links are
            # journaled by then): see _on_item, _on_stored and _scraped.
            self._finish(fp, DONE, journal=False)
            key = url_fingerprint(response.url)
            self._fetched[key] = fp
            self._scraping[key] = (request, 0)

    def _on_item(self, response: Response | None = None, **kwargs: Any) -> None:
        """The page item of a fetched page left the pipelines (scraped, dropped or failed),
        or the spider callback failed.

        Its links were journaled before it (the spider yields them first). Without a page
        store that is all there is to wait for: done now (durable at the next journal
        commit). With one, the page's row may still sit in the store's open transaction:
        the store's ``pages_stored`` journals it as done (and one that never stores it
        stays in flight until the close; after a crash it is fetched again).
        """
        self._held(response, _HELD)
        if not self.waits_for_store:
            self._confirm(response)

    def _on_dropped(
        self, response: Response | None = None, exception: Any = None, **kwargs: Any
    ) -> None:
        """A pipeline dropped the item of a page. Dropped by a page store that did not
        store it (:class:`focused.signals.NotStored`): the page stays in flight and is
        fetched again by a resume. Any other drop is deliberate: once the scraper is
        through with the page, it is journaled as done (:meth:`_scraped`)."""
        if isinstance(exception, focused_signals.NotStored):
            self._held(response, _HELD)
        else:
            self._held(response, _DROPPED)
        if not self.waits_for_store:
            self._confirm(response)

    def _held(self, response: Response | None, what: int) -> None:
        """Note what became of an item of ``response``'s page (see :data:`_HELD`)."""
        if response is None or not self._scraping:
            return
        key = url_fingerprint(response.url)
        got = self._scraping.get(key)
        if got is not None:
            self._scraping[key] = (got[0], got[1] | what)

    def _scraped(self) -> None:
        """Journal as done the fetched pages whose response the scraper is through with
        (spider callback, every item out of the pipelines) and that no store will
        confirm: no item came of it (a response Scrapy's ``HttpErrorMiddleware`` ignored,
        a callback that yielded none), or a pipeline dropped its items on
        purpose. A page whose item went through, failed in a pipeline or was not stored
        keeps waiting for the store's word (or stays in flight)."""
        engine = self._engine()
        active = getattr(getattr(getattr(engine, "scraper", None), "slot", None), "active", None)
        if active is None:
            return
        ended = [key for key, (request, _) in self._scraping.items() if request not in active]
        for key in ended:
            _, what = self._scraping.pop(key)
            if what & _HELD or key not in self._fetched:
                continue
            if self.stats is not None:
                self.stats.inc_value(
                    "focused/pages/dropped" if what & _DROPPED else "focused/pages/no_item"
                )
            fp = self._fetched.pop(key)
            if self.journal is not None:
                self.journal.set_state(fp, DONE)

    def _on_skipped(self, response: Response, **kwargs: Any) -> None:
        """A fetched page the spider yields no item for: no store row will confirm it, so
        it is journaled as done now (durable at the next journal commit)."""
        self._confirm(response)

    def _on_aliased(self, response: Response, **kwargs: Any) -> None:
        """A fetched page the spider found a near-duplicate of a stored page: with a page
        store it is done once the store names it in ``pages_stored`` (its alias row
        committed), as a stored page is; without one, done now."""
        if self.waits_for_store:
            self._held(response, _HELD)
        else:
            self._confirm(response)

    def _confirm(self, response: Response | None) -> None:
        """Journal a fetched page as done."""
        if response is None or getattr(response, "request", None) is None:
            return
        fp = self._fetched.pop(url_fingerprint(response.url), None)
        if fp is not None and self.journal is not None:
            self.journal.set_state(fp, DONE)

    def _on_store_opened(self, lost: Sequence[str] = (), **kwargs: Any) -> None:
        """A page store opened: fetched pages are done once it has committed them. The
        pages of ``lost`` (rows the store's repair removed: their bytes did not survive
        a power cut) are journaled waiting again and fetched again; so are the pages the
        journal says were stored that the store does not hold (:meth:`_requeue_unstored`:
        the output folder was removed, or its database replaced by an older copy)."""
        self.waits_for_store = True
        if self.journal is None:
            return
        if lost:
            self._requeue_lost(set(lost))
        if self.journal.upgraded:
            self._mark_stored()
        self._requeue_unstored()

    def _mark_stored(self) -> None:
        """A journal written before done rows said whether they were stored: those the
        store holds are marked stored now (done only once: the journal keeps the mark)."""
        journal = self.journal
        assert journal is not None and self.page_store is not None
        held = store_holds(self.page_store, journal.done_urls(stored=False))
        if held is None:
            return
        journal.mark_stored(held)
        if self._commit(force=True) is None:
            journal.upgraded = False

    def _requeue_unstored(self) -> None:
        """Put back to wait every URL the journal marked done as stored (the store said
        it committed the page) whose page the store does not hold: its database was
        removed with the output folder, or replaced by an older copy. Nothing is marked
        done that was not stored. A URL done without being stored (a redirect, a page the
        spider skipped: noindex, a near-duplicate, not text) stays done. One line and the
        stat ``focused/store/missing_requeued``. A store that cannot be read is left
        alone (the crawl stops on it anyway: the page store failed to open)."""
        journal = self.journal
        assert journal is not None
        if self.page_store is None:
            return
        # (the journal's cursor is read to its end before anything is written)
        lacking = store_holds(self.page_store, journal.done_urls(stored=True), held=False)
        if lacking is None:
            logger.debug("focused: cannot read %s; done pages not checked", self.page_store)
            return
        if not lacking:
            return
        missing = set(lacking)
        again = 0
        for row in [row for row in journal.rows(DONE) if row.entry.fp in missing]:
            if self._restore_row(row):
                journal.set_state(row.entry.fp, WAITING)
                self.done -= 1
                again += 1
        self._commit(force=True)
        self._update_stats()
        if not again:
            return
        if self.stats is not None:
            self.stats.inc_value("focused/store/missing_requeued", again)
        where = Path(self.page_store).parent
        if not self._store_was_there:
            record = read_record(self.jobdir) if self.jobdir else None
            held = record.get("output_dir") if record else None
            if isinstance(held, str) and os.path.realpath(held) != os.path.realpath(where):
                cause = f"this JOBDIR's crawl stored into {held}"
            else:
                cause = "removed?"
            logger.warning(
                "focused: the page store %s was not there at the start (%s): the %d"
                " pages the journal in %s says it stored are fetched again",
                where,
                cause,
                again,
                self.jobdir,
            )
        else:
            logger.warning(
                "focused: %d pages the journal in %s says were stored are not in %s"
                " (its database replaced by an older copy?): fetching them again",
                again,
                self.jobdir,
                self.page_store,
            )

    def _requeue_lost(self, lost: set[str]) -> None:
        journal = self.journal
        assert journal is not None
        again = [row for row in journal.rows(DONE) if row.entry.url in lost]
        for row in again:
            if self._restore_row(row):
                journal.set_state(row.entry.fp, WAITING)
                self.done -= 1
        journal.commit()
        if not again:
            return
        if self.stats is not None:
            self.stats.inc_value("focused/store/lost_requeued", len(again))
        logger.warning(
            "focused: %d stored pages were lost in a crash (power cut?): fetching them again",
            len(again),
        )

    def _on_stored(self, urls: list[str], **kwargs: Any) -> None:
        """The page store committed the pages of ``urls``: journal them as done (durable
        at the next journal commit; the store's commit is durable already)."""
        fetched = self._fetched
        if not fetched:
            return
        for url in urls:
            fp = fetched.pop(url_fingerprint(url), None)
            if fp is not None and self.journal is not None:
                self.journal.set_state(fp, DONE, stored=True)

    def _on_download_failed(
        self, request: Request, exception: BaseException | None = None, **kwargs: Any
    ) -> None:
        """The download of ``request`` failed for good (:class:`DownloadFailureMiddleware`).
        Before the run's first response it is journaled only when that response comes:
        until then the URL stays in flight in the journal, and a resume fetches it again.
        A request held back because its host's robots.txt is unreachable
        (:class:`~focused.robots.RobotsPostponed`) is no failure: it waits
        (:meth:`_postpone`)."""
        if isinstance(exception, RobotsPostponed):
            self._postpone(request, exception.retry_at, exception.stat)
            return
        self._failed(self._fingerprint(request))

    def _postpone(
        self, request: Request, retry_at: float | None, stat: str = RobotsPostponed.stat
    ) -> None:
        """``request`` waits until ``retry_at`` (its host's robots.txt is fetched again
        then), journaled as waiting; with ``retry_at`` None (the host given up for this
        run) it waits in the journal only, for the next run. ``stat``: counted, and
        ``<stat>_next_run`` too with ``retry_at`` None."""
        fp = self._fingerprint(request)
        if fp not in self.in_flight:
            return
        self.in_flight.discard(fp)
        if self.journal is not None:
            self.journal.set_state(fp, WAITING)
        if self.stats is not None:
            self.stats.inc_value(stat)
        if retry_at is None:
            if self.stats is not None:
                self.stats.inc_value(stat.removesuffix("_postponed") + "_next_run")
            self._update_stats()
            return
        entry = self._to_entry(request, fp)
        self.requeued += 1
        heapq.heappush(self._postponed, (retry_at, self.requeued, entry))
        self._wake_at(retry_at)
        self._update_stats()

    def _wake_at(self, at: float) -> None:
        """Make the engine ask for a request at ``at`` (``time.monotonic()``)."""
        if self._postponed_timer is not None:
            return  # set for the heap's first (the earliest: every wait is as long)
        self._postponed_timer = call_later(max(0.0, at - monotonic()) + 0.01, self._wake)

    def _wake(self) -> None:
        self._postponed_timer = None
        nextcall = getattr(getattr(self._engine(), "_slot", None), "nextcall", None)
        if nextcall is not None:
            nextcall.schedule()
        if self._postponed:
            self._wake_at(self._postponed[0][0])

    def _release_postponed(self) -> None:
        """Queue again the postponed URLs whose host's robots.txt is due again."""
        now = monotonic()
        while self._postponed and self._postponed[0][0] <= now:
            _, _, entry = heapq.heappop(self._postponed)
            entry.seq = -1
            if self.frontier.push(entry) and _is_whole(entry):
                self._whole_waiting.add(entry.fp)

    def _failed(self, fp: int) -> None:
        """The URL of ``fp`` failed (a download, a 5xx): an error, journaled at once or,
        before the run's first answer, when that comes."""
        if self._answered or self.journal is None or not self._defer_failures:
            self._finish(fp, ERROR)
        elif fp in self.in_flight:
            self._finish(fp, ERROR, journal=False)
            self._unanswered.append(fp)
            if self.stats is not None:
                self.stats.inc_value("focused/scheduler/failed_unanswered")

    def _first_answer(self) -> None:
        """The run's first response: the failures before it were no network outage for
        the whole run, and are journaled as errors now."""
        self._answered = True
        if self.journal is not None:
            for fp in self._unanswered:
                # not one queued again since (a retry): it waits, or is in flight
                if fp not in self.frontier and fp not in self.in_flight:
                    self.journal.set_state(fp, ERROR)
        self._unanswered = []

    def _on_checkpoint(self, **kwargs: Any) -> JournalError | None:
        """The page store is about to commit: make the journal (the pages' links) durable
        first. Returns the :class:`JournalError` when that failed: the store must not
        commit (:data:`focused.signals.frontier_checkpoint`)."""
        return self._commit(force=True)

    def _on_rescore(self, rescorer: Rescorer, **kwargs: Any) -> int:
        """A strategy that rescores learnt from one more page: re-order the waiting links
        when :attr:`rescoring` (:class:`~focused.frontier.rescoring.RescoreSchedule`) says
        it is time. The number of entries whose priority changed (0 when it was not)."""
        self._model_learnt += 1
        if self.model_save_every and self._model_learnt >= self.model_save_every:
            self._save_model()
        rescore = getattr(self.frontier, "rescore", None)
        if not self.rescoring.learnt(len(self.frontier), can_rescore=rescore is not None):
            return 0
        assert rescore is not None
        moved = rescore(rescorer)
        self.rescoring.rescored(moved)
        if self.stats is not None:
            self.stats.set_value("focused/frontier/rescores", self.rescorings)
            self.stats.set_value("focused/frontier/rescore_moved", self.rescore_moved)
        return moved

    @property
    def rescorings(self) -> int:
        """Rescores of the waiting links done."""
        return self.rescoring.rescorings

    @property
    def rescore_moved(self) -> int:
        """Waiting entries whose priority a rescore changed, in all."""
        return self.rescoring.moved

    # --- compact entries ------------------------------------------------------------
    @staticmethod
    def _fingerprint(request: Request) -> int:
        copy = request.meta.get(COPY_META)
        if copy is not None and copy[1] == request.url:  # a dont_filter copy
            return copy[0]
        if request.method == "GET" and not request.body:
            return url_fingerprint(request.url)
        return int.from_bytes(request_fingerprint(request)[:8], "big", signed=True)

    @staticmethod
    def _url_fp(url: str, meta: dict[str, Any]) -> int:
        """Fingerprint of the GET request of ``url`` that carried ``meta``."""
        copy = meta.get(COPY_META)
        if copy is not None and copy[1] == url:
            return copy[0]
        return url_fingerprint(url)

    def _is_plain(self, request: Request) -> bool:
        """Rebuilt exactly from a compact entry (else kept whole). A ``dont_filter``
        request that no strategy scored is kept whole: its sender may still hold it and
        change it after handing it over (``scrapy shell`` sets its callback after
        ``engine.crawl``), and it must get that very request back (a retry of a crawled
        link, scored, stays compact with its ranking columns)."""
        if type(request) is not Request or request.errback is not None:
            return False
        if request.dont_filter and LINK_VALUE not in request.meta:
            return False
        callback = request.callback
        if callback is not None and callback != getattr(self.spider, "parse", None):
            return False
        if request.method != "GET" or request.body or request.cb_kwargs or request.flags:
            return False
        if request.cookies or request.encoding != "utf-8":
            return False
        headers = request.headers
        return not headers or (len(headers) == 1 and b"Referer" in headers)

    def _to_entry(self, request: Request, fp: int) -> Entry:
        flags = DONT_FILTER if request.dont_filter else 0
        if not self._is_plain(request):
            return _whole_entry(request, fp, flags)
        packed = _pack_meta(request.meta)
        flags |= packed.absent
        extra: dict[str, Any] | None = None
        referer = request.headers.get(b"Referer")
        if referer is not None:
            if referer == packed.parent.encode("utf-8") and not flags & _NO_PARENT:
                flags |= REFERER
            else:
                extra = {"headers": {"Referer": referer}}
        rest = _unpacked_meta(request, packed)
        if rest:
            extra = {**(extra or {}), "meta": rest}
        return Entry(
            url=request.url,
            fp=fp,
            priority=request.priority,
            value=_as_float(packed.value),
            depth=packed.depth,
            m=packed.m,
            hops=packed.hops,
            anchor_relevance=packed.anchor,
            parent_url=packed.parent,
            flags=flags,
            extra=extra,
            evidence=packed.evidence or b"",
        )

    def _to_request(self, entry: Entry) -> Request:
        extra = entry.extra or {}
        if "request" in extra:
            return extra["request"]
        meta: dict[str, Any] = {}
        absent = entry.flags
        if not absent & _NO_DEPTH:
            meta[DEPTH] = entry.depth
        if not absent & _NO_VALUE:
            meta[LINK_VALUE] = entry.value
        if not absent & _NO_M:
            meta[M] = entry.m
        if not absent & _NO_HOPS:
            meta[HOPS] = entry.hops
        if not absent & _NO_ANCHOR:
            meta[ANCHOR_RELEVANCE] = entry.anchor_relevance
        if not absent & _NO_PARENT:
            meta[PARENT_URL] = entry.parent_url
        if entry.evidence:
            meta[META_EVIDENCE] = entry.evidence
        meta.update(extra.get("meta", ()))
        headers = extra.get("headers")
        if entry.flags & REFERER:
            headers = {"Referer": entry.parent_url}
        return Request(
            entry.url,
            priority=entry.priority,
            meta=meta,
            headers=headers,
            dont_filter=bool(entry.flags & DONT_FILTER),
        )

    # --- persistence ----------------------------------------------------------------
    def _dump_extra(self, extra: dict[str, Any] | None, evidence: bytes = b"") -> bytes | None:
        if evidence:  # a rescoring strategy's evidence is journaled with the extra
            extra = {**(extra or {}), "evidence": evidence}
        if extra is None:
            return None
        try:
            if "request" in extra:
                extra = {"request": extra["request"].to_dict(spider=self.spider)}
            return pickle.dumps(extra, protocol=pickle.HIGHEST_PROTOCOL)
        except Exception as e:  # noqa: BLE001 - anything unserialisable
            if self.stats is not None:
                self.stats.inc_value("focused/scheduler/unserializable")
            if self.scheduler_debug:  # SCHEDULER_DEBUG: every one, as Scrapy's scheduler
                logger.warning(
                    "focused: a request cannot be journaled and will be lost on resume (%s)",
                    e,
                )
            elif not self._warned_unserializable:
                self._warned_unserializable = True
                logger.warning(
                    "focused: a request cannot be journaled and will be lost on resume (%s);"
                    " further ones are only counted (SCHEDULER_DEBUG = True logs each)",
                    e,
                )
            return b""

    def _load_extra(self, blob: bytes | None) -> dict[str, Any] | None:
        if blob is None:
            return None
        extra = pickle.loads(blob)  # noqa: S301 - our own JOBDIR file, as Scrapy's queues
        if "request" in extra:
            extra["request"] = request_from_dict(extra["request"], spider=self.spider)
        return extra

    def _save_annealer(self) -> None:
        a = self.annealer
        if self.journal is None or a is None or a.picks == self._saved_picks:
            return
        self.journal.put_meta("annealer", pickle.dumps(a.state()))
        self._saved_picks = a.picks

    def _learner(self) -> Any:
        """The spider's strategy when it has a model to save (``learning``), else None."""
        strategy = getattr(self.spider, "strategy", None)
        return strategy if hasattr(strategy, "model_state") else None

    @property
    def model_path(self) -> Path | None:
        """``JOBDIR/learning-model.npz``: the learnt model of a crawl with a JOBDIR."""
        return Path(self.jobdir) / MODEL_NAME if self.jobdir else None

    def _save_model(self) -> None:
        """Write the strategy's learnt model under JOBDIR (atomically: a crash leaves the
        previous one); a failure is logged, the crawl goes on."""
        learner, path = self._learner(), self.model_path
        self._model_learnt = 0
        if learner is None or path is None:
            return
        try:
            write_bytes(path, dumps_state(learner.model_state()), fsync=True)
        except OSError as exc:
            logger.error("focused: error: cannot save the learnt model in %s (%s)", path, exc)
            return
        if self.stats is not None:
            self.stats.inc_value("focused/model/saved")

    def _load_model(self) -> None:
        """A resumed crawl continues with the model it saved (``learning``)."""
        learner, path = self._learner(), self.model_path
        if learner is None or path is None or not path.is_file():
            return
        try:
            learner.load_model_state(loads_state(path.read_bytes()))
        except (OSError, ValueError, KeyError) as exc:
            logger.error("focused: error: the saved model %s is not loaded (%s)", path, exc)
            return
        logger.info(
            "focused: resuming with the learnt model of %s (%d pages)", path, learner.terms.pages
        )
        if self.stats is not None:
            self.stats.set_value("focused/model/loaded_pages", learner.terms.pages)

    def _commit(self, force: bool = False) -> JournalError | None:
        journal = self.journal
        if journal is None:
            return None
        try:
            self._save_annealer()
            if journal.pending or force or journal.failed is not None:
                journal.commit()
        except JournalError as exc:
            self._journal_failed(exc)
            return exc
        return None

    def _journal_failed(self, exc: JournalError) -> None:
        """The journal cannot be written (a full disk): stop the crawl with one line."""
        stop_crawl(
            self.crawler, "write the frontier journal", self.jobdir, exc.cause, then_for(exc.cause)
        )

    def _restore(self) -> None:
        journal = self.journal
        assert journal is not None
        # the previous run was answered by no host: this run's failures are journaled
        self._defer_failures = journal.get_meta("unanswered") != b"1"
        blob = journal.get_meta("annealer")
        if blob is not None and self.annealer is not None:
            self.annealer.load_state(pickle.loads(blob))  # noqa: S301
            self._saved_picks = self.annealer.picks
        for fp in journal.fingerprints():
            self.seen.add(fp)
        lost = 0
        for row in journal.rows(WAITING):
            lost += not self._restore_row(row)
        in_flight = list(journal.rows(IN_FLIGHT))
        stored = stored_urls(self.page_store, [r.entry.url for r in in_flight])
        for row in in_flight:
            if row.entry.url in stored:
                journal.set_state(row.entry.fp, DONE, stored=True)
            elif self._restore_row(row):
                journal.set_state(row.entry.fp, WAITING)
            else:
                lost += 1
        counts = journal.counts()
        self.done, self.errors = counts[DONE], counts[ERROR]
        journal.commit()
        if len(self.seen):
            logger.info(
                "focused: resuming crawl from %s: %d waiting (%d were in flight, %d of"
                " them already stored), %d seen, %d done, %d errors, %d lost",
                self.jobdir,
                len(self.frontier),
                len(in_flight),
                len(stored),
                len(self.seen),
                self.done,
                self.errors,
                lost,
            )

    def _restore_row(self, row: Row) -> bool:
        if row.extra == b"":  # could not be serialised: lost
            return False
        extra = self._load_extra(row.extra)
        if extra is not None and "evidence" in extra:
            row.entry.evidence = extra.pop("evidence")
            extra = extra or None
        row.entry.extra = extra
        if self.frontier.push(row.entry) and _is_whole(row.entry):
            self._whole_waiting.add(row.entry.fp)
        return True

    # --- stats ----------------------------------------------------------------------
    def queues(self) -> dict[str, int]:
        """Sizes of the four queues (Liu, Xia & Xu 2010)."""
        return {
            "waiting": len(self.frontier) + len(self._postponed),
            "in_flight": len(self.in_flight),
            "done": self.done,
            "error": self.errors,
        }

    def _update_stats(self) -> None:
        stats = self.stats
        if stats is None:
            return
        for name, n in self.queues().items():
            stats.set_value(f"focused/queue/{name}", n)
        if self.annealer is not None:
            stats.set_value("focused/annealing/accepted_worse", self.annealer.accepted_worse)
            stats.set_value("focused/annealing/temperature", self.annealer.temperature)
        if self.requeued:
            stats.set_value("focused/scheduler/requeued", self.requeued)
        if self.waste_requeued:
            stats.set_value("focused/scheduler/waste_requeued", self.waste_requeued)
        stats.set_value("scheduler/enqueued", self.enqueued)
        stats.set_value("scheduler/dequeued", self.dequeued)
        stats.set_value("focused/frontier/promoted", self.frontier.promoted)
        stats.set_value("focused/dupefilter/filtered", self.filtered)


def warn_ignored_settings(settings: Any) -> None:
    """One WARNING for each of Scrapy's scheduling settings that the user changed and the
    focused scheduler ignores (:func:`focused.habits.ignored_by_scheduler`)."""
    for line in ignored_by_scheduler(settings):
        logger.warning("focused: %s", line)


def _is_whole(entry: Entry) -> bool:
    """The entry keeps its request whole (not plain)."""
    return isinstance(entry.extra, dict) and "request" in entry.extra
