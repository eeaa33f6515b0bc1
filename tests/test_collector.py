"""The garbage-collector tuning of a crawl (focused/collector.py), through Scrapy's own
signals on a real crawler."""

from __future__ import annotations

import gc
import weakref

import pytest
from scrapy import Spider, signals
from scrapy.utils.test import get_crawler

from focused.collector import GarbageCollectorTuning, older_thresholds


class _Spider(Spider):
    name = "gc-test"


class _Cycle:
    def __init__(self) -> None:
        self.me = self


@pytest.fixture
def restore_gc():
    threshold = gc.get_threshold()
    yield
    gc.unfreeze()
    gc.set_threshold(*threshold)


def _started(settings: dict) -> tuple[object, GarbageCollectorTuning]:
    """A crawler with the extension among its own (as the project's settings enable it),
    after Scrapy's ``engine_started`` signal."""
    extensions = {
        "focused.collector.GarbageCollectorTuning": 0,
        "scrapy.extensions.memusage.MemoryUsage": None,  # needs a running reactor
    }
    crawler = get_crawler(_Spider, {"EXTENSIONS": extensions, **settings})
    ours = [m for m in crawler.extensions.middlewares if isinstance(m, GarbageCollectorTuning)]
    assert len(ours) == 1
    crawler.signals.send_catch_log(signals.engine_started)
    return crawler, ours[0]


def test_engine_start_freezes_the_heap_and_raises_the_threshold_stop_undoes_it(restore_gc):
    before = gc.get_threshold()
    assert gc.get_freeze_count() == 0
    crawler, _ = _started({"FOCUSED_GC_THRESHOLD": 12_345})
    frozen = gc.get_freeze_count()
    assert frozen > 1000  # at least Scrapy's and the test's modules
    assert gc.get_threshold() == older_thresholds(12_345, before)
    # counted right after the freeze; frozen objects freed by reference counting since
    # then have left the permanent generation
    assert crawler.stats.get_value("focused/gc/frozen") >= frozen
    assert crawler.stats.get_value("focused/gc/threshold") == 12_345
    crawler.signals.send_catch_log(signals.engine_stopped)
    assert gc.get_threshold() == before
    assert gc.get_freeze_count() == 0


def test_two_crawls_of_one_process_put_the_collector_back_when_the_last_stops(restore_gc):
    """A ``CrawlerProcess`` script's two crawls: the first to stop leaves the tuning to
    the one still running, and the last puts Python's thresholds back (the second
    crawl had saved the first's raised ones, and left them in place)."""
    before = gc.get_threshold()
    first, _ = _started({"FOCUSED_GC_THRESHOLD": 12_345})
    second, _ = _started({"FOCUSED_GC_THRESHOLD": 12_345})
    tuned = older_thresholds(12_345, before)
    assert gc.get_threshold() == tuned
    first.signals.send_catch_log(signals.engine_stopped)
    assert gc.get_threshold() == tuned and gc.get_freeze_count() > 0  # second still runs
    second.signals.send_catch_log(signals.engine_stopped)
    assert gc.get_threshold() == before
    assert gc.get_freeze_count() == 0
    # the crawl that stops last had tuned nothing itself: it still puts back the first's
    tuned_one, _ = _started({"FOCUSED_GC_THRESHOLD": 12_345})
    plain, _ = _started({"FOCUSED_GC_THRESHOLD": 0, "FOCUSED_GC_FREEZE": False})
    tuned_one.signals.send_catch_log(signals.engine_stopped)
    assert gc.get_threshold() == tuned
    plain.signals.send_catch_log(signals.engine_stopped)
    assert gc.get_threshold() == before
    assert gc.get_freeze_count() == 0


def test_older_generations_keep_their_cadence_in_allocations():
    assert older_thresholds(700, (700, 10, 10)) == (700, 10, 10)
    assert older_thresholds(20_000, (700, 10, 10)) == (20_000, 1, 4)  # every 20k and 80k
    assert older_thresholds(3_500, (700, 10, 10)) == (3_500, 2, 10)  # every 7k and 70k
    assert older_thresholds(10_000_000, (700, 10, 10)) == (10_000_000, 1, 1)


def test_cycles_made_during_the_crawl_are_still_collected(restore_gc):
    crawler, _ = _started({})
    cycle = _Cycle()
    ref = weakref.ref(cycle)
    del cycle
    assert ref() is not None  # only the cyclic collector can free it
    gc.collect()
    assert ref() is None
    crawler.signals.send_catch_log(signals.engine_stopped)


def test_off_leaves_the_collector_as_python_has_it(restore_gc):
    before = gc.get_threshold()
    crawler, _ = _started({"FOCUSED_GC_FREEZE": False, "FOCUSED_GC_THRESHOLD": 0})
    assert gc.get_freeze_count() == 0
    assert gc.get_threshold() == before
    assert crawler.stats.get_value("focused/gc/frozen") is None
    crawler.signals.send_catch_log(signals.engine_stopped)
    assert gc.get_threshold() == before


def test_a_parsed_page_is_freed_without_the_cyclic_collector():
    """The focused spider's parse leaves no response <-> selector cycle behind: with the
    collector off, the response (body, lxml tree) is gone once the last reference goes.
    A response parsed by Scrapy's selector alone is not (the control)."""
    from scrapy.http import HtmlResponse, Request

    from focused.spiders.focused import FocusedSpider

    crawler = get_crawler(FocusedSpider, {"FOCUSED_STRATEGY": "bfs", "FOCUSED_WEB": "sandbox"})
    spider = FocusedSpider.from_crawler(crawler, topic="chemistry")
    body = (
        b"<html><head><title>Acid</title></head><body><main><p>An acid and a base react"
        b" in water to form a salt.</p><a href='/b'>base</a></main></body></html>"
    )

    def response() -> HtmlResponse:
        url = "http://127.0.0.1:1/a"
        return HtmlResponse(url, body=body, encoding="utf-8", request=Request(url))

    was = gc.isenabled()
    gc.disable()
    try:
        control = response()
        control.xpath("//a")
        control_ref = weakref.ref(control)
        del control
        assert control_ref() is not None  # Scrapy's own cycle: only the collector frees it

        parsed = response()
        # the callback Scrapy's scraper calls for a request without one of its own
        # (scrapy/core/scraper.py): ``Spider._parse``, which calls ``parse``
        callback = parsed.request.callback or spider._parse
        out = list(callback(parsed, **parsed.request.cb_kwargs))
        assert any(isinstance(o, Request) for o in out)  # the page was really parsed
        ref = weakref.ref(parsed)
        del parsed, out
        assert ref() is None
    finally:
        if was:
            gc.enable()
        spider.close_web(spider)
