"""Python's cyclic garbage collector, tuned for a crawl.

A crawl makes many short-lived container objects per page (requests, responses,
selectors, items, Deferreds) beside a large heap that lives as long as the process:
Scrapy, Twisted, lxml, numpy (and scikit-learn for ``learning``),
the topic's vectors. With Python's default thresholds (700 allocations for a young
collection) the collector runs hundreds of times per 100 pages, and every full
collection walks that start-up heap again, although none of it is ever garbage. On the
labelled wikispeedia site this was 2.1-2.5 ms of CPU per page (docs/speed.md).

:class:`GarbageCollectorTuning` collects once when the engine starts, moves everything
alive into the permanent generation (:func:`gc.freeze`: never walked again) and raises
the young generation's threshold, so young collections are rarer and each still finds
the cycles a crawl makes; the older generations are then collected after about as many
allocations as before (:func:`older_thresholds`), so garbage that outlived a young
collection is not kept longer. Cyclic garbage is still collected; what changes is how often
the collector looks. At the engine's stop both are put back; with several crawls in one
process (a ``CrawlerProcess`` script), when the last of them stops, to what they were
before the first started.
"""

from __future__ import annotations

import gc
from typing import Any

from scrapy import signals
from scrapy.crawler import Crawler

from focused.defaults import get

__all__ = ["GarbageCollectorTuning", "older_thresholds"]


def older_thresholds(young: int, saved: tuple[int, int, int]) -> tuple[int, int, int]:
    """Thresholds with ``young`` for the young generation and the older two collected
    after about as many allocations as with ``saved`` (Python's: 700, 10, 10, i.e. the
    middle generation every 7,000 and the oldest every 70,000): cyclic garbage that
    outlived a young collection does not wait longer to be freed."""
    t0, t1, t2 = saved
    g1 = max(1, round(t0 * t1 / young))
    g2 = max(1, round(t0 * t1 * t2 / (young * g1)))
    return young, g1, g2


class GarbageCollectorTuning:
    """Extension: freezes the start-up heap and raises the young generation's threshold
    for the crawl (see the module docstring).

    Settings: ``FOCUSED_GC_FREEZE`` (collect, then :func:`gc.freeze` what is alive, when
    the engine starts) and ``FOCUSED_GC_THRESHOLD`` (allocations that trigger a young
    collection; 0 leaves Python's). Stats: ``focused/gc/frozen`` (objects frozen) and
    ``focused/gc/threshold``. Both are undone when the engine stops.
    """

    #: crawls of this process whose engine runs, Python's thresholds before the first,
    #: and whether any of them raised the thresholds or froze the heap: the last to stop
    #: puts back what any of them changed
    _running = 0
    _before: tuple[int, int, int] = (700, 10, 10)
    _raised = False
    _frozen = False

    def __init__(self, freeze: bool, threshold: int, stats: Any = None) -> None:
        self.freeze = freeze
        self.threshold = threshold
        self.stats = stats
        self._started = False

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> GarbageCollectorTuning:
        s = crawler.settings
        ext = cls(
            bool(get(s, "FOCUSED_GC_FREEZE")), int(get(s, "FOCUSED_GC_THRESHOLD")), crawler.stats
        )
        crawler.signals.connect(ext.engine_started, signal=signals.engine_started)
        crawler.signals.connect(ext.engine_stopped, signal=signals.engine_stopped)
        return ext

    def engine_started(self) -> None:
        cls = GarbageCollectorTuning
        if self._started:
            return
        self._started = True
        if cls._running == 0:
            cls._before, cls._raised, cls._frozen = gc.get_threshold(), False, False
        cls._running += 1
        if self.freeze:
            gc.collect()
            gc.freeze()
            cls._frozen = True
            self._stat("focused/gc/frozen", gc.get_freeze_count())
        if self.threshold:
            gc.set_threshold(*older_thresholds(self.threshold, cls._before))
            cls._raised = True
            self._stat("focused/gc/threshold", self.threshold)

    def engine_stopped(self) -> None:
        cls = GarbageCollectorTuning
        if not self._started:
            return
        self._started = False
        cls._running = max(0, cls._running - 1)
        if cls._running:
            return  # another crawl of this process still runs
        if cls._raised:
            gc.set_threshold(*cls._before)
        if cls._frozen:
            gc.unfreeze()
        cls._raised = cls._frozen = False

    def _stat(self, key: str, value: int) -> None:
        if self.stats is not None:
            self.stats.set_value(key, value)
