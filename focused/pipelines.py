"""Item pipelines: store every page, follow recall and precision while crawling."""

from __future__ import annotations

import contextlib
import json
import logging
import os
import time
from collections.abc import Callable, Coroutine, Generator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any

from itemadapter import ItemAdapter
from scrapy.utils.defer import maybe_deferred_to_future
from twisted.internet.defer import Deferred
from twisted.python.failure import Failure

from focused import signals as focused_signals
from focused.defaults import get
from focused.items import PageItem
from focused.output.metrics import QUEUES, HarvestCurve
from focused.output.record import write_record
from focused.output.store import COLUMNS, PageStore, content_hash, stored_pages

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.signalmanager import SignalManager
    from scrapy.statscollectors import StatsCollector

logger = logging.getLogger(__name__)

_RECORD_FIELDS = tuple(c for c in COLUMNS if c not in ("content_hash", "file_path"))


def _set(adapter: ItemAdapter, key: str, value: Any) -> None:
    with contextlib.suppress(KeyError):  # a scrapy.Item without that field: leave it out
        adapter[key] = value


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

    Writes the raw ``body`` gzipped under ``html/`` and one SQLite row per URL in
    ``FOCUSED_OUTPUT_DIR`` and fills the item's ``content_hash`` and ``file_path``. It
    takes the body from the item (a :class:`~focused.items.PageItem`'s ``body`` is
    ``b""`` afterwards; another item's ``body`` field is removed), so that the feed
    exporters, which see the item after every pipeline, get no bytes. A URL stored
    before (a resumed crawl) is not stored again and counted in ``focused/duplicates``;
    stored pages count in ``focused/stored``.

    It tells the scheduler what is durable (:mod:`focused.signals`; a user's own store
    pipeline can send the same signals): :data:`~focused.signals.page_store_opened` when
    it opens; :data:`~focused.signals.frontier_checkpoint` right before each commit, so the
    scheduler commits its frontier journal (the page's links) first; and
    :data:`~focused.signals.pages_stored` right after each commit, with the URLs of the
    pages it made durable (and of the pages found already stored), which the scheduler
    then journals as done.

    With ``threaded`` (``FOCUSED_STORE_THREAD``, off by default: measured, it does not pay
    on 2 cores, see ``docs/speed.md``) the page's file is compressed and written in one
    background thread while Scrapy goes on (zlib and file I/O release the GIL, but the
    thread waits for the GIL after each call); once the file is in place, its row is inserted
    on Scrapy's thread and only then does the item leave this pipeline. One thread keeps
    the files, rows and items in the order the items came, and the order of a write is
    the same as without the thread: file, row, commit, ``pages_stored`` (so the scheduler
    journals a page as done only once its row is committed).

    Settings: ``FOCUSED_OUTPUT_DIR``, ``FOCUSED_STORE_COMMIT_EVERY`` (rows per
    transaction), ``FOCUSED_STORE_FSYNC``, ``FOCUSED_STORE_GZIP_LEVEL``,
    ``FOCUSED_STORE_THREAD``.
    """

    def __init__(
        self,
        output_dir: str | os.PathLike[str],
        *,
        commit_every: int = 1,
        fsync: bool = False,
        gzip_level: int = 1,
        threaded: bool = False,
        stats: StatsCollector | None = None,
        signals: SignalManager | None = None,
        index: bool = True,
        index_max_chars: int = 100_000,
    ) -> None:
        self.output_dir = Path(output_dir)
        self.index = index  # the store's full-text index (FOCUSED_INDEX*)
        self.index_max_chars = index_max_chars
        self.commit_every = commit_every
        self.fsync = fsync
        self.gzip_level = gzip_level
        self.threaded = threaded
        self.stats = stats
        self.signals = signals
        self.store: PageStore | None = None
        self._writer: ThreadPoolExecutor | None = None
        self._writing: set[str] = set()  # URLs whose file is being written
        self._in_flight = 0  # pages handed to the writer thread, not stored yet
        self._drained: Deferred[None] | None = None  # fires when none is left (closing)
        self._found: list[str] = []  # stored already, told with the next commit
        #: how the writer thread hands a result back (default: the reactor's callFromThread)
        self.call_from_thread: Callable[..., Any] | None = None

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> PageStorePipeline:
        s = crawler.settings
        return cls(
            get(s, "FOCUSED_OUTPUT_DIR"),
            commit_every=get(s, "FOCUSED_STORE_COMMIT_EVERY"),
            fsync=get(s, "FOCUSED_STORE_FSYNC"),
            gzip_level=get(s, "FOCUSED_STORE_GZIP_LEVEL"),
            threaded=get(s, "FOCUSED_STORE_THREAD"),
            stats=crawler.stats,
            signals=crawler.signals,
            index=get(s, "FOCUSED_INDEX"),
            index_max_chars=get(s, "FOCUSED_INDEX_MAX_CHARS"),
        )

    def open_spider(self) -> None:
        self.store = PageStore(
            self.output_dir,
            commit_every=self.commit_every,
            fsync=self.fsync,
            before_commit=self._checkpoint,
            after_commit=self._committed,
            gzip_level=self.gzip_level,
            index=self.index,
            index_max_chars=self.index_max_chars,
        ).open()
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
        if held := self.store.count():
            logger.info(
                "focused: %s already holds %d pages; those URLs are not stored again",
                self.output_dir,
                held,
            )
        if self.stats is not None:
            self.stats.set_value("focused/stored", 0)
            self.stats.set_value("focused/duplicates", 0)
        if self.signals is not None:
            self.signals.send_catch_log(signal=focused_signals.page_store_opened)

    def _checkpoint(self) -> None:
        if self.signals is not None:
            self.signals.send_catch_log(signal=focused_signals.frontier_checkpoint)

    def _committed(self, urls: list[str]) -> None:
        """The store committed the rows of ``urls``: they are durable now."""
        if self._found:
            urls, self._found = [*urls, *self._found], []
        self._tell_stored(urls)

    def _tell_stored(self, urls: list[str]) -> None:
        if urls and self.signals is not None:
            self.signals.send_catch_log(signal=focused_signals.pages_stored, urls=urls)

    def process_item(self, item: Any) -> Any:
        """Store the page; the item, or with ``threaded`` an awaitable of it."""
        adapter = ItemAdapter(item)
        url = adapter.get("url")
        if not url or self.store is None:
            return item
        record = {name: adapter.get(name) for name in _RECORD_FIELDS}
        record["text"] = adapter.get("text") or ""  # for the full-text index
        body = _take_body(item, adapter)
        if self._writer is None:
            return self._stored(self.store.add(record, body), adapter, record, item)
        d = self._add_threaded(record, body)
        self._in_flight += 1
        d.addBoth(_pass_on, self._one_done)
        d.addCallback(self._stored, adapter, record, item)
        return Pending(d)

    def _one_done(self) -> None:
        self._in_flight -= 1
        if not self._in_flight and self._drained is not None:
            self._drained.callback(None)

    def _stored(self, added: bool, adapter: ItemAdapter, record: dict[str, Any], item: Any) -> Any:
        if not added and self.store is not None:
            # stored before: durable now, unless its row is in the open transaction
            if self.store.pending:
                self._found.append(record["url"])
            else:
                self._tell_stored([record["url"]])
        _set(adapter, "content_hash", record["content_hash"])
        _set(adapter, "file_path", record["file_path"])
        if self.stats is not None:
            self.stats.inc_value("focused/stored" if added else "focused/duplicates")
        return item

    def _add_threaded(self, record: dict[str, Any], body: bytes) -> Deferred[bool]:
        """:meth:`PageStore.add` with the file work in the writer thread. Every page
        passes through the thread, so results come back in the order pages came."""
        store, url = self.store, record["url"]
        assert store is not None and self._writer is not None
        if url in self._writing or store.lookup(url) is not None:
            # stored already, or being written: a duplicate once the pages before it are in
            d = _in_thread(self._writer, self.call_from_thread, _nothing)
            d.addCallback(lambda _: store.add(record, body))
            return d
        # hashed here (cheap): one GIL hand-over less in the writer thread
        d = _in_thread(
            self._writer, self.call_from_thread, store.write_body, body, content_hash(body)
        )
        d.addCallback(lambda written: store.add_written(record, *written))
        self._writing.add(url)
        d.addBoth(_pass_on, lambda: self._writing.discard(url))
        return d

    def close_spider(self) -> Coroutine[Any, Any, None] | None:
        if self._in_flight:  # Scrapy waits for its items first: this is only a safety net
            self._drained = Deferred()
            return self._close_later(self._drained)
        self._close()
        return None

    async def _close_later(self, drained: Deferred[None]) -> None:
        await maybe_deferred_to_future(drained)
        self._close()

    def _close(self) -> None:
        if self._writer is not None:
            self._writer.shutdown(wait=True)
            self._writer = None
        if self.store is None:
            return
        self.store.close()
        logger.info(
            "focused: stored %d pages (%d already stored) in %s",
            self.store.stored,
            self.store.duplicates,
            self.output_dir,
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
    strategy and web of the crawl, :mod:`focused.output.record`) when the crawl opens and
    at close writes ``metrics.csv`` (one row per page), ``curve.png`` and
    ``summary.json`` in ``FOCUSED_OUTPUT_DIR``. When the crawl resumes a job (``JOBDIR``
    set), the curve starts from the pages already stored there.

    Settings: ``FOCUSED_OUTPUT_DIR``, ``FOCUSED_METRICS_LOG_EVERY``, ``JOBDIR``,
    ``FOCUSED_STRATEGY`` (labels the plot and summary).
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
    ) -> None:
        self.output_dir = Path(output_dir)
        self.log_every = max(0, int(log_every))
        self.targets = targets
        self.resume = resume
        self.strategy = strategy
        self.stats = stats
        self.topic = ""
        self.crawler: Crawler | None = None
        self.curve = HarvestCurve(targets)
        self.started = time.time()

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> MetricsPipeline:
        s = crawler.settings
        pipe = cls(
            get(s, "FOCUSED_OUTPUT_DIR"),
            log_every=get(s, "FOCUSED_METRICS_LOG_EVERY"),
            resume=bool(s.get("JOBDIR")),
            strategy=str(get(s, "FOCUSED_STRATEGY")),
            stats=crawler.stats,
        )
        pipe.crawler = crawler  # the spider (and its targets) exists only at open
        return pipe

    def open_spider(self) -> None:
        spider = self.crawler.spider if self.crawler is not None else None
        if spider is not None:
            if self.targets is None:
                self.targets = frozenset(getattr(spider, "targets", None) or ())
            topic = getattr(spider, "topic", None)
            self.topic = str(getattr(topic, "name", "") or "")
            web = getattr(getattr(spider, "web", None), "kind", "")
            write_record(self.output_dir, topic=self.topic, strategy=self.strategy, web=web)
        self.curve = HarvestCurve(self.targets)
        self.started = time.time()
        if self.resume:
            for page in stored_pages(self.output_dir):
                self.curve.add(page["url"], page["relevant"], page["is_target"])
            if self.curve.pages:
                logger.info("focused: resuming metrics from %d stored pages", self.curve.pages)
        self._update_stats()

    def process_item(self, item: Any) -> Any:
        adapter = ItemAdapter(item)
        url = adapter.get("url")
        if not url:
            return item
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
        self.output_dir.mkdir(parents=True, exist_ok=True)
        if self.curve.pages:
            self._log()
        self.curve.to_csv(self.output_dir / "metrics.csv")
        _write_json(self.output_dir / "summary.json", self.summary())
        title = " / ".join(x for x in (self.topic, self.strategy) if x)
        try:
            from focused.output.plot import plot_curves  # matplotlib only when needed

            plot_curves(
                {self.strategy or "crawl": self.curve.points},
                self.output_dir / "curve.png",
                title=f"{title}: {self.curve.pages} pages" if title else "",
            )
        except Exception:  # a plot must never hide the crawl's data
            logger.exception("focused: could not draw %s", self.output_dir / "curve.png")


def _write_json(path: Path, data: dict[str, Any]) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    os.replace(tmp, path)
