"""The Scrapy glue of the shared frontier: :class:`RedisScheduler`.

Selected through settings: ``FOCUSED_FRONTIER = "redis"`` (the project's
:class:`~focused.distributed.addon.FrontierAddon` turns it into ``SCHEDULER =
"focused.distributed.scheduler.RedisScheduler"``), or that ``SCHEDULER`` directly.

Round trips: the scheduler stages pushes and finishes locally and sends them with the
next pick, so a request costs one round trip (the pick); the page store's
:data:`~focused.signals.frontier_checkpoint` flushes staged pushes before a page is
committed (a stored page never has its links only in memory). If Redis cannot be
reached, the staged changes stay in memory and are retried; after ``FOCUSED_REDIS_LEASE``
seconds the worker stops and writes them to ``<FOCUSED_OUTPUT_DIR>/redis-outbox.pickle``,
which the next start sends first: nothing is lost. Releases of unfetched URLs are not
saved (sent late, one could take a URL another worker holds since): the lease hands
those URLs back.

From scrapy-redis (0.9.1) this package uses the connection helper
(:mod:`focused.distributed.connection`) and its convention of one key prefix per crawl
with ``:requests``-like suffixes; its scheduler, queues and dupefilter are not used: they
pop without a lease (a killed worker loses its requests), wipe the queue on close unless
``SCHEDULER_PERSIST``, have no promotion and no annealing pick.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
import os
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from redis.exceptions import ResponseError
from scrapy import signals
from scrapy.exceptions import DropItem
from scrapy.http import TextResponse
from scrapy.utils.defer import deferred_from_coro
from scrapy.utils.reactor import is_reactor_installed

from focused import signals as focused_signals
from focused.defaults import get
from focused.distributed.connection import (
    DEFAULT_KEY,
    REDIS_DOWN,
    connect,
    describe,
    frontier_key,
    unreachable_message,
    writes_refused,
)
from focused.distributed.frontier import (
    ADDED,
    ANNEAL,
    BEST,
    COPIED,
    IGNORED_GONE,
    LOST,
    NO_PICK,
    PROMOTED,
    REQUEUED,
    WASTE_REQUEUED,
    Counts,
    RedisFrontier,
    Step,
    clamp_priority,
    load_outboxes,
)
from focused.distributed.model import SharedModel
from focused.errors import (
    FrontierLost,
    RedisFull,
    RedisLayoutError,
    RedisRefused,
    RedisUnavailable,
)
from focused.frontier.journal import DONE, ERROR
from focused.frontier.seen import FingerprintTable, url_fingerprint
from focused.output.store import DB_NAME as PAGES_DB
from focused.scheduler import (
    COPY_META,
    DONT_FILTER,
    FocusedScheduler,
    partial_answer,
    warn_ignored_settings,
)
from focused.stop import (
    REDIS_FRONTIER_LOST,
    REDIS_OUT_OF_MEMORY,
    REDIS_REFUSED_WRITES,
    REDIS_UNREACHABLE,
    mark_failed,
)
from focused.strategies import strategy_class

if TYPE_CHECKING:
    from typing import Self

    import redis
    from scrapy.crawler import Crawler
    from scrapy.http import Request, Response
    from scrapy.spiders import Spider

    from focused.frontier.memory import Entry

__all__ = ["RedisScheduler"]

logger = logging.getLogger(__name__)

#: the push operations of a round trip (plain, retry, dont_filter copy) and the codes of
#: a push that queued something
_PUSHES = frozenset("pPC")
_QUEUED = frozenset((ADDED, PROMOTED, REQUEUED, COPIED))
#: the operations of a waste re-queue (RedisFrontier.stage_waste)
_WASTE = frozenset("wWV")
#: what a worker knows of a URL (:attr:`RedisScheduler._known`): nothing, or that it is
#: in flight or finished (any priority it is pushed with again is ignored), else the
#: lowest priority it certainly waits with
_UNKNOWN, _GONE = -(2**62), 2**62
#: stored URLs per reconciling round trip (a restart after kill -9)
RECONCILE_BATCH = 10_000
#: a rescoring scan is at most this many times FOCUSED_REDIS_RESCORE_CHUNK entries
SCAN_CAP = 8


class RedisScheduler(FocusedScheduler):
    """:class:`~focused.scheduler.FocusedScheduler` on the shared :class:`RedisFrontier`.

    Same request packing, order, promotion, annealing, errback and stats as the
    in-memory scheduler (a subclass: it inherits them and replaces the frontier, the
    bookkeeping of in-flight URLs and the life cycle); the queues live in Redis so that
    several processes crawl one topic.

    Selected by settings, never by the base class: ``SCHEDULER =
    "focused.distributed.scheduler.RedisScheduler"``, or ``FOCUSED_FRONTIER = "redis"``,
    which :class:`focused.distributed.addon.FrontierAddon` (in the project's ``ADDONS``)
    turns into that ``SCHEDULER`` when the crawler is set up. It builds from any crawler
    (``RedisScheduler.from_crawler(get_crawler(Spider, {"REDIS_URL": ...}))``).

    A worker stages its pushes and finishes and sends them with its next pick (one round
    trip per request); a URL counts as done once its page item has gone through the
    pipelines (``item_scraped``), so a worker killed between fetch and store leaves it
    in flight and it is fetched again after the lease, never lost. The crawl ends for a
    worker when the shared queue and every worker's in-flight set are empty; a worker
    that runs dry while others still fetch asks again after ``idle_poll`` seconds (0.02,
    doubled while it stays dry, up to 0.5 s) instead of waiting for Scrapy's 5 s
    heartbeat. When this worker's engine is idle, its own in-flight URLs are over: done
    when their page yielded no item, errors when they failed without this scheduler's
    errback (:meth:`_settle`). ``JOBDIR`` is not used for the frontier (Redis keeps it).

    ``FOCUSED_REDIS_KEY`` (default :data:`DEFAULT_KEY`, ``%(spider)s:%(topic)s`` as in
    scrapy-redis) gives each spider and topic its own frontier. ``enqueue_request``
    answers ``False`` for a duplicate this worker knows of (see there).

    ``FOCUSED_WASTE_SHAPE_RECHECK``: as in memory, the worker re-checks each entry it
    picks with the predicate a :data:`focused.signals.frontier_waste_check` handler
    returned at open (its own spider's URL shapes); one whose shape became wasteful goes
    back to the bottom of the shared queue instead of being fetched, once per entry
    (:meth:`_requeue_shared`; stat ``focused/scheduler/waste_requeued``).

    ``FOCUSED_REDIS_PARTITIONS`` splits the frontier by host into partitions under hash
    tags (:mod:`focused.distributed.partition`); ``FOCUSED_REDIS_CLUSTER_NODES`` puts it
    on a Redis Cluster; ``FOCUSED_REDIS_WAIT`` waits for replicas after the round trips
    that push or finish URLs, so that a failover loses none of them.

    Settings: ``REDIS_URL`` (or ``REDIS_HOST``/``REDIS_PORT``), ``REDIS_PARAMS``,
    ``FOCUSED_REDIS_KEY``, ``FOCUSED_REDIS_LEASE``, ``FOCUSED_REDIS_PARTITIONS``,
    ``FOCUSED_REDIS_CLUSTER_NODES``, ``FOCUSED_REDIS_WAIT``, ``FOCUSED_OUTPUT_DIR``,
    ``FOCUSED_WASTE_SHAPE_RECHECK`` and the annealing settings of the base class. Stats:
    those of the base class (``focused/queue/*`` are the shared queues' sizes) and
    ``focused/redis/round_trips``, ``focused/redis/pushed``, ``focused/redis/ignored``,
    ``focused/redis/in_flight_here``, ``focused/redis/released`` (with partitions
    ``focused/redis/partitions``, ``focused/redis/pick_retries``; with
    ``FOCUSED_REDIS_WAIT`` ``focused/redis/waits``, ``focused/redis/waits_short``).
    """

    OUTBOX_NAME = "redis-outbox.pickle"
    #: ``{"key": ..., "closed": bool}``: whether this output folder's last worker closed
    #: (else it died: its store is reconciled with Redis at the next start)
    MARKER_NAME = "redis-worker.json"

    def __init__(
        self,
        *,
        server: redis.Redis,
        key_template: str = DEFAULT_KEY,
        lease: float = 60.0,
        idle_poll: float = 0.02,
        idle_poll_max: float = 0.5,
        output_dir: str = "out/crawl",
        model_every: int = 8,
        model_young: int = 0,
        rescore_chunk: int = 1000,
        partitions: int = 1,
        wait_replicas: int = 0,
        strategy: str = "",
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        #: FOCUSED_STRATEGY, recorded with the crawl in Redis (crawl_record)
        self.strategy = strategy
        #: partitions of the shared frontier (FOCUSED_REDIS_PARTITIONS)
        self.partitions = max(1, int(partitions))
        #: replicas to WAIT for after a round trip that pushed or finished URLs
        self.wait_replicas = max(0, int(wait_replicas))
        #: learnt pages between two model round trips (0: no shared model)
        self.model_every = max(0, int(model_every))
        #: while the crawl's model has learnt fewer pages, every learnt page syncs
        self.model_young = max(0, int(model_young))
        self._pages_at_scan = 0  # the model's pages when this worker last scanned
        #: waiting entries rescored per model round trip by the lease holder (0: none)
        self.rescore_chunk = max(0, int(rescore_chunk))
        self.model: SharedModel | None = None
        self._initial_model: dict[str, Any] | None = None
        self._learnt_here = 0
        self._scanned: list = []
        self.server = server
        self.key_template = key_template
        self.lease = float(lease)
        self.idle_poll = float(idle_poll)
        self.idle_poll_max = float(idle_poll_max)
        self._idle_delay = self.idle_poll
        self.output_dir = Path(output_dir)
        self.redis: RedisFrontier | None = None
        #: fingerprint -> _GONE, or the priority it waits with at least (a local view
        #: of the shared seen set: see enqueue_request)
        self._known = FingerprintTable(values=True)
        self._responded: set[int] = set()  # in flight here, response in, item pending
        #: fetched here as a piece of the page (a 206 that is no whole page): an error of
        #: this run, kept in flight in Redis (its lease renewed, so that no worker fetches
        #: it again meanwhile) and released at the close, for a later run to fetch again
        self._pieces: set[int] = set()
        #: with a page store: response URL fingerprint -> request fingerprint of the pages
        #: waiting for ``pages_stored``; their items went through the pipelines
        #: (``_through``), or the store stopped and dropped them (``_unstored``)
        self._awaiting: dict[int, int] = {}
        self._through: set[int] = set()
        self._unstored: set[int] = set()
        self._reconcile = False  # the last worker of this output folder died
        #: stored pages of an earlier run whose "done" had not reached Redis (marked now)
        self.reconciled = 0
        self._counts = Counts()
        self._down_since: float | None = None
        #: the shared frontier vanished from Redis (FrontierLost): the worker stops
        self._lost = False
        #: the error that found the frontier lost (the store's checkpoints return it)
        self._lost_error: FrontierLost | None = None
        #: Redis refused the frontier's writes (its maxmemory, MISCONF, READONLY...): the
        #: worker stops, keeping its staged changes (RedisRefused)
        self._full: RedisRefused | None = None
        self._closing = False
        self._connected = False
        self._renewer: Any = None
        self._poke: Any = None
        self.pushed = 0
        self.ignored = 0
        self.released = 0

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        s = crawler.settings
        warn_ignored_settings(s)
        name = str(get(s, "FOCUSED_STRATEGY")).strip()
        return cls(
            server=connect(s),
            key_template=str(get(s, "FOCUSED_REDIS_KEY")),
            lease=get(s, "FOCUSED_REDIS_LEASE"),
            output_dir=str(get(s, "FOCUSED_OUTPUT_DIR")),
            strategy=name,
            anneal=strategy_class(name).anneal,
            t0=get(s, "FOCUSED_SA_T0"),
            alpha=get(s, "FOCUSED_SA_ALPHA"),
            t_min=get(s, "FOCUSED_SA_T_MIN"),
            k=get(s, "FOCUSED_SA_K"),
            seed=get(s, "FOCUSED_SEED"),
            stats=crawler.stats,
            crawler=crawler,
            host_aware=get(s, "FOCUSED_HOST_AWARE"),
            host_scan=get(s, "FOCUSED_HOST_SCAN"),
            model_every=get(s, "FOCUSED_REDIS_MODEL_EVERY"),
            model_young=get(s, "FOCUSED_REDIS_MODEL_YOUNG"),
            rescore_budget=get(s, "FOCUSED_RESCORE_BUDGET"),
            rescore_chunk=get(s, "FOCUSED_REDIS_RESCORE_CHUNK"),
            partitions=get(s, "FOCUSED_REDIS_PARTITIONS"),
            wait_replicas=get(s, "FOCUSED_REDIS_WAIT"),
            waste_recheck=get(s, "FOCUSED_WASTE_SHAPE_RECHECK"),
            wait_for_links=get(s, "FOCUSED_WAIT_FOR_LINKS"),
            dupefilter_debug=s.getbool("DUPEFILTER_DEBUG"),
            scheduler_debug=s.getbool("SCHEDULER_DEBUG"),
        )

    def key_for(self, spider: Spider) -> str:
        """The key prefix: ``key_template`` with ``%(spider)s`` (scrapy-redis's
        placeholder) and ``%(topic)s`` filled in (``{spider}`` / ``{topic}`` work too);
        without a topic, a trailing ``:`` is dropped (``alpha`` for spider ``alpha``)."""
        topic = getattr(getattr(spider, "topic", None), "name", "") or getattr(
            spider, "topic_arg", ""
        )
        return frontier_key(self.key_template, spider.name, str(topic))

    def crawl_record(self, spider: Spider) -> dict[str, str]:
        """What this worker's crawl is (:func:`~focused.distributed.frontier.check_crawl`):
        its spider, its topic if it has one, its strategy."""
        topic = getattr(getattr(spider, "topic", None), "name", "") or getattr(
            spider, "topic_arg", ""
        )
        record = {"spider": spider.name, "topic": str(topic), "strategy": self.strategy}
        return {k: v for k, v in record.items() if v}

    def _signals(self) -> list[tuple[Any, object]]:
        """What the scheduler listens to: ``frontier_rescore`` (one per learnt page:
        the shared model's round trips, :meth:`_on_learnt`), the page store's signals
        (a page is done in Redis right after the store committed it) and the items'."""
        return [
            (self._on_learnt, focused_signals.frontier_rescore),
            (self._on_response, signals.response_received),
            (self._on_scraped, signals.item_scraped),
            (self._on_dropped, signals.item_dropped),
            (self._on_item, signals.item_error),
            (self._on_item, signals.spider_error),
            (self._on_skipped, focused_signals.page_skipped),
            (self._on_scraped, focused_signals.page_aliased),  # done once its alias is stored
            (self._on_store_opened, focused_signals.page_store_opened),
            (self._on_stored, focused_signals.pages_stored),
            (self._on_checkpoint, focused_signals.frontier_checkpoint),
            (self._on_download_failed, focused_signals.download_failed),
            (self._on_links_queued, focused_signals.links_queued),
        ]

    # --- life cycle -----------------------------------------------------------------
    def open(self, spider: Spider) -> None:
        self.spider = spider
        self.redis = RedisFrontier(
            self.server,
            self.key_for(spider),
            lease=self.lease,
            dump_extra=self._dump_extra,
            load_extra=self._load_extra,
            whole=_keeps_request,
            partitions=self.partitions,
            wait_replicas=self.wait_replicas,
        )
        self.frontier = self.redis  # the base class's stats and rescoring read it
        try:
            self.redis.open(self.crawl_record(spider))
        except (RedisUnavailable, RedisLayoutError) as exc:
            # Not CloseSpider: raised here, Scrapy 2.19 then fails to close its scraper.
            logger.error("focused: error: %s", exc)
            self.redis = None
            self._closing = True
            if self._call_later(0, self._stop, REDIS_UNREACHABLE) is None:
                self._stop(REDIS_UNREACHABLE)
            return
        warning = self.redis.eviction_warning()
        if warning:
            logger.warning("%s", warning)
        outbox = self.output_dir / self.OUTBOX_NAME
        restored = self.redis.restore_outbox(outbox)
        self._warn_other_outboxes(outbox)
        step = self._sync()
        if restored and step is not None:
            logger.info("focused: sent %d changes saved by an earlier run to Redis", restored)
        self._reconcile = self._should_reconcile()
        self._write_marker(closed=False)
        self._open_model()
        if self.crawler is not None:
            self._connected = True
            for handler, signal in self._signals():
                self.crawler.signals.connect(handler, signal=signal)
        self._wasteful = self._waste_check()
        if is_reactor_installed():  # always in a crawl; not for a test's get_crawler()
            from twisted.internet import task

            self._renewer = task.LoopingCall(self._tick)
            self._renewer.start(max(0.2, self.lease / 3), now=False)
        status = self.redis.status()
        logger.info(
            "focused: shared frontier %s at %s: %d waiting, %d in flight, %d done, %d seen",
            self.redis.key,
            describe(self.server),
            status["waiting"],
            status["in_flight"],
            status["done"],
            status["seen"],
        )
        self._update_stats()

    def close(self, reason: str) -> None:
        self._closing = True
        if self.gate is not None:
            self.gate.close()
        if self._renewer is not None and self._renewer.running:
            self._renewer.stop()
        if self._poke is not None and self._poke.active():
            self._poke.cancel()
        if self._connected and self.crawler is not None:
            for handler, signal in self._signals():
                self.crawler.signals.disconnect(handler, signal=signal)
        red = self.redis
        if red is None:
            return
        if self._lost:  # nothing to hand back to; the marker stays "not closed"
            self._update_stats()
            red.close()
            return
        unreleased = self._hand_back(red)
        self._close_model()
        step = self._sync(final=True)
        if self._lost:  # found at the last round trip: the marker stays "not closed"
            self._update_stats()
            red.close()
            return
        self._leave_unsent(red, step, unreleased)
        self._write_marker(closed=True)  # every "done" is in Redis or in the outbox
        c = self._counts
        logger.info(
            "focused: left the shared frontier %s in Redis (not cleared): %d waiting,"
            " %d in flight, %d done, %d errors",
            red.key,
            c.waiting,
            c.in_flight,
            c.done,
            c.error,
        )
        self._update_stats()
        red.close()

    def _hand_back(self, red: RedisFrontier) -> int:
        """At the close: this worker's fetched URLs done, the others released; the number
        left to their lease instead. Redis unreachable at the last round trip: the leases
        may have run out since (no renewal got through), so a release could take a URL
        handed to another worker; the lease hands them back (RedisFrontier.stage_release)."""
        late = self._down_since is not None
        unreleased = 0
        for fp in [*self.in_flight, *self._pieces]:  # fetched: done; else back to the queue
            if fp in self._responded and fp not in self._unstored:
                # (with a page store, the store closed first: a page it has not
                # confirmed by now was not meant to be stored)
                self._finish(fp, DONE)
                continue
            self.in_flight.discard(fp)
            self._pieces.discard(fp)  # a piece: for a later run to fetch again
            if late:
                unreleased += 1
            else:
                red.stage_release(fp)
                self.released += 1
        return unreleased

    def _warn_other_outboxes(self, path: Path) -> None:
        """Changes an earlier run saved for another frontier key (``FOCUSED_REDIS_KEY``
        changed since) stay in the outbox file, for a crawl of that key: said once."""
        assert self.redis is not None
        for key, ops in sorted(load_outboxes(path).items()):
            if key != self.redis.key:
                logger.warning(
                    "focused: %s holds changes saved for the shared frontier %s (%d), not"
                    " for this crawl's %s: kept there, and sent when a crawl of that key"
                    " starts with this output folder",
                    path,
                    key,
                    len(ops),
                    self.redis.key,
                )

    def _leave_unsent(self, red: RedisFrontier, step: Step | None, unreleased: int) -> None:
        """After the close's round trip: what did not reach Redis goes to the outbox file
        (pushes, done and error marks; never a release)."""
        if step is None:  # the releases staged at the close are not sent (not saved either)
            failed = sum(op[0] == "r" for op in red.outbox)
            self.released -= failed
            unreleased += failed
        if step is None and red.pending:
            path = self.output_dir / self.OUTBOX_NAME
            n = red.save_outbox(path)
            log = logger.warning if self._full is not None else logger.error
            log(
                "%s at the close; %d changes saved in %s and sent at the next start; %d"
                " unfetched URLs not released (their lease hands them back)",
                "focused: Redis still refused the writes"
                if self._full is not None
                else "focused: error: Redis unreachable",
                n,
                path,
                unreleased,
            )
        elif unreleased:
            logger.warning(
                "focused: %d unfetched URLs not released: Redis was unreachable before the"
                " close (their lease hands them back)",
                unreleased,
            )

    def has_pending_requests(self) -> bool:
        if self.redis is None or self._lost or self._full:  # (the spider is closing)
            return False
        if self._down_since is not None:
            return not self._closing  # unknown: do not let the spider finish
        if self.in_flight:
            self._settle()  # fetched here and over: done or failed
        if self._pending() == 0 or self.redis.pending:
            self._sync(refresh=self._pending() == 0)  # every partition before "nothing left"
            if self._down_since is not None:
                return True
        return self._pending() > 0

    def _pending(self) -> int:
        """Requests the crawl still has for this worker: the waiting ones and the ones in
        flight at *other* workers (a page of theirs may bring new links; a lease that
        runs out brings the URL back). This worker's own in-flight requests are the
        engine's (it is not idle while it has some), as for Scrapy's scheduler."""
        c = self._counts
        return c.waiting + max(0, c.in_flight - len(self.in_flight) - len(self._pieces))

    def __len__(self) -> int:
        """The shared queue's waiting requests (every worker's), once this worker's staged
        changes are in (:meth:`queues`)."""
        return self.queues()["waiting"]

    # --- in -------------------------------------------------------------------------
    def enqueue_request(self, request: Request) -> bool:
        """Stage the request for Redis; ``False`` when it is a duplicate.

        The push itself travels with the next round trip, so the answer comes from what
        this worker knows: a URL it pushed, picked or learnt was finished, found again
        without a higher priority, is a duplicate (Redis would ignore it: nothing is
        sent). A URL first queued by *another* worker is known to be a duplicate only
        once Redis said so (counted in ``focused/dupefilter/filtered``): the first time
        it comes here, ``True``.
        """
        if self.redis is None or self._lost:  # unreachable at the start, lost: closing
            return False
        fp = self._fingerprint(request)
        redirects = request.meta.get("redirect_urls")
        if redirects:
            self._finish(url_fingerprint(redirects[-1]), DONE)
        priority = clamp_priority(request.priority)
        known = self._known.get(fp, _UNKNOWN)
        if fp in self.in_flight:
            if not request.dont_filter:
                return self._filter(request)
            self.in_flight.discard(fp)  # a retry: back to waiting
            self._responded.discard(fp)
            self.requeued += 1
        elif request.dont_filter:  # never filtered: Redis queues a copy if it waits
            self.redis.stage_copy(self._to_entry(request, fp))
            self._known.set(fp, priority)
            return True
        elif priority <= known:
            if known != _GONE:  # waits with a priority at least as high: Redis ignores it
                self.ignored += 1
            return self._filter(request)
        self.redis.stage_push(self._to_entry(request, fp), bool(request.dont_filter))
        # dont_filter queues it again with this priority; a push keeps the higher one
        self._known.set(fp, priority if request.dont_filter else max(known, priority))
        return True

    # --- out ------------------------------------------------------------------------
    def next_request(self) -> Request | None:
        """The shared pick; with ``FOCUSED_HOST_AWARE`` the worker sends the hosts its
        downloader cannot take a request for now (:class:`~focused.scheduler.HostGate`)
        and gets the best URL of the others (``None`` while every waiting URL's host is
        busy: the engine asks again when a download ends or a delay runs out)."""
        if self._links_pending():
            return None
        mode = ANNEAL if self.annealer is not None else BEST
        a = self.annealer
        while True:
            busy, delayed = self.gate.blocked() if self.gate is not None else (set(), set())
            self._annealer_before = (a.temperature, a.picks, a.accepted_worse) if a else None
            step = self._sync(mode, busy_hosts=busy, delayed_hosts=delayed)
            if step is None:
                return None
            entry = step.entry
            if entry is None:
                if busy and step.counts.waiting > 0 and self.gate is not None:
                    self.gate.wake_later()  # URLs wait for a busy host here
                    if self.stats is not None:
                        self.stats.set_value("focused/scheduler/hosts_busy", self.gate.waits)
                if step.counts.in_flight > len(self.in_flight) + len(self._pieces):
                    self._poke_later()  # others still fetch: ask again soon
                return None
            if entry.extra is LOST:  # could not be serialised when pushed
                self.redis.stage_finish(entry.fp, error=True)  # type: ignore[union-attr]
                continue
            if self._wasteful is not None and self._requeue_shared(entry, step):
                continue
            break
        request = self._picked(entry)
        if self.gate is not None:
            self.gate.handed_out(request)
        self._idle_delay = self.idle_poll
        self.in_flight.add(entry.fp)
        self._known.set(entry.fp, _GONE)
        self.dequeued += 1
        self._update_stats()
        return request

    def _requeue_shared(self, entry: Entry, step: Step) -> bool:
        """Whether the picked ``entry`` goes back into the shared queue at the bottom
        instead of being fetched: its URL shape became wasteful (this worker's
        ``frontier_waste_check`` predicate) after its link was found. As in memory
        (:meth:`~focused.scheduler.FocusedScheduler._requeue_wasteful`: the same demoted
        entry, an annealing pick taken back, locally and in Redis), and at most once per
        entry, whichever worker judges it: the re-queued entry is flagged
        :data:`~focused.distributed.frontier.WASTE_REQUEUED` (kept by a promotion), and
        a flagged one is fetched when it comes up. The re-queue goes out with the next
        pick, in the same Lua call, before it (the entry is still in flight under this
        worker's lease); if that round trip fails it is dropped (:meth:`_sync`) and the
        lease gives the URL back in its old place. Counted in
        ``focused/scheduler/waste_requeued`` once Redis applied it."""
        red = self.redis
        if red is None or entry.flags & WASTE_REQUEUED:
            return False
        demoted = self._waste_demoted(entry)
        if demoted is None:
            return False
        demoted = dataclasses.replace(demoted, flags=demoted.flags | WASTE_REQUEUED)
        annealed = self.annealer is not None and step.picks >= 0
        if annealed and self._annealer_before is not None:
            a = self.annealer
            a.temperature, a.picks, a.accepted_worse = self._annealer_before  # type: ignore[union-attr]
        red.stage_waste(demoted, annealed=annealed, accepted_worse=annealed and step.accepted_worse)
        self._known.set(entry.fp, demoted.priority)  # it waits with that priority now
        return True

    def _picked(self, entry: Any) -> Request:
        """The request of a picked entry: a whole request promoted while it waited takes
        the entry's priority; a ``dont_filter`` copy (:data:`COPIED`) carries the copy's
        fingerprint in ``meta`` (as the in-memory scheduler's copies do), so that its
        response and retries find it."""
        request = self._to_request(entry)
        if _keeps_request(entry) and clamp_priority(request.priority) != entry.priority:
            request.priority = entry.priority
        if entry.flags & DONT_FILTER and self._fingerprint(request) != entry.fp:
            request.meta[COPY_META] = (entry.fp, request.url)
        return request

    def _sync(
        self,
        mode: int = NO_PICK,
        final: bool = False,
        busy_hosts: set[str] | None = None,
        delayed_hosts: set[str] | None = None,
        refresh: bool | None = None,
    ) -> Step | None:
        """One round trip; ``None`` (and the staged changes kept) when Redis is down.
        ``busy_hosts``: the pick prefers the URLs of other hosts, and never takes one of
        ``delayed_hosts``; ``refresh``: ask every partition (see
        :meth:`RedisFrontier.sync`)."""
        red = self.redis
        if red is None or self._lost:
            return None
        try:
            annealer = self.annealer if mode == ANNEAL else None
            step = red.sync(
                mode,
                annealer,
                busy_hosts or (),
                self.host_scan,
                delayed_hosts or (),
                refresh=refresh,
            )
        except (FrontierLost, RedisRefused, *REDIS_DOWN) as exc:
            self._round_trip_failed(red, exc, final)
            return None
        if self._down_since is not None:
            logger.info("focused: Redis is back after %.1f s", time.monotonic() - self._down_since)
            self._down_since = None
            self._idle_delay = self.idle_poll
            self._poke_later()  # the engine may be waiting for its next heartbeat
        self._counts = step.counts
        for op, fp, code in step.results:
            if op in _WASTE:
                self.waste_requeued += int(code == 1)
                continue
            if op not in _PUSHES:
                continue
            if code in _QUEUED:
                self.pushed += 1
                self.enqueued += 1
            else:
                self.ignored += 1
                self._filter()
                if code == IGNORED_GONE:
                    self._known.set(fp, _GONE)
        self._update_stats()
        return step

    def _round_trip_failed(self, red: RedisFrontier, exc: BaseException, final: bool) -> None:
        """A round trip that did not go through: the frontier lost, Redis full (both stop
        the worker), or Redis unreachable (the staged changes are kept and retried; after
        ``lease`` seconds the worker stops)."""
        if isinstance(exc, FrontierLost):
            self._frontier_lost(red, exc)
            return
        if isinstance(exc, RedisRefused):
            self._redis_full(red, exc)
            return
        red.drop_waste()  # sent right after their pick or never (stage_waste)
        now = time.monotonic()
        if self._down_since is None:
            self._down_since = now
            logger.error(
                "focused: error: %s; keeping %d changes and retrying for %.0f s",
                unreachable_message(self.server, exc),
                red.pending,
                self.lease,
            )
        elif now - self._down_since > self.lease and not self._closing and not final:
            self._stop(REDIS_UNREACHABLE)

    def _frontier_lost(self, red: RedisFrontier, exc: FrontierLost) -> None:
        """The shared frontier vanished (Redis restarted without its data, its keys deleted
        or evicted): one error line, the staged changes dropped (sent, they would rebuild
        a partial frontier that the workers would take for the whole crawl), and the
        spider closes with reason ``redis_frontier_lost`` (exit status 1). The output
        folder's marker stays "not closed": a worker started again here after the frontier
        was restored (a backup) marks the pages its store holds done."""
        self._lost = True
        self._lost_error = exc
        self._down_since = None
        dropped = red.discard_staged()
        line = f"focused: error: {exc} ({dropped} unsent changes dropped)"
        logger.error(line)
        # exit status 1 even when found at the close's last round trip (the reason is
        # set by then), and no second line from the store refusing to commit
        mark_failed(self.crawler, line)
        # the next start here must not take the frontier it finds then (restored from an
        # older copy) for the one whose links the pages stored here sent
        self._write_marker(closed=False, lost=True)
        self.in_flight.clear()
        self._pieces.clear()
        if not self._closing:
            self._stop(REDIS_FRONTIER_LOST)

    def _redis_full(self, red: RedisFrontier, exc: RedisRefused) -> None:
        """Redis refused a round trip at its ``maxmemory`` (``noeviction``), or for another
        reason (``MISCONF``, ``READONLY``, ``NOPERM``): nothing of it was written. One
        error line (once), the staged changes kept (the close saves them in the outbox
        file if Redis still refuses them then), and the spider closes with reason
        ``redis_out_of_memory`` (``redis_refused_writes``; exit status 1): retrying would
        not help, Redis frees no memory by itself, and a page whose links cannot be sent
        must not be stored (:meth:`_on_checkpoint`)."""
        red.drop_waste()  # sent right after their pick or never (stage_waste)
        if self._full is not None:
            return
        self._full = exc
        line = f"focused: error: {exc}"
        logger.error(line)
        mark_failed(self.crawler, line)  # exit status 1, and no second line from the store
        if not self._closing:
            full = isinstance(exc, RedisFull)
            self._stop(REDIS_OUT_OF_MEMORY if full else REDIS_REFUSED_WRITES)

    def _stop(self, reason: str) -> None:
        self._closing = True
        logger.info("focused: closing the spider (%s)", reason)
        engine = self._engine()
        if engine is not None:
            deferred_from_coro(engine.close_spider_async(reason=reason))

    def _poke_later(self) -> None:
        """Make the engine ask for a request again soon (back-off while nothing comes)."""
        if self._closing or (self._poke is not None and self._poke.active()):
            return
        delay = self._idle_delay
        self._idle_delay = min(self.idle_poll_max, 2 * delay)
        self._poke = self._call_later(delay, self._poke_engine)

    @staticmethod
    def _call_later(delay: float, fn: Any, *args: Any) -> Any:
        """``reactor.callLater``; ``None`` when no reactor is installed (a scheduler built
        outside a crawl: importing the reactor here would install the wrong one)."""
        if not is_reactor_installed():
            return None
        from twisted.internet import reactor

        return reactor.callLater(delay, fn, *args)  # type: ignore[attr-defined]

    def _poke_engine(self) -> None:
        slot = getattr(self._engine(), "_slot", None)
        nextcall = getattr(slot, "nextcall", None)
        if nextcall is not None:
            nextcall.schedule()

    def _tick(self) -> None:
        """Every lease/3: renew the leases of this worker's in-flight URLs, flush."""
        if self.redis is None or self._lost:
            return
        if self.in_flight or self._pieces:
            self.redis.stage_renew(self.in_flight | self._pieces)
        self._sync()
        if self._down_since is not None:
            self._poke_later()

    def _settle(self) -> None:
        """When this worker downloads and scrapes nothing, its in-flight URLs are over.

        The engine downloads a request as soon as :meth:`next_request` hands it out, so
        with the downloader and the scraper idle each one ended: with a response whose
        callback yielded no item (done), or with a failure no errback of this scheduler
        saw — a request with an errback or a callback of its own, a download middleware
        that dropped it — (error; released, it would be fetched and fail again forever).
        """
        if self.in_flight and self._engine_idle():
            for fp in list(self.in_flight):
                if fp in self._through or fp in self._unstored:
                    continue  # its row may sit in an open transaction / the store stopped
                self._finish(fp, DONE if fp in self._responded else ERROR)

    # --- bookkeeping ----------------------------------------------------------------
    def _finish(self, fp: int, state: int, journal: bool = True) -> None:
        """Move an in-flight URL to the done or error queue (staged, sent with the next
        round trip; no-op if it is not in flight here)."""
        if fp not in self.in_flight or self.redis is None:
            return
        self.in_flight.discard(fp)
        self._responded.discard(fp)
        self._through.discard(fp)
        self._unstored.discard(fp)
        if state == DONE:
            self.done += 1
        else:
            self.errors += 1
        self.redis.stage_finish(fp, error=state != DONE)

    def _on_response(self, response: Response, request: Request, spider: Spider) -> None:
        fp = self._fingerprint(request)
        if fp not in self.in_flight:
            return
        if partial_answer(response, request):  # a piece: an error, fetched again later
            self.in_flight.discard(fp)
            self._responded.discard(fp)
            self._pieces.add(fp)
            self.errors += 1
        elif response.status >= 400:
            self._finish(fp, ERROR)
        elif 200 <= response.status < 300 and isinstance(response, TextResponse):
            self._responded.add(fp)  # done once its item is stored
            if self.waits_for_store:
                self._awaiting[url_fingerprint(response.url)] = fp
        else:
            self._finish(fp, DONE)

    def _responded_fp(self, response: Response | None) -> int | None:
        request = getattr(response, "request", None)
        if request is None:
            return None
        fp = self._fingerprint(request)
        return fp if fp in self._responded else None

    def _done_unstored(self, response: Response | None, fp: int) -> None:
        """Done without a row of the page store (none will come)."""
        if response is not None and self._awaiting:
            self._awaiting.pop(url_fingerprint(response.url), None)
        self._finish(fp, DONE)

    def _on_item(self, response: Response | None = None, **kwargs: Any) -> None:
        """The callback failed or a pipeline raised: no row will come for this page."""
        fp = self._responded_fp(response)
        if fp is not None:
            self._done_unstored(response, fp)

    def _on_skipped(self, response: Response, **kwargs: Any) -> None:
        """A fetched page the spider yields no item for: done (nothing to store)."""
        self._on_item(response)

    def _on_scraped(self, response: Response | None = None, **kwargs: Any) -> None:
        """The item went through the pipelines. Without a page store: done. With one:
        done when the store says it committed the row (:meth:`_on_stored`, before this
        signal unless the row waits in an open transaction, ``FOCUSED_STORE_COMMIT_EVERY``
        > 1)."""
        fp = self._responded_fp(response)
        if fp is None:
            return
        if self.waits_for_store:
            self._through.add(fp)
        else:
            self._finish(fp, DONE)

    def _on_dropped(
        self,
        response: Response | None = None,
        exception: BaseException | None = None,
        **kwargs: Any,
    ) -> None:
        """A pipeline dropped the item: done, unless the page store dropped it because it
        stopped (a full disk): then it is given back to the queue at the close."""
        fp = self._responded_fp(response)
        if fp is None:
            return
        if self.waits_for_store and isinstance(exception, DropItem) and _store_stopped(exception):
            self._unstored.add(fp)
        else:
            self._done_unstored(response, fp)

    def _on_store_opened(self, **kwargs: Any) -> None:
        """A page store opened: a fetched page is done once it committed it. If the last
        worker with this output folder died, the pages it stored whose "done" had not
        reached Redis are marked done now (:meth:`_reconcile_store`)."""
        self.waits_for_store = True
        if self._reconcile:
            self._reconcile = False
            self._reconcile_store()

    def _on_stored(self, urls: list[str], **kwargs: Any) -> None:
        """The page store committed the rows of ``urls``: done, sent to Redis at once
        (one round trip), so that a worker killed now leaves as few stored pages as
        possible with no "done" in Redis."""
        finished = 0
        for url in urls:
            fp = self._awaiting.pop(url_fingerprint(url), None)
            if fp is not None and fp in self._responded:
                self._finish(fp, DONE)
                finished += 1
        if finished:
            self._sync()

    def _reconcile_store(self) -> None:
        """Mark done in Redis every page this output folder's store holds that still
        waits or is in flight there: pages an earlier worker stored right before it was
        killed, whose "done" never reached Redis. A stored page only: its links were
        sent before its row was committed, so nothing is lost; and it is not fetched
        again, unless another worker took it after its lease ran out (then it is in
        flight there and is fetched once more: a duplicate)."""
        red = self.redis
        if red is None:
            return
        before = 0
        for urls in _stored_urls(self.output_dir / PAGES_DB, RECONCILE_BATCH):
            for url in urls:
                red.stage_stored(url, url_fingerprint(url))
            step = self._sync()
            if step is None:  # Redis went away: the staged marks are sent later
                break
            before += sum(1 for op, _, code in step.results if op == "d" and code)
        self.reconciled = before
        if before:
            logger.warning(
                'focused: %d pages stored here by a worker that died had no "done" in'
                " Redis: marked done now (not fetched again)",
                before,
            )
        if self.stats is not None:
            self.stats.set_value("focused/redis/reconciled", before)

    # --- the output folder's marker ----------------------------------------------------
    def _should_reconcile(self) -> bool:
        """Whether the last worker of this output folder died with stored pages whose
        "done" may not have reached Redis (:meth:`_reconcile_store`): its marker is not
        "closed". Not when that worker stopped because the frontier was lost (``lost``),
        nor when the frontier's epochs are not the ones it recorded (a new frontier): the
        frontier in Redis is then another or an older copy of it, which may lack the
        links of the pages stored here (sent after that copy was taken); marked done, they
        would never be fetched. Those pages are fetched again instead (stored once)."""
        path = self.output_dir / self.MARKER_NAME
        try:
            marker = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return True  # none (a first run: the store is empty) or unreadable
        red = self.redis
        if not isinstance(marker, dict) or marker.get("key") != getattr(red, "key", None):
            return True
        if marker.get("closed"):
            return False
        epochs = marker.get("epochs")
        other = red is not None and epochs is not None and epochs != red.epochs
        if marker.get("lost") or other:
            logger.warning(
                "focused: the last worker of %s stopped on %s: the pages stored here are"
                " not marked done in Redis; those that wait there are fetched again, so"
                " that their links are followed (each page stays stored once)",
                self.output_dir,
                "a lost shared frontier" if marker.get("lost") else "another shared frontier",
            )
            return False
        return True

    def _write_marker(self, closed: bool, lost: bool = False) -> None:
        red = self.redis
        if red is None:
            return
        path = self.output_dir / self.MARKER_NAME
        tmp = path.with_name(path.name + ".tmp")
        marker = {"key": red.key, "closed": closed, "epochs": red.epochs, "lost": lost}
        try:
            self.output_dir.mkdir(parents=True, exist_ok=True)
            tmp.write_text(json.dumps(marker), encoding="utf-8")
            os.replace(tmp, path)
        except OSError as exc:  # the next start reconciles (a little more work)
            logger.warning("focused: could not write %s: %s", path, exc)

    # --- one model for all workers (focused.distributed.model) ----------------------
    def _open_model(self) -> None:
        """Share the strategy's model (``learning``): load what the crawl learnt so far
        (a late worker, a resumed crawl) and record what this worker learns."""
        learner = self._learner()
        if learner is None or not self.model_every or self.redis is None:
            return
        learner.share()
        self._initial_model = learner.model_state()
        self.model = SharedModel(self.server, self.redis.key, layout=self.redis.layout)
        try:
            delta = self.model.snapshot()
        except REDIS_DOWN:
            return
        if not delta.empty:
            learner.merge(delta)
            logger.info(
                "focused: loaded the shared model of %s (%d pages learnt)",
                self.redis.key,
                delta.pages,
            )
        if self.stats is not None:
            self.stats.set_value("focused/model/loaded_pages", delta.pages)

    def _on_learnt(self, rescorer: Any, **kwargs: Any) -> int:
        """One more learnt page here: every ``model_every`` (every page while the crawl's
        model has learnt fewer than ``model_young`` pages), one round trip that sends
        what this worker learnt, merges the others' and, for the rescoring lease holder,
        scans the next entries to rescore; their new priorities go out in a second round
        trip at once. Returns the entries moved."""
        self._learnt_here += 1
        if self.model is None:
            return 0
        if self._learnt_here % self.model_every and not self._young():
            return 0
        return self._model_sync(rescorer)

    def _young(self) -> bool:
        learner = self._learner()
        return learner is not None and learner.terms.pages < self.model_young

    def _scan_size(self, learner: Any) -> int:
        """Entries to scan: ``FOCUSED_RESCORE_BUDGET`` per page the crawl learnt since
        this worker's last scan (the in-memory frontier's pace), at least
        ``rescore_chunk`` and at most :data:`SCAN_CAP` times that."""
        chunk, budget = self.rescore_chunk, self.rescoring.budget
        if not budget:
            return chunk
        learnt = max(0, int(learner.terms.pages) - self._pages_at_scan)
        return max(chunk, min(SCAN_CAP * chunk, budget * learnt))

    def _model_sync(self, rescorer: Any = None, final: bool = False) -> int:
        learner, model = self._learner(), self.model
        if learner is None or model is None:
            return 0
        before = model.moved
        scan = (
            0 if final or rescorer is None or not self.rescore_chunk else self._scan_size(learner)
        )
        try:
            deltas, scanned = model.sync(learner.take_delta(), scan)
            self._merge(learner, model, deltas)
            if scanned and rescorer is not None:
                self._pages_at_scan = int(learner.terms.pages)
                if model.stage_rescore(scanned, rescorer):
                    # written now, not with the next report: the priorities are fresh
                    deltas, _ = model.sync(learner.take_delta(), 0)
                    self._merge(learner, model, deltas)
        except REDIS_DOWN:
            return 0
        except ResponseError as exc:  # (the model's counts: kept by the learner, not lost)
            refused = writes_refused(self.server, exc)
            if refused is None:
                raise
            if self.redis is not None:
                self._redis_full(self.redis, refused)
            return 0
        if self.stats is not None:
            self.stats.set_value("focused/redis/model_round_trips", model.round_trips)
            self.stats.set_value("focused/model/merged_pages", learner.merged_pages)
            self.stats.set_value("focused/frontier/rescores", model.rescore_rounds)
            self.stats.set_value("focused/frontier/rescore_moved", model.moved)
        return model.moved - before

    def _merge(self, learner: Any, model: SharedModel, deltas: list | None) -> None:
        """Merge the other workers' reports; ``None``: this worker fell behind the log,
        so it reloads the whole shared model."""
        if deltas is None:
            learner.load_model_state(self._initial_model or {})
            learner.merge(model.snapshot())
            return
        for delta in deltas:
            learner.merge(delta)

    def _close_model(self) -> None:
        if self.model is None:
            return
        self._model_sync(final=True)
        # (the rescoring lease runs out by itself: a Redis that refuses the write, or
        # cannot be reached, must not keep the close from saving the unsent changes)
        with contextlib.suppress(*REDIS_DOWN, ResponseError):
            self.model.release()

    def _on_checkpoint(self, **kwargs: Any) -> FrontierLost | RedisRefused | None:
        """Before the page store commits a page: its links go to Redis first. Returns the
        :class:`FrontierLost` error when the frontier is lost (found now or before) while
        links wait to be sent: they are dropped, so the store must not commit the page
        (:data:`focused.signals.frontier_checkpoint`), or a resume against a restored
        frontier would take it for done with its links never followed. Likewise the
        :class:`RedisRefused` error when Redis refuses the links (its maxmemory...): the page is
        fetched again at the next start instead of being stored with its links unsent."""
        red = self.redis
        if red is None or not any(op[0] in "pP" for op in red.outbox):
            return None
        if not self._lost and self._full is None:
            self._sync()
        if self._lost:
            return self._lost_error
        if self._full is not None and any(op[0] in "pP" for op in red.outbox):
            return self._full
        return None

    # --- stats ----------------------------------------------------------------------
    def queues(self) -> dict[str, int]:
        """The shared queues' sizes, with this worker's staged changes sent first: one
        round trip when some are staged (not while Redis is down), none otherwise. (The
        engine never asks; the stats, updated right after each round trip, need none.)"""
        if self.redis is not None and self.redis.pending and self._down_since is None:
            self._sync()
        c = self._counts
        return {"waiting": c.waiting, "in_flight": c.in_flight, "done": c.done, "error": c.error}

    def _update_stats(self) -> None:
        super()._update_stats()
        stats = self.stats
        red = self.redis
        if stats is None or red is None:
            return
        stats.set_value("focused/redis/round_trips", red.round_trips)
        stats.set_value("focused/redis/pushed", self.pushed)
        stats.set_value("focused/redis/ignored", self.ignored)
        stats.set_value("focused/redis/in_flight_here", len(self.in_flight))
        stats.set_value("focused/redis/released", self.released)
        stats.set_value("focused/frontier/promoted", red.promoted)
        if red.partitions > 1:
            stats.set_value("focused/redis/partitions", red.partitions)
            stats.set_value("focused/redis/pick_retries", red.pick_retries)
        if red.wait_replicas:
            stats.set_value("focused/redis/waits", red.waits)
            stats.set_value("focused/redis/waits_short", red.waits_short)


def _store_stopped(exc: DropItem) -> bool:
    """The page store's own drop once it stopped (:func:`focused.pipelines._not_stored`)."""
    return str(exc).startswith("not stored:")


def _stored_urls(db: Path, batch: int) -> Iterator[list[str]]:
    """The URLs a page store at ``db`` holds (its pages' and its aliases'), ``batch`` at
    a time (read-only; nothing when there is no store)."""
    if not db.is_file():
        return
    conn = sqlite3.connect(f"{db.resolve().as_uri()}?mode=ro", uri=True)
    try:
        aliases = conn.execute("SELECT 1 FROM sqlite_master WHERE name='aliases'").fetchone()
        cur = conn.execute(
            "SELECT url FROM pages UNION ALL SELECT url FROM aliases"
            if aliases
            else "SELECT url FROM pages"
        )
        while rows := cur.fetchmany(batch):
            yield [str(u) for (u,) in rows]
    except sqlite3.OperationalError:
        return
    finally:
        conn.close()


def _keeps_request(entry: Any) -> bool:
    """The entry keeps its whole request (not a plain one rebuilt from its fields)."""
    return isinstance(entry.extra, dict) and "request" in entry.extra
