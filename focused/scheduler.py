"""The focused crawler's Scrapy scheduler: the four queues of seed 000 in one place."""

from __future__ import annotations

import logging
import pickle
from pathlib import Path
from typing import TYPE_CHECKING, Any

from scrapy import Request, signals
from scrapy.core.scheduler import BaseScheduler
from scrapy.utils.job import job_dir
from scrapy.utils.request import fingerprint as request_fingerprint
from scrapy.utils.request import request_from_dict

from focused import signals as focused_signals
from focused.defaults import get
from focused.frontier.journal import DONE, ERROR, IN_FLIGHT, WAITING, Journal, Row, stored_urls
from focused.frontier.memory import META_EVIDENCE, Entry, Frontier, MemoryFrontier, Rescorer
from focused.frontier.seen import SeenSet, url_fingerprint
from focused.meta import ANCHOR_RELEVANCE, DEPTH, HOPS, LINK_VALUE, PARENT_URL, M
from focused.output.store import DB_NAME as PAGES_DB
from focused.ranking.annealing import Annealer
from focused.strategies import strategy_class

if TYPE_CHECKING:
    from typing import Self

    from scrapy.crawler import Crawler
    from scrapy.http import Response
    from scrapy.spiders import Spider
    from scrapy.statscollectors import StatsCollector
    from twisted.python.failure import Failure

logger = logging.getLogger(__name__)

#: Entry flag bits
DONT_FILTER = 1
REFERER = 2  # the request had exactly ``Referer: <parent_url>``
#: meta keys packed into the compact entry (all others go to ``extra``)
PACKED_META = frozenset({DEPTH, LINK_VALUE, M, HOPS, ANCHOR_RELEVANCE, PARENT_URL, META_EVIDENCE})
#: meta keys a download leaves behind that must not follow a request back to the queue
TRANSIENT_META = frozenset({"download_slot", "download_latency"})


class FocusedScheduler(BaseScheduler):
    """Frontier, seen-URL set and the waiting / in-flight / done / error queues (seed 000).

    Replaces Scrapy's scheduler (``SCHEDULER = "focused.scheduler.FocusedScheduler"``).
    Requests are stored as compact :class:`~focused.frontier.memory.Entry` records (URL,
    priority, ``meta["link_value"]``, ``depth``, ``m``, ``hops``, ``anchor_relevance``,
    ``parent_url``, any other meta in ``extra``) and rebuilt as a ``scrapy.Request`` on
    the way out, with the spider's default callback. Order: ``priority`` first, then
    first-found first; with an annealing strategy (``FOCUSED_STRATEGY = "annealing"``)
    the pick is the simulated-annealing choice among the top ``FOCUSED_SA_K`` (seed 001,
    :mod:`focused.ranking.annealing`). A URL found again with a higher priority while it waits is
    promoted, never queued twice; any other URL seen before is dropped. ``DUPEFILTER_CLASS``
    is not used.

    ``dont_filter``: a request for a URL that is in flight is let through only with
    ``dont_filter`` (a retry: the URL goes back to waiting); for a URL done in this run
    ``dont_filter`` queues it again, but never for one done in an earlier run of the same
    ``JOBDIR`` (no page is fetched twice across a pause/resume).

    Requests that are not plain (a callback other than the spider's ``parse``, an
    errback, ``cb_kwargs``, a method other than GET, a body, headers other than
    ``Referer``) are kept whole in the entry's ``extra``; with ``JOBDIR`` they are
    journaled with ``Request.to_dict(spider=...)``, so a callback must be a spider
    method (an unserialisable one is lost on resume: stat
    ``focused/scheduler/unserializable``).

    The scheduler gives every request it hands out an errback that records a download
    failure in the error queue and returns the failure unchanged, so Scrapy logs and
    handles it as it would without one. A response with status >= 400 also counts as an
    error; a redirect counts the redirecting URL as done.

    ``JOBDIR``: every change is journaled in ``JOBDIR/frontier.sqlite3`` (SQLite, WAL;
    :mod:`focused.frontier.journal`) and committed on each ``next_request``, at each
    :data:`focused.signals.frontier_checkpoint` (the page store sends it before it
    commits a page) and at close. A crawl started again with the same ``JOBDIR`` gets
    the same frontier, seen set and annealing state; after ``kill -9`` the requests that
    were in flight are queued again unless ``FOCUSED_OUTPUT_DIR/pages.sqlite3`` holds
    their URL. A fetched page is journaled as done only once it is safe: after its item
    went through the pipelines (its links, yielded before it, are journaled by then) and,
    when ``PageStorePipeline`` is in ``ITEM_PIPELINES``, after the store committed it.
    Until then its row says "in flight", which a resume checks against the page store.

    ``FOCUSED_FRONTIER = "redis"`` builds :class:`focused.redis_frontier.RedisScheduler`
    instead (the same scheduler on a frontier shared in Redis).

    Settings: ``FOCUSED_STRATEGY``, ``FOCUSED_SA_T0``, ``FOCUSED_SA_ALPHA``,
    ``FOCUSED_SA_T_MIN``, ``FOCUSED_SA_K``, ``FOCUSED_SEED``, ``FOCUSED_FRONTIER``,
    ``FOCUSED_OUTPUT_DIR``, ``JOBDIR``. Stats: ``focused/queue/waiting``,
    ``focused/queue/in_flight``, ``focused/queue/done``, ``focused/queue/error``,
    ``focused/frontier/memory/promoted``, ``focused/dupefilter/filtered``,
    ``focused/ranking/annealing/accepted_worse``, ``focused/ranking/annealing/temperature``,
    ``focused/scheduler/requeued`` (retries), ``scheduler/enqueued``, ``scheduler/dequeued``.
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
        confirm_with_store: bool = False,
        stats: StatsCollector | None = None,
        crawler: Crawler | None = None,
        frontier: Frontier | None = None,
        seen: SeenSet | None = None,
        rescore_every: int = 0,
        rescore_budget: int = 0,
    ) -> None:
        self.jobdir = jobdir
        self.anneal = anneal
        self.annealer: Annealer | None = Annealer(t0, alpha, t_min, k, seed) if anneal else None
        self.page_store = page_store
        self.confirm_with_store = confirm_with_store
        self.stats = stats
        self.crawler = crawler
        self.frontier: Frontier = frontier if frontier is not None else MemoryFrontier()
        self.seen = seen if seen is not None else SeenSet()
        self.journal: Journal | None = None
        self.spider: Spider | None = None
        self.in_flight: set[int] = set()
        self._fetched: set[int] = set()  # fetched, page item not through the pipelines yet
        self._confirmed_new: list[int] = []  # item through since the last checkpoint
        self._confirmed_old: list[int] = []  # ... since the checkpoint before
        self.done = 0
        self.errors = 0
        self.filtered = 0
        self.requeued = 0
        self.enqueued = 0
        self.dequeued = 0
        self._saved_picks = -1
        self._warned_unserializable = False
        self.rescore_every = max(0, int(rescore_every))
        self.rescore_budget = max(0, int(rescore_budget))
        self.rescorings = 0
        self.rescore_moved = 0
        self._learnt = 0  # pages a rescoring strategy learnt from
        self._learnt_at_rescore = 0

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        s = crawler.settings
        kind = str(get(s, "FOCUSED_FRONTIER")).strip()
        if kind == "redis":
            # The shared frontier (imported here: it needs the redis client library).
            from focused.redis_frontier import RedisScheduler

            if not issubclass(cls, RedisScheduler):
                return RedisScheduler.from_crawler(crawler)  # type: ignore[return-value]
        elif kind != "memory":
            raise ValueError(f"FOCUSED_FRONTIER must be 'memory' or 'redis', got {kind!r}")
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
            confirm_with_store=any(
                "PageStorePipeline" in str(getattr(p, "__name__", p))
                for p in s.getwithbase("ITEM_PIPELINES")
            ),
            stats=crawler.stats,
            crawler=crawler,
            rescore_every=get(s, "FOCUSED_RESCORE_EVERY"),
            rescore_budget=get(s, "FOCUSED_RESCORE_BUDGET"),
        )

    # --- life cycle -----------------------------------------------------------------
    def open(self, spider: Spider) -> None:
        self.spider = spider
        if self.jobdir:
            self.journal = Journal.in_jobdir(self.jobdir)
            self._restore()
        if self.crawler is not None:
            for handler, signal in self._signals():
                self.crawler.signals.connect(handler, signal=signal)
        self._update_stats()

    def close(self, reason: str) -> None:
        if self.crawler is not None:
            for handler, signal in self._signals():
                self.crawler.signals.disconnect(handler, signal=signal)
        if self.journal is not None:
            # A graceful close comes after the engine finished every page and the page
            # store committed its last rows: every fetched page is done.
            for fp in (*self._confirmed_old, *self._confirmed_new, *self._fetched):
                self.journal.set_state(fp, DONE)
            self._save_annealer()
            self.journal.close()
            self.journal = None
            logger.info(
                "focused: frontier saved in %s (%d waiting, %d in flight)",
                self.jobdir,
                len(self.frontier),
                len(self.in_flight),
            )
        self._update_stats()

    def has_pending_requests(self) -> bool:
        return len(self.frontier) > 0

    def __len__(self) -> int:
        return len(self.frontier)

    # --- in -------------------------------------------------------------------------
    def enqueue_request(self, request: Request) -> bool:
        fp = self._fingerprint(request)
        redirects = request.meta.get("redirect_urls")
        if redirects:  # the redirecting URL is handled
            self._finish(url_fingerprint(redirects[-1]), DONE)
        if fp in self.in_flight:
            if not request.dont_filter:
                return self._filter()
            self.in_flight.discard(fp)  # a retry: back to waiting
            self.requeued += 1
        elif not self.seen.add(fp):  # seen before
            if fp not in self.frontier and (
                not request.dont_filter or self._done_in_earlier_run(fp)
            ):
                return self._filter()
        entry = self._to_entry(request, fp)
        if not self.frontier.push(entry):
            return self._filter()
        if self.journal is not None:
            self.journal.push(entry, self._dump_extra(entry.extra, entry.evidence))
        # Counted here, written to the stats once per dequeued request and at close (a
        # stats call costs ~1.5 us, and a page hands over dozens of links).
        self.enqueued += 1
        return True

    def _filter(self) -> bool:
        self.filtered += 1
        return False

    def _done_in_earlier_run(self, fp: int) -> bool:
        if self.journal is None:
            return False
        got = self.journal.state_of(fp)
        return got is not None and got[0] >= DONE and got[1] < self.journal.run

    # --- out ------------------------------------------------------------------------
    def next_request(self) -> Request | None:
        if self.annealer is not None:
            entry = self.frontier.pop_annealed(self.annealer)
        else:
            entry = self.frontier.pop()
        if entry is None:
            self._commit()
            return None
        request = self._to_request(entry)
        self.in_flight.add(entry.fp)
        if self.journal is not None:
            self.journal.set_state(entry.fp, IN_FLIGHT)
        self._commit()
        self.dequeued += 1
        self._update_stats()
        return request

    def _signals(self) -> list[tuple[Any, object]]:
        return [
            (self._on_response, signals.response_received),
            (self._on_item, signals.item_scraped),
            (self._on_item, signals.item_dropped),
            (self._on_item, signals.item_error),
            (self._on_item, signals.spider_error),  # the callback failed: no item comes
            (self._on_checkpoint, focused_signals.frontier_checkpoint),
            (self._on_rescore, focused_signals.frontier_rescore),
            (self._on_skipped, focused_signals.page_skipped),
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
        fp = self._fingerprint(request)
        if response.status >= 400:
            self._finish(fp, ERROR)
        elif fp in self.in_flight:
            # Done, but journaled as done only once its page item went through the
            # pipelines (its links are journaled by then): see _on_item.
            self._finish(fp, DONE, journal=False)
            self._fetched.add(fp)

    def _on_item(self, response: Response | None = None, **kwargs: Any) -> None:
        """The page item of a fetched page left the pipelines (scraped, dropped or failed),
        or the spider callback failed.

        Its links were journaled before it (the spider yields them first). With the page
        store in use, the page's row may still sit in the store's open batch: its done
        state is journaled at the checkpoint after next, when that batch is committed.
        """
        self._confirm(response, via_store=self.confirm_with_store)

    def _on_skipped(self, response: Response, **kwargs: Any) -> None:
        """A fetched page the spider yields no item for: no store row will confirm it, so
        it is journaled as done now (durable at the next journal commit)."""
        self._confirm(response, via_store=False)

    def _confirm(self, response: Response | None, via_store: bool) -> None:
        """Journal a fetched page as done, at once or once the store has committed it."""
        request = getattr(response, "request", None)
        if request is None:
            return
        fp = self._fingerprint(request)
        if fp not in self._fetched:
            return
        self._fetched.discard(fp)
        if via_store:
            self._confirmed_new.append(fp)
        elif self.journal is not None:
            self.journal.set_state(fp, DONE)

    def _on_error(self, failure: Failure) -> Failure:
        request = getattr(failure, "request", None)
        if request is not None:
            self._finish(self._fingerprint(request), ERROR)
        return failure

    def _on_checkpoint(self, **kwargs: Any) -> None:
        """The page store is about to commit: make the journal durable first."""
        if self.journal is not None:
            # Items that went through the pipelines before the previous checkpoint are
            # in the store's committed rows now.
            for fp in self._confirmed_old:
                self.journal.set_state(fp, DONE)
        self._confirmed_old, self._confirmed_new = self._confirmed_new, []
        self._commit(force=True)

    def _on_rescore(self, rescorer: Rescorer, **kwargs: Any) -> int:
        """A strategy that rescores learnt from one more page: re-order the waiting links
        when it is time.

        Every ``rescore_every`` pages, or every ``waiting / rescore_budget`` pages when
        that is longer (a rescore costs O(waiting): at most ``rescore_budget`` entries
        rescored per page on average, so a large frontier is rescored less often). The
        number of entries whose priority changed (0 when it was not time).
        """
        self._learnt += 1
        rescore = getattr(self.frontier, "rescore", None)
        if not self.rescore_every or rescore is None:
            return 0
        interval = self.rescore_every
        if self.rescore_budget:
            interval = max(interval, -(-len(self.frontier) // self.rescore_budget))
        if self._learnt - self._learnt_at_rescore < interval:
            return 0
        self._learnt_at_rescore = self._learnt
        moved = rescore(rescorer)
        self.rescorings += 1
        self.rescore_moved += moved
        if self.stats is not None:
            self.stats.set_value("focused/frontier/memory/rescores", self.rescorings)
            self.stats.set_value("focused/frontier/memory/rescore_moved", self.rescore_moved)
        return moved

    # --- compact entries ------------------------------------------------------------
    @staticmethod
    def _fingerprint(request: Request) -> int:
        if request.method == "GET" and not request.body:
            return url_fingerprint(request.url)
        return int.from_bytes(request_fingerprint(request)[:8], "big", signed=True)

    def _is_plain(self, request: Request) -> bool:
        callback = request.callback
        if callback is not None and callback != getattr(self.spider, "parse", None):
            return False
        if request.errback is not None and request.errback != self._on_error:
            return False
        if request.method != "GET" or request.body or request.cb_kwargs or request.flags:
            return False
        headers = request.headers
        return not headers or (len(headers) == 1 and b"Referer" in headers)

    def _to_entry(self, request: Request, fp: int) -> Entry:
        meta = request.meta
        parent = meta.get(PARENT_URL) or ""
        flags = DONT_FILTER if request.dont_filter else 0
        extra: dict[str, Any] | None = None
        if self._is_plain(request):
            referer = request.headers.get(b"Referer")
            if referer is not None:
                if referer == parent.encode("utf-8"):
                    flags |= REFERER
                else:
                    extra = {"headers": {"Referer": referer}}
            rest = {
                k: v for k, v in meta.items() if k not in PACKED_META and k not in TRANSIENT_META
            }
            if rest:
                extra = {**(extra or {}), "meta": rest}
        else:
            extra = {"request": request}
        return Entry(
            url=request.url,
            fp=fp,
            priority=request.priority,
            value=float(meta.get(LINK_VALUE) or 0.0),
            depth=int(meta.get(DEPTH) or 0),
            m=float(meta.get(M) or 0.0),
            hops=int(meta.get(HOPS) or 0),
            anchor_relevance=float(meta.get(ANCHOR_RELEVANCE) or 0.0),
            parent_url=parent,
            flags=flags,
            extra=extra,
            evidence=meta.get(META_EVIDENCE) or b"",
        )

    def _to_request(self, entry: Entry) -> Request:
        extra = entry.extra or {}
        if "request" in extra:
            return extra["request"]
        meta: dict[str, Any] = {
            DEPTH: entry.depth,
            LINK_VALUE: entry.value,
            M: entry.m,
            HOPS: entry.hops,
            ANCHOR_RELEVANCE: entry.anchor_relevance,
            PARENT_URL: entry.parent_url,
        }
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
            errback=self._on_error,
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
            if not self._warned_unserializable:
                self._warned_unserializable = True
                logger.warning(
                    "focused: a request cannot be journaled and will be lost on resume (%s);"
                    " further ones are only counted",
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

    def _commit(self, force: bool = False) -> None:
        journal = self.journal
        if journal is None:
            return
        self._save_annealer()
        if journal.pending or force:
            journal.commit()

    def _restore(self) -> None:
        journal = self.journal
        assert journal is not None
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
                journal.set_state(row.entry.fp, DONE)
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
        self.frontier.push(row.entry)
        return True

    # --- stats ----------------------------------------------------------------------
    def queues(self) -> dict[str, int]:
        """Sizes of the four queues of seed 000."""
        return {
            "waiting": len(self.frontier),
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
            stats.set_value(
                "focused/ranking/annealing/accepted_worse", self.annealer.accepted_worse
            )
            stats.set_value("focused/ranking/annealing/temperature", self.annealer.temperature)
        if self.requeued:
            stats.set_value("focused/scheduler/requeued", self.requeued)
        stats.set_value("scheduler/enqueued", self.enqueued)
        stats.set_value("scheduler/dequeued", self.dequeued)
        stats.set_value("focused/frontier/memory/promoted", self.frontier.promoted)
        stats.set_value("focused/dupefilter/filtered", self.filtered)
