"""Item pipelines: store every page, follow recall and precision while crawling."""

from __future__ import annotations

import json
import logging
import os
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from itemadapter import ItemAdapter

from focused import signals as focused_signals
from focused.defaults import get
from focused.metrics import HarvestCurve
from focused.store import COLUMNS, PageStore, stored_pages

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.signalmanager import SignalManager
    from scrapy.statscollectors import StatsCollector

logger = logging.getLogger(__name__)

_RECORD_FIELDS = tuple(c for c in COLUMNS if c not in ("content_hash", "file_path"))


def _set(adapter: ItemAdapter, key: str, value: Any) -> None:
    try:
        adapter[key] = value
    except KeyError:  # a scrapy.Item without that field: leave it out
        pass


class PageStorePipeline:
    """Store each page (an item with ``url``) in a :class:`~focused.store.PageStore`.

    Writes the raw ``body`` gzipped under ``html/`` and one SQLite row per URL in
    ``FOCUSED_OUTPUT_DIR``, fills the item's ``content_hash`` and ``file_path`` and
    empties its ``body`` (feed exports stay small). A URL stored before (a resumed crawl)
    is not stored again and counted in ``focused/duplicates``; stored pages count in
    ``focused/stored``. Right before each commit it sends
    :data:`focused.signals.frontier_checkpoint` so the scheduler commits its frontier
    journal first.

    Settings: ``FOCUSED_OUTPUT_DIR``, ``FOCUSED_STORE_COMMIT_EVERY`` (rows per
    transaction), ``FOCUSED_STORE_FSYNC``.
    """

    def __init__(
        self,
        output_dir: str | os.PathLike[str],
        *,
        commit_every: int = 1,
        fsync: bool = False,
        stats: StatsCollector | None = None,
        signals: SignalManager | None = None,
    ) -> None:
        self.output_dir = Path(output_dir)
        self.commit_every = commit_every
        self.fsync = fsync
        self.stats = stats
        self.signals = signals
        self.store: PageStore | None = None

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> PageStorePipeline:
        s = crawler.settings
        return cls(
            get(s, "FOCUSED_OUTPUT_DIR"),
            commit_every=get(s, "FOCUSED_STORE_COMMIT_EVERY"),
            fsync=get(s, "FOCUSED_STORE_FSYNC"),
            stats=crawler.stats,
            signals=crawler.signals,
        )

    def open_spider(self) -> None:
        self.store = PageStore(
            self.output_dir,
            commit_every=self.commit_every,
            fsync=self.fsync,
            before_commit=self._checkpoint,
        ).open()
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

    def _checkpoint(self) -> None:
        if self.signals is not None:
            self.signals.send_catch_log(signal=focused_signals.frontier_checkpoint)

    def process_item(self, item: Any) -> Any:
        adapter = ItemAdapter(item)
        url = adapter.get("url")
        if not url or self.store is None:
            return item
        record = {name: adapter.get(name) for name in _RECORD_FIELDS}
        body = adapter.get("body") or b""
        if isinstance(body, str):
            body = body.encode("utf-8")
        added = self.store.add(record, body)
        _set(adapter, "content_hash", record["content_hash"])
        _set(adapter, "file_path", record["file_path"])
        if "body" in adapter:
            adapter["body"] = b""
        if self.stats is not None:
            self.stats.inc_value("focused/stored" if added else "focused/duplicates")
        return item

    def close_spider(self) -> None:
        if self.store is None:
            return
        self.store.close()
        logger.info(
            "focused: stored %d pages (%d already stored) in %s",
            self.store.stored,
            self.store.duplicates,
            self.output_dir,
        )


class MetricsPipeline:
    """Follow recall and precision (seed 000's evaluation) after every page.

    A page is a target when the item's ``is_target`` says so; when it is ``None``, when
    its canonical URL is in ``spider.targets``. Sets the stats ``focused/pages``,
    ``focused/relevant``, ``focused/targets``, ``focused/targets_found``,
    ``focused/precision`` and ``focused/recall``, logs one INFO line every
    ``FOCUSED_METRICS_LOG_EVERY`` pages and at close writes ``metrics.csv`` (one row per
    page), ``curve.png`` and ``summary.json`` in ``FOCUSED_OUTPUT_DIR``. When the crawl
    resumes a job (``JOBDIR`` set), the curve starts from the pages already stored there.

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
        if self.curve.add(url, bool(adapter.get("relevant")), adapter.get("is_target")):
            self._update_stats()
            if self.log_every and self.curve.pages % self.log_every == 0:
                self._log()
        return item

    def _update_stats(self) -> None:
        if self.stats is None:
            return
        c = self.curve
        for key, value in (
            ("pages", c.pages),
            ("relevant", c.relevant_pages),
            ("targets", len(c.targets)),
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
            from focused.plot import plot_curves  # matplotlib only when needed

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
