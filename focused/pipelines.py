"""Item pipelines: store every page, follow recall and precision while crawling."""

from __future__ import annotations

import contextlib
import json
import logging
import os
import sqlite3
import time
from collections import deque
from collections.abc import Callable, Coroutine, Generator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any

from itemadapter import ItemAdapter
from scrapy import signals as scrapy_signals
from scrapy.exceptions import DropItem
from scrapy.utils.defer import maybe_deferred_to_future
from twisted.internet.defer import Deferred
from twisted.python.failure import Failure

from focused import signals as focused_signals
from focused.defaults import get
from focused.items import PageItem
from focused.output.atomic import write_text
from focused.output.child import run_python
from focused.output.metrics import QUEUES, HarvestCurve
from focused.output.record import stored_count, write_record
from focused.output.store import (
    COLUMNS,
    DB_NAME,
    LOCATION_COLUMNS,
    SEGMENT_BYTES,
    PageStore,
    StoreBusy,
    StoreInUse,
    content_hash,
    stored_aliases,
    stored_pages,
)
from focused.ranking.relevance import jieba_words
from focused.scope import require_focused_spider
from focused.stop import STORE_TAKEN_STAT, folder_taken, stop_crawl, then_for

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.signalmanager import SignalManager
    from scrapy.statscollectors import StatsCollector

logger = logging.getLogger(__name__)

_RECORD_FIELDS = tuple(c for c in COLUMNS if c not in LOCATION_COLUMNS)


def _set(adapter: ItemAdapter, key: str, value: Any) -> None:
    with contextlib.suppress(KeyError):  # a scrapy.Item without that field: leave it out
        adapter[key] = value


#: what a failed write of the page store raises (a full disk: ``OSError`` errno 28 from a
#: file, ``sqlite3.OperationalError`` "database or disk is full" from SQLite)
STORE_ERRORS: tuple[type[BaseException], ...] = (OSError, sqlite3.Error)
#: seconds a write waits for another program's write lock before it is tried again later
#: (the reactor is blocked for that long at most)
BUSY_TIMEOUT = 0.05
#: seconds between two tries while another program holds the lock
RETRY_EVERY = 0.25
#: Scrapy's scraper counts a response as at least this many bytes (scrapy/core/scraper.py)
_MIN_RESPONSE_SIZE = 1024
#: seconds between two looks, while a batch is open, at whether the crawl still goes on
#: without it (:meth:`PageStorePipeline._crawl_waits`); if not, the batch commits at once
BATCH_CHECK_EVERY = 0.2


class CheckpointFailed(Exception):
    """The frontier journal could not be committed before a commit of the page store (a
    handler of :data:`focused.signals.frontier_checkpoint` returned or raised an error):
    the pages must not be committed either."""

    def __init__(self, cause: BaseException) -> None:
        super().__init__(str(cause))
        self.cause = cause


def _take_body(item: Any, adapter: ItemAdapter) -> bytes:
    """The page's raw bytes, taken from the item so that no exporter sees them: a
    :class:`~focused.items.PageItem` keeps them out of its fields (``item.body``, then
    ``b""``); another item's ``body`` field (a str is UTF-8 encoded) is removed."""
    if isinstance(item, PageItem):
        body, item.body = item.body, b""
    else:
        body = adapter.pop("body", None) or b""
    return body.encode("utf-8") if isinstance(body, str) else body


class PageStorePipeline:
    """Store each page (an item with ``url``) in a :class:`~focused.output.store.PageStore`.

    Appends the raw ``body`` as WARC records to a segment under ``segments/``, writes one
    SQLite row per URL in ``FOCUSED_OUTPUT_DIR`` (with the record's offset and length)
    and fills the item's ``content_hash`` and ``file_path`` (the segment). It
    takes the body from the item (a :class:`~focused.items.PageItem`'s ``body`` is
    ``b""`` afterwards; another item's ``body`` field is removed), so that the feed
    exporters, which see the item after every pipeline, get no bytes. A URL stored
    before (fetched again by a ``FOCUSED_CONTINUE`` crawl, which has no journal of what
    was done) is not stored again, counted in ``focused/duplicates`` and dropped (logged
    at DEBUG): it is no new item for the feeds or ``CLOSESPIDER_ITEMCOUNT``, while its
    links are followed as usual; stored pages count in ``focused/stored``.

    It tells the scheduler what is durable (:mod:`focused.signals`; a user's own store
    pipeline can send the same signals): :data:`~focused.signals.page_store_opened` when
    it opens; :data:`~focused.signals.frontier_checkpoint` right before each commit, so the
    scheduler commits its frontier journal (the page's links) first; and
    :data:`~focused.signals.pages_stored` right after each commit, with the URLs of the
    pages it made durable (and of the pages found already stored), which the scheduler
    then journals as done. A page it does not store is never named there.

    Failures (a full disk, a journal that cannot be committed, an unusable database): the
    first failed write rolls back the open transaction, removes its temporary file, logs
    one line (:func:`focused.stop.stop_crawl`) and stops the crawl (finish reason
    ``store_failed``, the ``crawl`` command exits with status 1). That page and every
    later one are dropped quietly (``DropItem``, DEBUG), none of them journaled as done:
    a resume with the same command fetches them again.

    Another program holding the database's write lock (``BEGIN IMMEDIATE``): a write waits
    at most :data:`BUSY_TIMEOUT` for it, then the page waits in memory (and the pages after
    it, in order: Scrapy does not hand over more items than its scraper slot holds) and the
    write is tried again every :data:`RETRY_EVERY` seconds from the reactor; after
    ``FOCUSED_STORE_LOCK_TIMEOUT`` seconds of that the crawl stops as above. A reader never
    blocks a write (WAL). A crawl on the in-memory frontier writes the store alone: when
    another crawl writes it already (two started at the same instant), this one stops at
    open as above and writes nothing in the folder (the workers of a distributed crawl
    share the store).

    With ``threaded`` (``FOCUSED_STORE_THREAD``, off by default: measured, it does not pay
    on 2 cores, see ``docs/speed.md``) the page's records are compressed and written in
    one background thread while Scrapy goes on (zlib and file I/O release the GIL, but
    the thread waits for the GIL after each call); once they are in the segment, its row
    is inserted on Scrapy's thread and only then does the item leave this pipeline. One
    thread keeps the records, rows and items in the order the items came, and the order
    of a write is the same as without the thread: record, row, commit, ``pages_stored``
    (so the scheduler journals a page as done only once its row is committed).

    With ``FOCUSED_STORE_COMMIT_EVERY`` above 1, rows are committed in batches, and an
    item leaves this pipeline only once its row is committed (its feed line, the
    metrics and any later pipeline then never name a page that a crash could still take
    back); a batch is committed at the latest ``FOCUSED_STORE_COMMIT_SECONDS`` after its
    first row, so a slow crawl does not keep its pages waiting, and at once when the
    spider closes or nothing else is under way (the end of a crawl), so a close never
    waits for that time bound (:meth:`_crawl_waits`), and once the items reach
    ``CLOSESPIDER_ITEMCOUNT`` (:meth:`_at_item_limit`), so the crawl stores no more
    past that limit than it would with a commit per page. Scrapy's
    ``CLOSESPIDER_TIMEOUT_NO_ITEM`` and ``CLOSESPIDER_PAGECOUNT_NO_ITEM`` close a crawl
    that scraped no item for N seconds or N responses: a batch commits within half of
    either (:meth:`_no_item_due`), so a crawl that stores pages is not closed as idle.

    Settings: ``FOCUSED_OUTPUT_DIR``, ``FOCUSED_STORE_COMMIT_EVERY`` (rows per
    transaction), ``FOCUSED_STORE_COMMIT_SECONDS``, ``FOCUSED_STORE_FSYNC``,
    ``FOCUSED_STORE_GZIP_LEVEL``, ``FOCUSED_STORE_SEGMENT_MB`` (size of a segment),
    ``FOCUSED_STORE_THREAD``, ``FOCUSED_STORE_LOCK_TIMEOUT``; the full-text index:
    ``FOCUSED_INDEX``, ``FOCUSED_INDEX_MAX_CHARS``, ``FOCUSED_INDEX_EVERY`` (pages whose
    index rows are written together; the rows themselves commit at once) and
    ``FOCUSED_INDEX_SECONDS``.
    """

    #: the store's class (a test may give one that fails on purpose)
    store_class: type[PageStore] = PageStore
    #: near-duplicates held in memory until their page's row is in (a page whose item
    #: never reaches the store, dropped by a pipeline before it, would keep them for
    #: good): past this many the oldest are let go, not recorded (their URLs stay in
    #: flight, so a resume fetches them again)
    max_orphans: int = 10_000

    def __init__(
        self,
        output_dir: str | os.PathLike[str],
        *,
        commit_every: int = 1,
        commit_seconds: float = 1.0,
        held_bytes_max: int = 2_500_000,
        fsync: bool = False,
        gzip_level: int = 1,
        threaded: bool = False,
        lock_timeout: float = 60.0,
        stats: StatsCollector | None = None,
        signals: SignalManager | None = None,
        index: bool = True,
        index_max_chars: int = 100_000,
        index_every: int = 1,
        index_seconds: float = 2.0,
        crawler: Crawler | None = None,
        segment_bytes: int = SEGMENT_BYTES,
        sole: bool = False,
        item_limit: int = 0,
        no_item_seconds: float = 0.0,
        no_item_pages: int = 0,
    ) -> None:
        self.segment_bytes = segment_bytes
        #: ``CLOSESPIDER_ITEMCOUNT`` (0: none): once the items scraped and those waiting
        #: for the open batch reach it, the batch commits at once (:meth:`_until_committed`)
        self.item_limit = max(0, int(item_limit))
        self._items_out = 0  # items this pipeline let go on (their rows committed)
        #: the crawl has the store to itself (no other crawl may open it meanwhile)
        self.sole = sole
        self.output_dir = Path(output_dir)
        self.index = index  # the store's full-text index (FOCUSED_INDEX*)
        self.index_max_chars = index_max_chars
        self.index_every = index_every
        self.index_seconds = index_seconds
        self.commit_every = commit_every
        #: ``CLOSESPIDER_TIMEOUT_NO_ITEM`` (0: none): a batch commits within half of it
        self.commit_seconds = (
            min(commit_seconds, no_item_seconds / 2) if no_item_seconds > 0 else commit_seconds
        )
        #: ``CLOSESPIDER_PAGECOUNT_NO_ITEM`` (0: none), and the responses Scrapy has
        #: counted towards it since the last item scraped (:meth:`_no_item_due`)
        self.no_item_pages = max(0, int(no_item_pages))
        self._pages_since_item = 0
        #: a batch commits early once its waiting items hold this many bytes of responses
        self.held_bytes_max = held_bytes_max
        self.fsync = fsync
        self.gzip_level = gzip_level
        self.threaded = threaded
        self.lock_timeout = max(0.0, float(lock_timeout))
        self.stats = stats
        self.signals = signals
        self.crawler = crawler
        self._recorded = False  # crawl.json names this crawl
        self.store: PageStore | None = None
        #: the first failed write (the store stopped: nothing more is stored)
        self.failed: BaseException | None = None
        self._writer: ThreadPoolExecutor | None = None
        self._writing: set[str] = set()  # URLs whose file is being written
        self._in_flight = 0  # pages handed to the writer thread, not stored yet
        self._drained: Deferred[None] | None = None  # fires when none is left (closing)
        self._found: list[str] = []  # stored already, told with the next commit
        #: pages waiting for another program's write lock, in item order
        self._waiting: deque[tuple[Callable[[], bool], Deferred[bool]]] = deque()
        self._busy_since: float | None = None
        self._retry: Any = None  # the pending delayed call of _drain
        #: items whose rows wait in the open transaction, with what fires with each
        self._uncommitted: list[tuple[Deferred[Any], Any]] = []
        self._commit_due: Any = None  # the pending delayed call of _commit_now
        self._check_due: Any = None  # the pending delayed call of _check_batch
        self._held_bytes = 0  # of the responses whose items wait in _uncommitted
        #: how the writer thread hands a result back (default: the reactor's callFromThread)
        self.call_from_thread: Callable[..., Any] | None = None
        #: how a retry is scheduled (default: the reactor's callLater)
        self.call_later: Callable[..., Any] | None = None
        #: aliases in the open transaction, told (``aliases_stored``) once it commits
        self._aliases: list[dict[str, Any]] = []
        #: aliases whose page is not stored yet (its item still on its way), by its URL
        self._orphans: dict[str, list[tuple[dict[str, Any], bool]]] = {}
        self._orphan_count = 0  # the near-duplicates in _orphans
        self._orphans_dropped = 0

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> PageStorePipeline:
        require_focused_spider(crawler, "PageStorePipeline")  # else NotConfigured
        s = crawler.settings
        pipeline = cls(
            get(s, "FOCUSED_OUTPUT_DIR"),
            commit_every=get(s, "FOCUSED_STORE_COMMIT_EVERY"),
            commit_seconds=get(s, "FOCUSED_STORE_COMMIT_SECONDS"),
            # Scrapy stops downloading while its scraper holds this many bytes of responses
            # (waiting items hold theirs): a batch commits well before that
            held_bytes_max=s.getint("SCRAPER_SLOT_MAX_ACTIVE_SIZE") // 2,
            fsync=get(s, "FOCUSED_STORE_FSYNC"),
            gzip_level=get(s, "FOCUSED_STORE_GZIP_LEVEL"),
            threaded=get(s, "FOCUSED_STORE_THREAD"),
            lock_timeout=get(s, "FOCUSED_STORE_LOCK_TIMEOUT"),
            stats=crawler.stats,
            signals=crawler.signals,
            index=get(s, "FOCUSED_INDEX"),
            index_max_chars=get(s, "FOCUSED_INDEX_MAX_CHARS"),
            index_every=get(s, "FOCUSED_INDEX_EVERY"),
            index_seconds=get(s, "FOCUSED_INDEX_SECONDS"),
            crawler=crawler,
            segment_bytes=int(get(s, "FOCUSED_STORE_SEGMENT_MB") * (1 << 20)),
            # the workers of a distributed crawl share one store on purpose
            sole=str(get(s, "FOCUSED_FRONTIER")) == "memory",
            item_limit=s.getint("CLOSESPIDER_ITEMCOUNT"),
            no_item_seconds=s.getfloat("CLOSESPIDER_TIMEOUT_NO_ITEM"),
            no_item_pages=s.getint("CLOSESPIDER_PAGECOUNT_NO_ITEM"),
        )
        crawler.signals.connect(pipeline._on_aliased, focused_signals.page_aliased)
        if pipeline.no_item_pages and pipeline.commit_every > 1:
            crawler.signals.connect(pipeline._response_received, scrapy_signals.response_received)
            crawler.signals.connect(pipeline._item_scraped, scrapy_signals.item_scraped)
        return pipeline

    def _topic_words(self) -> list[str] | None:
        """The words the crawl's topic adds to jieba's dictionary, which the store records
        as the words its index is cut with (the search and the reindex cut with them)."""
        topic = getattr(getattr(self.crawler, "spider", None), "topic", None)
        keywords = getattr(topic, "keywords", None)
        return None if keywords is None else jieba_words(keywords)

    def open_spider(self) -> None:
        try:
            self.store = self.store_class(
                self.output_dir,
                commit_every=self.commit_every,
                fsync=self.fsync,
                before_commit=self._checkpoint,
                after_commit=self._committed,
                gzip_level=self.gzip_level,
                busy_timeout=BUSY_TIMEOUT,
                index=self.index,
                index_max_chars=self.index_max_chars,
                # a store shared with other workers: each row's index row with it (another
                # worker opening the store would index a held-back row from its HTML)
                index_every=self.index_every if self.sole else 1,
                index_seconds=self.index_seconds,
                open_timeout=self.lock_timeout,
                segment_bytes=self.segment_bytes,
                sole=self.sole,
                words=self._topic_words(),
            ).open()
        except STORE_ERRORS as exc:
            self.store = None
            if isinstance(exc, StoreInUse) and self.stats is not None:
                self.stats.set_value(STORE_TAKEN_STAT, 1)  # the folder is another crawl's
            self._fail(exc)
        if self.stats is not None:
            self.stats.set_value("focused/stored", 0)
            self.stats.set_value("focused/duplicates", 0)
        if self.signals is not None:  # also when it failed: no page is done without a row
            lost = list(self.store.lost) if self.store is not None else []
            self.signals.send_catch_log(signal=focused_signals.page_store_opened, lost=lost)
        if self.store is None:
            return
        if self.threaded:
            self._writer = ThreadPoolExecutor(1, thread_name_prefix="focused-store")
            if self.call_from_thread is None:
                from twisted.internet import reactor

                self.call_from_thread = reactor.callFromThread  # type: ignore[attr-defined]
        if self.store.repaired:
            logger.warning(
                "focused: removed %d orphan page files from %s (an earlier crash)",
                len(self.store.repaired),
                self.output_dir,
            )
        if self.stats is not None and (self.store.truncated or self.store.lost):
            self.stats.set_value("focused/store/truncated_bytes", self.store.truncated)
            self.stats.set_value("focused/store/lost_rows", len(self.store.lost))
        if held := self.store.count():
            logger.info(
                "focused: %s already holds %d pages; those URLs are not stored again",
                self.output_dir,
                held,
            )
        else:  # the folder's pages are this crawl's: crawl.json says which crawl it is
            self._write_record()

    def _write_record(self) -> None:
        """``crawl.json``: the topic, strategy and web of the crawl whose pages the folder
        holds, written when the crawl opens on a folder without pages and, on one that
        holds pages (``FOCUSED_CONTINUE``, a resume), with its first stored page: the
        record goes with the pages, whatever other pipelines there are (the
        ``MetricsPipeline`` writes it too). The crawl command and the spider refuse a
        crawl of another topic or strategy by it (:func:`focused.config.output_problem`)."""
        self._recorded = True
        spider = getattr(self.crawler, "spider", None)
        if spider is None:
            return
        try:
            write_record(
                self.output_dir,
                topic=str(getattr(getattr(spider, "topic", None), "name", "") or ""),
                strategy=str(get(self.crawler.settings, "FOCUSED_STRATEGY")),
                web=str(getattr(getattr(spider, "web", None), "kind", "")),
            )
        except OSError as exc:  # the store's own writes fail next, with their one line
            logger.warning("focused: cannot write %s/crawl.json: %s", self.output_dir, exc)

    def _checkpoint(self) -> None:
        if self.signals is None:
            return
        for _, result in self.signals.send_catch_log(signal=focused_signals.frontier_checkpoint):
            error = result.value if isinstance(result, Failure) else result
            if isinstance(error, BaseException):
                raise CheckpointFailed(getattr(error, "cause", error))

    def _committed(self, urls: list[str]) -> None:
        """The store committed the rows of ``urls``: they are durable now, and their
        items go on."""
        if urls and not self._recorded:  # the first page this crawl stored
            self._write_record()
        if self._found:
            urls, self._found = [*urls, *self._found], []
        self._tell_stored(urls)
        aliases, self._aliases = self._aliases, []
        self._cancel_commit_due()
        waiting, self._uncommitted = self._uncommitted, []
        self._held_bytes = 0
        self._items_out += len(waiting)
        for d, item in waiting:
            d.callback(item)
        if aliases and self.signals is not None:  # after their pages' items
            self.signals.send_catch_log(signal=focused_signals.aliases_stored, aliases=aliases)

    # --- batched commits ------------------------------------------------------------
    def _until_committed(self, item: Any, size: int) -> Deferred[Any]:
        """A Deferred that fires with ``item`` once the open transaction commits: at the
        latest ``commit_seconds`` after its first row, or at once when the waiting items'
        responses (``size`` bytes for this one, as Scrapy's scraper counts them) reach
        ``held_bytes_max``: Scrapy downloads nothing more while its scraper holds
        ``SCRAPER_SLOT_MAX_ACTIVE_SIZE``, so a batch that waited for more pages would
        wait for its time bound with the crawl stalled. Likewise when the crawl no longer
        goes on without the batch (:meth:`_crawl_waits`: the spider is closing, or nothing
        else is under way), looked at every :data:`BATCH_CHECK_EVERY` seconds."""
        d: Deferred[Any] = Deferred()
        self._uncommitted.append((d, item))
        self._held_bytes += max(size, _MIN_RESPONSE_SIZE)
        if (
            self._held_bytes >= self.held_bytes_max
            or self._closing()
            or self._at_item_limit()
            or self._no_item_due()
        ):
            self._commit_now()
            return d
        self._arm_commit()
        return d

    def _arm_commit(self) -> None:
        """Start the open batch's timers unless they run: its time bound
        (``commit_seconds``) and the look at whether the crawl waits for it. A batch of
        aliases alone (no item waits) needs them too: its transaction holds the write
        lock, and its URLs are journaled done only once it commits."""
        if self._commit_due is None:
            self._commit_due = self._later(self.commit_seconds, self._commit_now)
        if self._check_due is None and self.crawler is not None:
            self._check_due = self._later(BATCH_CHECK_EVERY, self._check_batch)

    def _at_item_limit(self) -> bool:
        """Whether the items scraped so far and those waiting for the open batch reach
        ``CLOSESPIDER_ITEMCOUNT``. Scrapy's ``CloseSpider`` counts an item once it has
        gone through every pipeline (``item_scraped``): a batch that waited for its time
        bound would hold back the item that reaches the limit while the crawl went on
        fetching and storing (a sandbox crawl asked for 50 items stored 580). Committed
        at once, the limit's item goes on, Scrapy closes the spider, and only what was
        under way then is stored after it, as with ``FOCUSED_STORE_COMMIT_EVERY = 1``."""
        if not self.item_limit:
            return False
        scraped = self.stats.get_value("item_scraped_count", 0) if self.stats else 0
        # the stats count every item (one without a URL passes this pipeline unstored)
        out = max(int(scraped or 0), self._items_out)
        return out + len(self._uncommitted) >= self.item_limit

    def _no_item_due(self) -> bool:
        """Whether Scrapy has counted half of ``CLOSESPIDER_PAGECOUNT_NO_ITEM`` responses
        since the last item scraped: the open batch then commits, its items go on, and
        the count starts again (a batch that waited for its size or time bound would
        hold back every item while pages are stored, and Scrapy would close the spider
        as if it scraped nothing)."""
        return bool(self.no_item_pages) and self._pages_since_item >= max(
            1, self.no_item_pages // 2
        )

    def _response_received(self, **kwargs: Any) -> None:
        self._pages_since_item += 1
        if self._uncommitted and self._no_item_due():
            self._commit_now()

    def _item_scraped(self, **kwargs: Any) -> None:
        self._pages_since_item = 0

    def _check_batch(self) -> None:
        """Commit the open batch at once if the crawl no longer goes on without it, else
        look again in :data:`BATCH_CHECK_EVERY` seconds."""
        self._check_due = None
        if not self._uncommitted and not self._aliases:
            return
        if self._crawl_waits():
            self._commit_now()
        else:
            self._check_due = self._later(BATCH_CHECK_EVERY, self._check_batch)

    def _engine(self) -> Any:
        """The crawler's engine once the crawl is under way (None before, or without a
        crawler: ``crawler.engine`` raises ``RuntimeError`` in Scrapy 2.19 until then)."""
        try:
            return getattr(self.crawler, "engine", None)
        except RuntimeError:
            return None

    def _closing(self) -> bool:
        """Whether the spider is closing (a Ctrl-C, a ``CLOSESPIDER_*`` limit, the
        spider's ``CloseSpider``, the end of the crawl). Scrapy then waits for every
        response in progress, the ones whose items wait for the open batch included,
        before it closes the pipelines (whose close commits the batch): without a commit
        now, the close would wait for the batch's time bound. Scrapy sends no signal when
        the close starts; its engine's slot (as :func:`focused.stop.stop_crawl` reads
        it) says so."""
        slot = getattr(self._engine(), "_slot", None)
        return slot is not None and getattr(slot, "closing", None) is not None

    def _crawl_waits(self) -> bool:
        """Whether the crawl no longer goes on without the open batch: the spider is
        closing (:meth:`_closing`), or nothing else is under way: nothing downloading,
        no start request left, nothing waiting in the scheduler, and the only responses
        the scraper holds are the batch's own pages (the end of a crawl: the engine
        finishes once these items go on)."""
        if self._closing():
            return True
        engine = self._engine()
        try:
            scraper = engine.scraper.slot
            if engine.downloader.active or scraper.queue or getattr(engine, "_start", None):
                return False
            if len(scraper.active) > len(self._uncommitted):  # other pages are scraped
                return False
            return len(engine._slot.scheduler) == 0
        except (AttributeError, TypeError):  # no engine yet, a scheduler without len()
            return False

    def _later(self, seconds: float, f: Callable[[], Any]) -> Any:
        """``f`` called in ``seconds`` (``call_later``, the reactor's by default)."""
        if self.call_later is None:
            from twisted.internet import reactor

            self.call_later = reactor.callLater  # type: ignore[attr-defined]
        return self.call_later(seconds, f)

    def _commit_now(self) -> None:
        """Commit the open batch (its time bound came, or its items hold too much). An
        open batch holds the write lock since its first row (``BEGIN IMMEDIATE``), so no
        other program can make this wait."""
        self._cancel_commit_due()
        store = self.store
        if store is None or self.failed is not None or not store.pending:
            return
        try:
            store.flush()
        except (*STORE_ERRORS, CheckpointFailed) as exc:
            self._fail(exc)

    def _cancel_commit_due(self) -> None:
        _cancel(self._commit_due)
        self._commit_due = None
        _cancel(self._check_due)
        self._check_due = None

    # --- aliases: near-duplicates of stored pages ---------------------------------------
    def _on_aliased(
        self, alias: dict[str, Any], of: str, main: bool = False, **kwargs: Any
    ) -> bool:
        """The spider found ``alias["url"]`` a near-duplicate of the page fetched at
        ``of``: record it as another URL of that page (:meth:`PageStore.add_alias`), in
        the open transaction, with the same waits and failures as a page's row. An alias
        whose page is not stored yet waits for it (:meth:`_stored`); one whose page never
        is (the store stopped) stays unconfirmed, so a resume fetches it again."""
        if self.store is None or self.failed is not None:
            return False
        self._attempt_alias(alias, of, main)
        return True

    def _attempt_alias(self, alias: dict[str, Any], of: str, main: bool) -> None:
        """:meth:`_add_alias` now, or once the write lock is free (:meth:`_attempt`). A
        store that stopped meanwhile (:meth:`_fail`: the crawl stops, logged once) leaves
        the alias unrecorded and its URL in flight, fetched again by a resume."""
        try:
            result = self._attempt(lambda: self._add_alias(alias, of, main))
        except DropItem:  # the store stopped: the page stays in flight
            return
        if isinstance(result, Deferred):
            result.addErrback(self._alias_failed, alias)

    def _alias_failed(self, failure: Failure, alias: dict[str, Any]) -> None:
        """An alias that waited for the write lock was not recorded: the store stopped
        (said once, by :meth:`_fail`), or its write failed on its own (logged here)."""
        if not failure.check(DropItem):
            logger.error(
                "focused: the near-duplicate %s was not recorded: %s",
                alias.get("url"),
                failure.getErrorMessage(),
            )

    def _keep_orphan(self, of: str, alias: dict[str, Any], main: bool) -> None:
        """Hold ``alias`` until the row of its page (``of``) is in; past
        :attr:`max_orphans` the oldest held are let go."""
        while self._orphan_count >= self.max_orphans and self._orphans:
            dropped = self._orphans.pop(next(iter(self._orphans)))
            self._orphan_count -= len(dropped)
            self._orphans_dropped += len(dropped)
            if self.stats is not None:
                self.stats.inc_value("focused/aliases/dropped", len(dropped))
        self._orphans.setdefault(of, []).append((alias, main))
        self._orphan_count += 1

    def _take_orphans(self, url: str) -> list[tuple[dict[str, Any], bool]]:
        """The near-duplicates held for the page stored at ``url`` (none left held)."""
        taken = self._orphans.pop(url, None) if self._orphans else None
        if not taken:
            return []
        self._orphan_count -= len(taken)
        return taken

    def _add_alias(self, alias: dict[str, Any], of: str, main: bool) -> bool:
        store = self.store
        assert store is not None
        url = alias["url"]
        alias = {**alias, "of": of}  # the page's URL it was recorded against, for the metrics
        self._aliases.append(alias)  # a commit inside add_alias tells it
        try:
            added = store.add_alias(alias, of, main=main)
        except BaseException:
            self._drop_alias(alias)
            raise
        if added:
            if self.stats is not None:
                self.stats.inc_value("focused/aliases")
            if store.pending:  # in the open batch: it commits by the batch's bounds too
                self._arm_commit()
            # near-duplicates found against this URL (made the page's main URL) meanwhile
            for orphan, orphan_main in self._take_orphans(url):
                self._attempt_alias(orphan, url, orphan_main)
            return True
        self._drop_alias(alias)
        if added is None:  # its page's row is not in yet
            self._keep_orphan(of, alias, main)
        elif store.uncommitted(url):  # stored already: told with the open transaction
            self._found.append(url)
        else:
            self._tell_stored([url])
        return False

    def _drop_alias(self, alias: dict[str, Any]) -> None:
        with contextlib.suppress(ValueError):
            self._aliases.remove(alias)

    def _tell_stored(self, urls: list[str]) -> None:
        if urls and self.signals is not None:
            self.signals.send_catch_log(signal=focused_signals.pages_stored, urls=urls)

    def process_item(self, item: Any) -> Any:
        """Store the page; the item, or an awaitable of it (``threaded``, or the page
        waits for another program's write lock). ``DropItem`` once the store failed."""
        adapter = ItemAdapter(item)
        url = adapter.get("url")
        if not url or (self.store is None and self.failed is None):
            return item
        if self.failed is not None:
            raise _not_stored()
        store = self.store
        assert store is not None
        record = {name: adapter.get(name) for name in _RECORD_FIELDS}
        record["text"] = adapter.get("text") or ""  # for the full-text index
        if isinstance(item, PageItem):  # the text already cut into terms (or None)
            record["text_terms"], item.text_terms = item.text_terms, None
        body = _take_body(item, adapter)
        size = len(body)
        if self._writer is None:
            added = self._attempt(lambda: store.add(record, body))
            if not isinstance(added, Deferred):
                done = self._stored(added, adapter, record, item, size)
                return Pending(done) if isinstance(done, Deferred) else done
            added.addCallback(self._stored, adapter, record, item, size)
            return Pending(added)
        d = self._add_threaded(record, body)
        self._in_flight += 1
        d.addBoth(_pass_on, self._one_done)
        d.addCallback(self._stored, adapter, record, item, size)
        return Pending(d)

    # --- failures and a locked database -------------------------------------------
    def _attempt(self, add: Callable[[], bool]) -> bool | Deferred[bool]:
        """``add()`` now, or, while another program holds the write lock (or pages wait
        for it already), a Deferred that fires once it is done. Raises ``DropItem`` when
        the store failed."""
        if self.failed is not None:
            raise _not_stored()
        if not self._waiting:
            try:
                return add()
            except StoreBusy:
                pass
            except (*STORE_ERRORS, CheckpointFailed) as exc:
                self._fail(exc)
                raise _not_stored() from None
        d: Deferred[bool] = Deferred()
        self._waiting.append((add, d))
        self._wait()
        return d

    def _wait(self) -> None:
        if self._busy_since is None:
            self._busy_since = time.monotonic()
            logger.warning(
                "focused: another program holds the write lock of %s: the pages wait in"
                " memory (up to %g s)",
                self.output_dir / DB_NAME,
                self.lock_timeout,
            )
        if self._retry is None:
            self._retry = self._later(RETRY_EVERY, self._drain)

    def _drain(self) -> None:
        """Try the waiting pages again, in order."""
        self._retry = None
        while self._waiting and self.failed is None:
            add, d = self._waiting[0]
            try:
                added = add()
            except StoreBusy as exc:
                assert self._busy_since is not None
                if time.monotonic() - self._busy_since >= self.lock_timeout:
                    held = f"{exc} (another program held its write lock {self.lock_timeout:g} s)"
                    self._fail(StoreBusy(held))
                else:
                    self._wait()
                return
            except (*STORE_ERRORS, CheckpointFailed) as exc:
                self._fail(exc)
                return
            except Exception:  # noqa: BLE001 - not the store's: that page fails, not the rest
                self._waiting.popleft()
                d.errback(Failure())
                continue
            self._waiting.popleft()
            if self._busy_since is not None:
                logger.info(
                    "focused: the write lock of %s is free again after %.1f s",
                    self.output_dir / DB_NAME,
                    time.monotonic() - self._busy_since,
                )
                self._busy_since = None
            d.callback(added)
        self._maybe_drained()

    def _fail(self, exc: BaseException) -> None:
        """The first failed write: nothing more is stored, the crawl stops (one line)."""
        cause = exc.cause if isinstance(exc, CheckpointFailed) else exc
        first = self.failed is None
        if first:
            self.failed = cause
        if self.store is not None:
            self.store.abort()  # the rows of the open transaction are not stored
            self._found.clear()
            self._aliases.clear()
        self._cancel_commit_due()
        uncommitted, self._uncommitted = self._uncommitted, []
        self._held_bytes = 0
        for d, _ in uncommitted:
            d.errback(Failure(_not_stored()))
        if first:
            stop_crawl(self.crawler, "store pages", self.output_dir, cause, then_for(cause))
        _cancel(self._retry)
        self._retry = None
        waiting, self._waiting = self._waiting, deque()
        for _, d in waiting:
            d.errback(Failure(_not_stored()))
        self._maybe_drained()

    def _maybe_drained(self) -> None:
        if not self._in_flight and not self._waiting and self._drained is not None:
            drained, self._drained = self._drained, None
            drained.callback(None)

    def _one_done(self) -> None:
        self._in_flight -= 1
        self._maybe_drained()

    def _stored(
        self, added: bool, adapter: ItemAdapter, record: dict[str, Any], item: Any, size: int = 0
    ) -> Any:
        """The item once its row is in: itself when that row (or the earlier one of its
        URL) is committed, else a Deferred that fires with it at the commit. ``size``:
        the bytes of the item's response."""
        store = self.store
        wait = False
        # its near-duplicates found before its row went in
        for alias, main in self._take_orphans(record["url"]):
            self._attempt_alias(alias, record["url"], main)
        if store is not None:
            if added:
                wait = store.pending > 0  # its own row is in the open transaction
            else:  # stored before: durable now, unless that row is in the open transaction
                wait = store.uncommitted(record["url"])
                if wait:
                    self._found.append(record["url"])
                else:
                    self._tell_stored([record["url"]])
        for key in LOCATION_COLUMNS:
            _set(adapter, key, record[key])
        if self.stats is not None:
            self.stats.inc_value("focused/stored" if added else "focused/duplicates")
        if not added:  # its page went out once already (this crawl, or the one added to)
            raise DropItem(f"{record['url']} is stored already: not a new page", log_level="DEBUG")
        if wait:
            return self._until_committed(item, size)
        self._items_out += 1
        return item

    def _add_threaded(self, record: dict[str, Any], body: bytes) -> Deferred[bool]:
        """:meth:`PageStore.add` with the file work in the writer thread. Every page
        passes through the thread, so results come back in the order pages came."""
        store, url = self.store, record["url"]
        assert store is not None and self._writer is not None
        if url in self._writing or store.lookup(url) is not None:
            # stored already, or being written: a duplicate once the pages before it are in
            d = _in_thread(self._writer, self.call_from_thread, _nothing)
            d.addCallback(lambda _: self._attempt(lambda: store.add(record, body)))
            return d
        # hashed here (cheap): one GIL hand-over less in the writer thread
        d = _in_thread(
            self._writer,
            self.call_from_thread,
            store.write_body,
            body,
            content_hash(body),
            record,
        )
        d.addCallbacks(
            lambda written: self._attempt(lambda: store.add_written(record, written)),
            self._write_failed,
        )
        self._writing.add(url)
        d.addBoth(_pass_on, lambda: self._writing.discard(url))
        return d

    def _write_failed(self, failure: Failure) -> Failure:
        """The writer thread could not write a page's file (a full disk)."""
        if failure.check(*STORE_ERRORS):
            self._fail(failure.value)
            return Failure(_not_stored())
        return failure

    def close_spider(self) -> Coroutine[Any, Any, None] | None:
        if self._in_flight or self._waiting:  # Scrapy waits for its items first: a safety net
            self._drained = Deferred()
            return self._close_later(self._drained)
        self._close()
        return None

    async def _close_later(self, drained: Deferred[None]) -> None:
        await maybe_deferred_to_future(drained)
        self._close()

    def _close(self) -> None:
        self._cancel_commit_due()
        if self._writer is not None:
            self._writer.shutdown(wait=True)
            self._writer = None
        if self.store is None:
            return
        try:
            self.store.close()  # commits the last rows (commit_every > 1)
        except (*STORE_ERRORS, CheckpointFailed) as exc:
            self._fail(exc)
            self.store.close()
        logger.info(
            "focused: stored %d pages (%d already stored, %d near-duplicates recorded as"
            " other URLs of them) in %s",
            self.store.stored,
            self.store.duplicates,
            self.store.aliased,
            self.output_dir,
        )
        if self._orphan_count or self._orphans_dropped:
            # their pages were never stored (or too many waited): a resume fetches them again
            logger.info(
                "focused: %d near-duplicates were not recorded (their page was not stored)",
                self._orphan_count + self._orphans_dropped,
            )


def _cancel(call: Any) -> None:
    """Cancel a pending delayed call (``None`` or one that ran: nothing to do)."""
    if call is not None and call.active():
        call.cancel()


def _not_stored() -> DropItem:
    """What an item the failed store does not store is dropped with (quietly: the one
    line is :func:`focused.stop.stop_crawl`'s); the scheduler keeps its page in flight."""
    return focused_signals.NotStored(
        "not stored: the page store stopped (fetched again on resume)", "DEBUG"
    )


def _in_thread(
    pool: ThreadPoolExecutor,
    call_from_thread: Callable[..., Any] | None,
    func: Callable[..., Any],
    *args: Any,
) -> Deferred[Any]:
    """``func(*args)`` in ``pool``; the Deferred fires through ``call_from_thread`` (on
    the reactor's thread), in the order the calls end: the order they were made, for a
    pool of one thread."""
    assert call_from_thread is not None
    d: Deferred[Any] = Deferred()

    def run() -> None:
        try:
            result = func(*args)
        except BaseException:  # noqa: BLE001 - handed to the reactor's thread
            call_from_thread(d.errback, Failure())
        else:
            call_from_thread(d.callback, result)

    pool.submit(run)
    return d


def _nothing() -> None:
    return None


def _pass_on(result: Any, then: Callable[[], Any]) -> Any:
    then()
    return result


class Pending:
    """What :meth:`PageStorePipeline.process_item` returns while a page's file is being
    written: awaitable (Scrapy awaits it), ``deferred`` fires with the item."""

    __slots__ = ("deferred",)

    def __init__(self, deferred: Deferred[Any]) -> None:
        self.deferred = deferred

    def __await__(self) -> Generator[Any, None, Any]:
        return maybe_deferred_to_future(self.deferred).__await__()


class MetricsPipeline:
    """Follow recall and precision (the evaluation of Liu, Xia & Xu 2010) after every page.

    A page is a target when the item's ``is_target`` says so; when it is ``None``, when
    its canonical URL is in ``spider.targets``. An empty target set means "unknown":
    ``focused/targets``, ``focused/recall`` and the summary's ``targets`` and ``recall``
    are then None (recall not measured), never "0 of 0". Sets the stats
    ``focused/pages``, ``focused/relevant``, ``focused/targets``,
    ``focused/targets_found``, ``focused/precision`` and ``focused/recall``, logs one INFO
    line every ``FOCUSED_METRICS_LOG_EVERY`` pages, writes ``crawl.json`` (topic,
    strategy and web of the crawl, :mod:`focused.output.record`) when the crawl opens (or
    with its first page, in a folder that holds pages) and at close writes
    ``metrics.csv`` (one row per page), ``summary.json`` and, with ``FOCUSED_REPORT``,
    ``curve.png`` in ``FOCUSED_OUTPUT_DIR``. When the crawl resumes a job (``JOBDIR``
    set), the curve starts from the pages already stored there. A run that gets no page
    (``scrapy parse``, a resume with nothing left to do) into a folder that already
    holds stored pages writes none of these files: they keep describing that crawl.

    Settings: ``FOCUSED_OUTPUT_DIR``, ``FOCUSED_METRICS_LOG_EVERY``, ``JOBDIR``,
    ``FOCUSED_STRATEGY`` (labels the plot and summary), ``FOCUSED_REPORT``.
    """

    def __init__(
        self,
        output_dir: str | os.PathLike[str],
        *,
        log_every: int = 50,
        targets: frozenset[str] | None = None,
        resume: bool = False,
        strategy: str = "",
        stats: StatsCollector | None = None,
        draw: bool = True,
    ) -> None:
        self.output_dir = Path(output_dir)
        self.log_every = max(0, int(log_every))
        self.draw = draw
        self.targets = targets
        self.resume = resume
        self.strategy = strategy
        self.stats = stats
        self.topic = ""
        self.web = ""
        self.held = False  # the folder held stored pages when the crawl opened
        self.added = 0  # pages that came through this run
        self.taken = False  # another crawl had the folder's store: nothing written
        self.crawler: Crawler | None = None
        self.curve = HarvestCurve(targets)
        self.started = time.time()

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> MetricsPipeline:
        require_focused_spider(crawler, "MetricsPipeline")  # else NotConfigured
        s = crawler.settings
        pipe = cls(
            get(s, "FOCUSED_OUTPUT_DIR"),
            log_every=get(s, "FOCUSED_METRICS_LOG_EVERY"),
            resume=bool(s.get("JOBDIR")),
            strategy=str(get(s, "FOCUSED_STRATEGY")),
            stats=crawler.stats,
            draw=bool(get(s, "FOCUSED_REPORT")),
        )
        pipe.crawler = crawler  # the spider (and its targets) exists only at open
        crawler.signals.connect(pipe._on_aliases, focused_signals.aliases_stored)
        return pipe

    def open_spider(self) -> None:
        spider = self.crawler.spider if self.crawler is not None else None
        if spider is not None:
            if self.targets is None:
                self.targets = frozenset(getattr(spider, "targets", None) or ())
            topic = getattr(spider, "topic", None)
            self.topic = str(getattr(topic, "name", "") or "")
            self.web = str(getattr(getattr(spider, "web", None), "kind", ""))
        # another crawl has the folder (its page store would not open): nothing is written
        self.taken = folder_taken(self.crawler)
        if self.taken:
            return
        # a run that stores nothing (``scrapy parse``, a finished resume) leaves a folder
        # of stored pages as it was: its record is written with this run's first page
        self.held = stored_count(self.output_dir) > 0
        self.added = 0
        if not self.held:
            self._write_record()
        self.curve = HarvestCurve(self.targets)
        self.started = time.time()
        if self.resume:
            aliases = stored_aliases(self.output_dir)
            at = 0  # aliases come right after the last page stored before them
            url_of: dict[int, str] = {}  # a page's id -> its URL, for its aliases
            for page in stored_pages(self.output_dir, ids=True):
                while at < len(aliases) and aliases[at]["stored_after"] < page["id"]:
                    alias = aliases[at]
                    of = url_of.get(alias["page_id"])
                    self.curve.add_alias(alias["url"], alias["is_target"], of)
                    at += 1
                self.curve.add(page["url"], page["relevant"], page["is_target"])
                if aliases:
                    url_of[page["id"]] = page["url"]
            for alias in aliases[at:]:
                self.curve.add_alias(alias["url"], alias["is_target"], url_of.get(alias["page_id"]))
            if self.curve.pages:
                logger.info("focused: resuming metrics from %d stored pages", self.curve.pages)
        self._update_stats()

    def _on_aliases(self, aliases: list[dict[str, Any]], **kwargs: Any) -> None:
        """The page store committed ``aliases`` (near-duplicates recorded as other URLs
        of stored pages): their URLs are found, no page more."""
        if self.taken:
            return
        counted = False
        for alias in aliases:
            counted |= self.curve.add_alias(
                str(alias["url"]), alias.get("is_target"), alias.get("of")
            )
        if counted:
            self._update_stats()

    def _write_record(self) -> None:
        if self.crawler is not None and self.crawler.spider is not None:
            write_record(self.output_dir, topic=self.topic, strategy=self.strategy, web=self.web)

    def process_item(self, item: Any) -> Any:
        adapter = ItemAdapter(item)
        url = adapter.get("url")
        if not url:
            return item
        self.added += 1
        if self.added == 1 and self.held:
            self._write_record()
        if self.curve.add(
            url,
            bool(adapter.get("relevant")),
            adapter.get("is_target"),
            elapsed_s=time.time() - self.started,
            queues=self._queues(),
        ):
            self._update_stats()
            if self.log_every and self.curve.pages % self.log_every == 0:
                self._log()
        return item

    def _queues(self) -> dict[str, int | None] | None:
        """The scheduler's queue sizes (stats ``focused/queue/*``) for ``metrics.csv``."""
        if self.stats is None:
            return None
        return {name: self.stats.get_value(f"focused/queue/{name}") for name in QUEUES}

    def _update_stats(self) -> None:
        if self.stats is None:
            return
        c = self.curve
        for key, value in (
            ("pages", c.pages),
            ("relevant", c.relevant_pages),
            ("targets", len(c.targets) if c.targets_known else None),
            ("targets_found", c.targets_found),
            ("precision", round(c.precision, 6)),
            ("recall", None if c.recall is None else round(c.recall, 6)),
        ):
            self.stats.set_value(f"focused/{key}", value)

    def _log(self) -> None:
        c = self.curve
        if c.recall is None:
            logger.info(
                "focused: %d pages, precision %.3f (%d relevant, no targets known)",
                c.pages,
                c.precision,
                c.relevant_pages,
            )
        else:
            logger.info(
                "focused: %d pages, precision %.3f, recall %.3f (%d/%d targets)",
                c.pages,
                c.precision,
                c.recall,
                c.targets_found,
                len(c.targets),
            )

    def summary(self) -> dict[str, Any]:
        """The final numbers written to ``summary.json``."""
        c = self.curve
        data: dict[str, Any] = {
            "topic": self.topic,
            "strategy": self.strategy,
            **c.summary(),
            "auc_recall": c.auc_recall(c.pages) if c.pages else None,
            "elapsed_s": round(time.time() - self.started, 3),
            "finished_at": time.time(),
        }
        return data

    def close_spider(self) -> None:
        if self.taken:
            logger.info("focused: %s is another crawl's: no output written", self.output_dir)
            return
        if self.held and not self.added:
            logger.info(
                "focused: no page stored; the outputs in %s are left as they were",
                self.output_dir,
            )
            return
        self.output_dir.mkdir(parents=True, exist_ok=True)
        if self.curve.pages:
            self._log()
        try:  # atomic writes: a full disk leaves the old files (or none), never a part
            self.curve.to_csv(self.output_dir / "metrics.csv")
            _write_json(self.output_dir / "summary.json", self.summary())
        except OSError as exc:
            logger.warning("focused: could not write the metrics in %s: %s", self.output_dir, exc)
            return
        if not self.draw:
            return
        title = " / ".join(x for x in (self.topic, self.strategy) if x)
        try:
            _plot_in_child(
                self.strategy or "crawl",
                self.output_dir / "metrics.csv",
                self.output_dir / "curve.png",
                f"{title}: {self.curve.pages} pages" if title else "",
            )
        except (OSError, RuntimeError) as exc:  # a full disk, the child's last line
            logger.warning("focused: could not draw %s: %s", self.output_dir / "curve.png", exc)
        except Exception:  # a plot must never hide the crawl's data
            logger.exception("focused: could not draw %s", self.output_dir / "curve.png")


_PLOT_CODE = (
    "import sys; from focused.output.plot import plot_curves; "
    "plot_curves({sys.argv[1]: sys.argv[2]}, sys.argv[3], title=sys.argv[4])"
)


def _plot_in_child(label: str, csv_path: Path, png: Path, title: str) -> None:
    """Draw ``csv_path``'s curve to ``png`` in a child process (:mod:`focused.output.child`:
    matplotlib never loads into the crawler); the child reads back the points the crawl
    has just written to the CSV."""
    run_python(_PLOT_CODE, label, str(csv_path), str(png), title)


def _write_json(path: Path, data: dict[str, Any]) -> None:
    write_text(path, json.dumps(data, indent=2, sort_keys=True) + "\n")
