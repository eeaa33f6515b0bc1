"""Scrapy extension: progress lines while crawling; stats, settings and report at close.

:class:`CrawlOutputExtension` (in ``EXTENSIONS``):

- logs a progress line (:mod:`focused.output.progress`) every
  ``FOCUSED_PROGRESS_EVERY_PAGES`` pages or ``FOCUSED_PROGRESS_EVERY_SECONDS`` seconds,
  from the stats ``focused/pages``, ``focused/relevant``, ``focused/recall`` (set by
  :class:`focused.pipelines.MetricsPipeline`), ``focused/queue/*`` and
  ``focused/annealing/temperature`` (set by the scheduler);
- on ``spider_closed`` (after the item pipelines have closed, so ``metrics.csv`` and
  ``summary.json`` are written) saves Scrapy's final stats as ``stats.json`` and the
  settings in force as ``settings.json`` in ``FOCUSED_OUTPUT_DIR``, then, with
  ``FOCUSED_REPORT``, writes ``report.html`` (:mod:`focused.output.html_report`). A run
  that stored no page in a folder that already held stored pages (``scrapy parse``, a
  resume with nothing left to do) writes none of them: they keep describing that crawl.
"""

from __future__ import annotations

import json
import logging
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from itemadapter import ItemAdapter
from scrapy import signals
from twisted.internet import task

from focused.defaults import DEFAULTS, get
from focused.output.atomic import write_text
from focused.output.child import run_python
from focused.output.metrics import QUEUES
from focused.output.progress import Progress, Snapshot
from focused.output.record import stored_count
from focused.scope import require_focused_spider
from focused.stop import folder_taken

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

logger = logging.getLogger(__name__)

#: Scrapy settings shown in the report next to the FOCUSED_* ones
SCRAPY_SETTINGS = (
    "CONCURRENT_REQUESTS",
    "CONCURRENT_REQUESTS_PER_DOMAIN",
    "DOWNLOAD_DELAY",
    "AUTOTHROTTLE_ENABLED",
    "DEPTH_LIMIT",
    "CLOSESPIDER_PAGECOUNT",
    "CLOSESPIDER_ITEMCOUNT",
    "CLOSESPIDER_TIMEOUT",
    "JOBDIR",
    "ROBOTSTXT_OBEY",
    "USER_AGENT",
    "SCHEDULER",
)


#: the HTML report, drawn in a child process (matplotlib never loads into the crawler)
_REPORT_CODE = (
    "import sys; from focused.output.html_report import write_report; "
    "print(write_report(sys.argv[1]))"
)


class CrawlOutputExtension:
    """See the module docstring."""

    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        s = crawler.settings
        self.output_dir = Path(get(s, "FOCUSED_OUTPUT_DIR"))
        self.write_report = bool(get(s, "FOCUSED_REPORT"))
        self.progress = Progress(
            get(s, "FOCUSED_PROGRESS_EVERY_PAGES"),
            get(s, "FOCUSED_PROGRESS_EVERY_SECONDS"),
            time.monotonic(),
        )
        self.held = 0  # pages stored in the folder when the spider opened
        self.pages = 0  # items seen here (when MetricsPipeline is not enabled)
        self.relevant = 0
        self._loop: task.LoopingCall | None = None

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> CrawlOutputExtension:
        require_focused_spider(crawler, "CrawlOutputExtension")  # else NotConfigured
        ext = cls(crawler)
        crawler.signals.connect(ext.spider_opened, signal=signals.spider_opened)
        crawler.signals.connect(ext.item_scraped, signal=signals.item_scraped)
        crawler.signals.connect(ext.spider_closed, signal=signals.spider_closed)
        return ext

    # --- progress --------------------------------------------------------------------
    def spider_opened(self, spider: Any) -> None:
        self.held = stored_count(self.output_dir)  # the store (repaired) is open by now
        now = time.monotonic()
        self.progress.started = self.progress.last_time = now
        self.progress.last_pages = self._stat("focused/pages", 0) or 0
        self.progress.last_relevant = self._stat("focused/relevant", 0) or 0
        if self.progress.every_seconds:
            self._loop = task.LoopingCall(self._tick)
            self._loop.start(max(0.2, self.progress.every_seconds / 5), now=False)

    def _stat(self, key: str, default: Any = None) -> Any:
        stats = self.crawler.stats
        return default if stats is None else stats.get_value(key, default)

    def snapshot(self) -> Snapshot:
        pages = self._stat("focused/pages")
        relevant = self._stat("focused/relevant")
        temperature = self._stat("focused/annealing/temperature")
        return Snapshot(
            pages=self.pages if pages is None else int(pages),
            relevant=self.relevant if relevant is None else int(relevant),
            recall=self._stat("focused/recall"),
            targets_found=int(self._stat("focused/targets_found", 0) or 0),
            targets=int(self._stat("focused/targets", 0) or 0),
            queues={name: self._stat(f"focused/queue/{name}") for name in QUEUES},
            temperature=None if temperature is None else float(temperature),
        )

    def item_scraped(self, item: Any, **kwargs: Any) -> None:
        self.pages += 1
        if ItemAdapter(item).get("relevant"):
            self.relevant += 1
        self._maybe_log()

    def _tick(self) -> None:
        self._maybe_log()

    def _maybe_log(self) -> None:
        if not self.progress.enabled:
            return
        snap = self.snapshot()
        now = time.monotonic()
        if self.progress.due(snap.pages, now):
            logger.info(self.progress.line(snap, now))

    # --- at close --------------------------------------------------------------------
    def spider_closed(self, spider: Any, reason: str) -> None:
        if self._loop is not None and self._loop.running:
            self._loop.stop()
        self._loop = None
        if folder_taken(self.crawler):
            return  # another crawl's folder (the page store said so at open)
        if self.held and stored_count(self.output_dir) == self.held:
            logger.info(
                "focused: no page stored; the stats and report in %s are left as they were",
                self.output_dir,
            )
            return
        try:
            self.output_dir.mkdir(parents=True, exist_ok=True)
            stats = dict(self.crawler.stats.get_stats()) if self.crawler.stats else {}
            stats.setdefault("finish_reason", reason)
            _write_json(self.output_dir / "stats.json", stats)
            _write_json(self.output_dir / "settings.json", self.settings_in_force(spider))
        except OSError as exc:  # a full disk: one line, the crawl's data is what matters
            logger.warning("focused: could not save the stats in %s: %s", self.output_dir, exc)
            return
        if self.write_report:
            try:
                path = run_python(_REPORT_CODE, str(self.output_dir)).strip()
                logger.info("focused: crawl report in %s", path)
            except (OSError, RuntimeError) as exc:  # a full disk, the child's last line
                logger.warning(
                    "focused: could not write the report in %s: %s", self.output_dir, exc
                )
            except Exception:  # a report must never hide the crawl's data
                logger.exception("focused: could not write the report in %s", self.output_dir)

    def settings_in_force(self, spider: Any) -> dict[str, Any]:
        s = self.crawler.settings
        topic = getattr(spider, "topic", None)
        return {
            "spider": getattr(spider, "name", ""),
            "topic": str(getattr(topic, "name", "") or getattr(spider, "topic_arg", "") or ""),
            "focused": {name: get(s, name) for name in sorted(DEFAULTS)},
            "scrapy": {name: s.get(name) for name in SCRAPY_SETTINGS},
        }


def _write_json(path: Path, data: dict[str, Any]) -> None:
    text = json.dumps(data, indent=2, sort_keys=True, default=str, ensure_ascii=False)
    write_text(path, text + "\n")
