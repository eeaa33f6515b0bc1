"""FocusedScheduler and its journal, used directly (no engine): order, promotion, the four
queues, pause/resume with JOBDIR and resume after a simulated kill -9."""

from __future__ import annotations

import contextlib
import logging
import os
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from itemadapter import ItemAdapter
from scrapy import Request, Spider
from scrapy import signals as scrapy_signals
from scrapy.http import HtmlResponse
from scrapy.utils.test import get_crawler
from twisted.internet.error import ConnectionRefusedError
from twisted.internet.task import Clock

from bench.command import crawl_command, settings_from_strings
from focused import meta as keys
from focused import signals as focused_signals
from focused.frontier.journal import (
    DONE,
    ERROR,
    IN_FLIGHT,
    WAITING,
    Journal,
    JournalBusy,
    stored_urls,
)
from focused.frontier.memory import Entry
from focused.scheduler import DownloadFailureMiddleware, FocusedScheduler

ROOT = Path(__file__).resolve().parents[1]


class DemoSpider(Spider):
    name = "demo"
    focused_crawl = True  # the project's pipelines serve it (focused.scope)

    def parse(self, response):  # pragma: no cover - never called here
        return []

    def parse_other(self, response):  # pragma: no cover
        return []


#: short names of the crawler's meta keys (focused.meta) for _req
_KEYS = {
    "m": keys.M,
    "hops": keys.HOPS,
    "anchor_relevance": keys.ANCHOR_RELEVANCE,
    "parent_url": keys.PARENT_URL,
    "link_evidence": keys.EVIDENCE,
}


def _req(i: int | str, priority: int = 0, value: float = 0.5, **fields) -> Request:
    url = i if isinstance(i, str) else f"http://127.0.0.1:1/p/{i}.htm"
    meta = {keys.LINK_VALUE: value, keys.M: 100.0, keys.HOPS: 0, keys.ANCHOR_RELEVANCE: 0.3}
    meta.update((_KEYS.get(k, k), v) for k, v in fields.items())
    return Request(url, priority=priority, meta=meta)


def _open(settings: dict | None = None, **kwargs) -> tuple[FocusedScheduler, object]:
    """A scheduler built from a real (not started) crawler, opened with a real spider."""
    crawler = get_crawler(DemoSpider, {"FOCUSED_STRATEGY": "bfs", **(settings or {})})
    crawler.spider = spider = DemoSpider.from_crawler(crawler)
    sched = FocusedScheduler.from_crawler(crawler)
    for k, v in kwargs.items():
        setattr(sched, k, v)
    sched.open(spider)
    return sched, crawler


def _drain(sched: FocusedScheduler) -> list[str]:
    out = []
    while (r := sched.next_request()) is not None:
        out.append(r.url)
    return out


def _respond(crawler, request: Request, status: int = 200) -> HtmlResponse:
    """Fire response_received as the engine does after a download."""
    response = HtmlResponse(request.url, status=status, body=b"<html></html>", request=request)
    crawler.signals.send_catch_log(
        scrapy_signals.response_received, response=response, request=request, spider=crawler.spider
    )
    return response


# --- without a crawler --------------------------------------------------------------
def test_plain_values_priority_then_fifo_and_request_rebuilt():
    sched = FocusedScheduler()  # no crawler, no stats, no JOBDIR
    sched.open(DemoSpider())
    for i, p in enumerate([0, 2, 1, 2, 0]):
        assert sched.enqueue_request(_req(i, p, depth=3, parent_url="http://127.0.0.1:1/"))
    assert len(sched) == 5 and sched.has_pending_requests()
    first = sched.next_request()
    assert first.url.endswith("/1.htm") and first.priority == 2
    assert first.callback is None and first.errback is None  # no errback of the scheduler's
    assert first.meta == {
        "depth": 3,
        keys.LINK_VALUE: 0.5,
        keys.M: 100.0,
        keys.HOPS: 0,
        keys.ANCHOR_RELEVANCE: 0.3,
        keys.PARENT_URL: "http://127.0.0.1:1/",
    }
    assert [u.rsplit("/", 1)[1] for u in _drain(sched)] == ["3.htm", "2.htm", "0.htm", "4.htm"]
    assert not sched.has_pending_requests()
    assert sched.queues() == {"waiting": 0, "in_flight": 5, "done": 0, "error": 0}
    sched.close("finished")


def test_duplicates_are_filtered_canonically_and_promotion_keeps_one():
    sched = FocusedScheduler()
    sched.open(DemoSpider())
    assert sched.enqueue_request(_req("http://e.org/a?x=1&y=2", 1, m=80.0))
    assert not sched.enqueue_request(_req("http://e.org/a?y=2&x=1#f", 1))  # same URL
    assert not sched.enqueue_request(_req("http://e.org/a?x=1&y=2", 0))  # worse
    assert sched.enqueue_request(_req("http://e.org/b", 5))
    assert sched.enqueue_request(_req("http://e.org/a?y=2&x=1", 9, m=100.0))  # promoted
    assert len(sched) == 2 and sched.frontier.promoted == 1 and sched.filtered == 2
    r = sched.next_request()
    assert (r.url, r.priority, r.meta[keys.M]) == ("http://e.org/a?y=2&x=1", 9, 100.0)
    assert not sched.enqueue_request(_req("http://e.org/a?x=1&y=2", 1000))  # in flight
    assert _drain(sched) == ["http://e.org/b"]
    assert not sched.enqueue_request(_req("http://e.org/b", 1000))  # done: never again


def test_extra_meta_referer_and_non_plain_requests_survive():
    spider = DemoSpider()
    sched = FocusedScheduler()
    sched.open(spider)
    # a retry, with the slot the downloader left (the host name): dropped
    r = _req(1, 3, parent_url="http://e.org/", retry_times=1, download_slot="127.0.0.1")
    r.headers["Referer"] = "http://e.org/"
    sched.enqueue_request(r)
    custom = Request("http://e.org/post", method="POST", body=b"q=1", callback=spider.parse_other)
    sched.enqueue_request(custom)
    got = sched.next_request()
    assert got.meta["retry_times"] == 1 and "download_slot" not in got.meta
    assert got.headers.get("Referer") == b"http://e.org/"
    assert sched.next_request() is custom


def test_annealing_is_seeded_and_cold_annealing_is_best_first():
    def order(anneal: bool, t0: float, seed: int = 1) -> list[str]:
        s = FocusedScheduler(anneal=anneal, t0=t0, alpha=1.0, t_min=t0, k=8, seed=seed)
        s.open(DemoSpider())
        for i in range(60):
            s.enqueue_request(_req(i, 1000 - i, value=1 - i / 100))
        return _drain(s)

    assert order(True, 0.0) == order(False, 0.0)
    hot = order(True, 0.5)
    assert hot == order(True, 0.5) and hot != order(False, 0.0)
    assert sorted(hot) == sorted(order(False, 0.0))
    assert hot != order(True, 0.5, seed=2)


# --- with a crawler: stats and the engine's signals ---------------------------------
def test_drop_done_answers_as_enqueue_would_and_counts_the_same():
    """``drop_done`` (the spider builds no request for a link it drops) says True exactly
    for the links ``enqueue_request`` would filter as done, and counts them as filtered;
    a waiting URL (promotion) and one in flight (a retry may make it wait) get through."""

    def run(use_drop_done: bool) -> tuple[list[bool], list[str], int, int]:
        sched = FocusedScheduler()
        sched.open(DemoSpider())
        for i in range(5):
            sched.enqueue_request(_req(i, 10 - i))
        for _ in range(3):
            sched.next_request()  # 0, 1, 2 in flight
        sched._finish(sched._fingerprint(_req(0)), DONE)
        sched._finish(sched._fingerprint(_req(1)), ERROR)
        answers, links = [], [0, 1, 2, 3, 9, 0, 4]
        for i in links:  # done, error, in flight, waiting, new, done again, waiting
            if use_drop_done and sched.drop_done(_req(i).url):
                answers.append(False)
                continue
            answers.append(sched.enqueue_request(_req(i, 100)))
        return answers, _drain(sched), sched.filtered, sched.frontier.promoted

    assert run(True) == run(False)
    sched = FocusedScheduler()
    sched.open(DemoSpider())
    sched.enqueue_request(_req(0))
    assert not sched.drop_done(_req(0).url)  # waiting
    sched.next_request()
    assert not sched.drop_done(_req(0).url)  # in flight
    sched._finish(sched._fingerprint(_req(0)), DONE)
    assert sched.drop_done(_req(0).url) and sched.filtered == 1  # done
    assert sched.drop_done("http://127.0.0.1:1/p/0.htm#top")  # the same URL, canonically
    assert not sched.drop_done(_req(7).url) and sched.filtered == 2  # never seen


def test_drop_waiting_answers_as_enqueue_would_and_counts_the_same():
    """``drop_waiting`` (the priority middleware drops a scored link it says True for)
    says True exactly for the links ``enqueue_request`` would filter because their URL
    waits at a priority at least as high, and counts them as filtered: same answers,
    same order out, same counts, same promotions as with every link enqueued."""

    def run(use: bool) -> tuple[list[bool], list[str], int, int, int]:
        sched = FocusedScheduler()
        sched.open(DemoSpider())
        for i in range(8):
            sched.enqueue_request(_req(i, 10 - i))
        for _ in range(2):
            sched.next_request()  # 0, 1 in flight
        sched._finish(sched._fingerprint(_req(0)), DONE)
        answers = []
        # done, in flight, waiting: lower, equal, higher, new, waiting again
        links = [(0, 50), (1, 50), (2, 3), (3, 7), (4, 7), (9, 1), (4, 6), (5, -(1 << 70))]
        for i, prio in links:
            if use and sched.drop_waiting(_req(i).url, prio):
                answers.append(False)
                continue
            answers.append(sched.enqueue_request(_req(i, prio)))
        promoted = sched.frontier.promoted
        return answers, _drain(sched), sched.filtered, promoted, sched.enqueued

    assert run(True) == run(False)
    sched = FocusedScheduler()
    sched.open(DemoSpider())
    sched.enqueue_request(_req(0, 5))
    assert not sched.drop_waiting(_req(0).url, 6)  # a promotion
    assert sched.drop_waiting(_req(0).url, 5) and sched.filtered == 1
    assert sched.drop_waiting("http://127.0.0.1:1/p/0.htm#top", 4)  # the same URL
    assert not sched.drop_waiting(_req(7).url, 0)  # never seen
    sched.next_request()
    assert not sched.drop_waiting(_req(0).url, 0)  # in flight
    sched._finish(sched._fingerprint(_req(0)), DONE)
    assert not sched.drop_waiting(_req(0).url, 0) and sched.filtered == 2  # done


def test_the_priority_middleware_drops_scored_links_that_would_promote_nothing():
    """With the scheduler's ``drop_waiting``, a page's scored link to a URL waiting at a
    priority at least as high leaves the priority middleware no more (counted as
    filtered, scored as before); a promotion, a new URL, a ``dont_filter`` request and
    a URL over ``URLLENGTH_LIMIT`` go on."""
    from focused.items import PageItem
    from focused.middlewares import FocusedPriorityMiddleware
    from focused.spiders.focused import FocusedSpider

    crawler = get_crawler(
        FocusedSpider,
        {"FOCUSED_STRATEGY": "bfs", "URLLENGTH_LIMIT": 60, "FOCUSED_WEB": "sandbox"},
    )
    spider = FocusedSpider.from_crawler(crawler, topic="chemistry")
    crawler.spider = spider
    mw = FocusedPriorityMiddleware.from_crawler(crawler)
    assert mw.drop_waiting is None
    sched = FocusedScheduler.from_crawler(crawler)
    sched.open(spider)
    assert mw.drop_waiting == sched.drop_waiting
    long_url = "http://127.0.0.1:1/p/" + "x" * 60
    for url, depth in ((_req(0).url, 1), (_req(1).url, 5), (long_url, 1)):
        sched.enqueue_request(Request(url, priority=-depth, meta={keys.DEPTH: depth}))
    parent = Request("http://127.0.0.1:1/", meta={keys.DEPTH: 1})
    response = HtmlResponse(parent.url, body=b"<html></html>", request=parent)
    links = [_req(0).url, _req(1).url, _req(2).url, long_url]
    out = [Request(u, meta={keys.DEPTH: 2}) for u in links]
    out.append(Request(_req(0).url, dont_filter=True, meta={keys.DEPTH: 2}))
    out.append(PageItem(url=parent.url))
    got = list(mw.process_spider_output(response, out))
    passed = [o.url for o in got if isinstance(o, Request)]
    # 0 waits at depth 1 (bfs: not lower than depth 2's priority): dropped, counted
    assert passed == [_req(1).url, _req(2).url, long_url, _req(0).url]
    assert sched.filtered == 1
    mw._flush_counts()
    assert crawler.stats.get_value("focused/links/scored") == 5
    sched.close("finished")
    spider.close_web(spider)


def test_the_scheduler_hands_its_done_test_to_the_spider():
    from focused.spiders.focused import FocusedSpider

    crawler = get_crawler(FocusedSpider, {"FOCUSED_STRATEGY": "bfs", "FOCUSED_WEB": "sandbox"})
    spider = FocusedSpider.from_crawler(crawler, topic="chemistry")
    crawler.spider = spider
    assert spider.drop_done is None
    sched = FocusedScheduler.from_crawler(crawler)
    sched.open(spider)
    assert spider.drop_done == sched.drop_done
    sched.enqueue_request(_req(0))
    sched.next_request()
    sched._finish(sched._fingerprint(_req(0)), DONE)
    assert spider._request(_req(0).url, 0.5, "http://127.0.0.1:1/") is None
    assert spider._request(_req(1).url, 0.5, "http://127.0.0.1:1/").url == _req(1).url
    sched.close("finished")
    spider.close_web(spider)


def test_four_queues_in_stats_from_signals_errback_retry_and_redirect():
    sched, crawler = _open({"FOCUSED_STRATEGY": "annealing"})
    assert sched.anneal and sched.annealer.k == 8
    for i in range(6):
        sched.enqueue_request(_req(i, 10 - i, value=1 - i / 10))
    reqs = [sched.next_request() for _ in range(5)]
    stats = crawler.stats
    assert stats.get_value("focused/queue/waiting") == 1
    assert stats.get_value("focused/queue/in_flight") == 5
    _respond(crawler, reqs[0])
    _respond(crawler, reqs[1], status=404)
    failing = DownloadFailureMiddleware.from_crawler(crawler)
    assert failing.process_exception(reqs[2], ConnectionRefusedError()) is None  # Scrapy goes on
    retry = reqs[3].replace(dont_filter=True)
    retry.meta["retry_times"] = 1
    assert sched.enqueue_request(retry)  # a retry goes back to waiting
    redirected = reqs[4].replace(url="http://127.0.0.1:1/moved.htm")
    redirected.meta["redirect_urls"] = [reqs[4].url]
    assert sched.enqueue_request(redirected)
    assert sched.queues() == {"waiting": 3, "in_flight": 0, "done": 2, "error": 2}
    assert stats.get_value("focused/queue/done") == 2
    assert stats.get_value("focused/queue/error") == 2
    assert stats.get_value("focused/scheduler/requeued") == 1
    assert stats.get_value("focused/annealing/temperature") == pytest.approx(0.05 * 0.995**5)
    assert stats.get_value("focused/dupefilter/filtered") == 0
    assert not sched.enqueue_request(_req(0))
    # Enqueues are counted, and written to the stats at the next dequeue (or close).
    assert sched.filtered == 1
    assert stats.get_value("focused/dupefilter/filtered") == 0
    assert sched.next_request().meta.get("retry_times") in (None, 1)
    assert stats.get_value("focused/dupefilter/filtered") == 1
    assert stats.get_value("scheduler/enqueued") == sched.enqueued == 8
    assert stats.get_value("scheduler/dequeued") == 6
    sched.close("finished")


def test_frontier_setting_is_checked():
    # FOCUSED_FRONTIER = "redis" is resolved into SCHEDULER by the settings (see
    # tests/test_redis_frontier.py); the in-memory scheduler refuses it, and nonsense.
    crawler = get_crawler(DemoSpider, {"FOCUSED_FRONTIER": "redis"})
    with pytest.raises(ValueError, match="RedisScheduler"):
        FocusedScheduler.from_crawler(crawler)
    crawler = get_crawler(DemoSpider, {"FOCUSED_FRONTIER": "disk"})
    with pytest.raises(ValueError, match="FOCUSED_FRONTIER"):
        FocusedScheduler.from_crawler(crawler)


# --- JOBDIR: pause and resume ------------------------------------------------------
def _run_uninterrupted(n: int, settings: dict) -> list[str]:
    sched, crawler = _open(settings)
    for i in range(n):
        sched.enqueue_request(_req(i, (i * 7) % 13, value=((i * 7) % 13) / 13))
    out = []
    while (r := sched.next_request()) is not None:
        out.append(r.url)
        _respond(crawler, r)
    sched.close("finished")
    return out


@pytest.mark.parametrize("strategy", ["bfs", "annealing"])
def test_close_and_reopen_continues_the_same_order(tmp_path, strategy):
    settings = {"FOCUSED_STRATEGY": strategy, "FOCUSED_SA_T0": 0.3, "FOCUSED_SA_ALPHA": 0.99}
    full = _run_uninterrupted(40, settings)
    jobdir = str(tmp_path / "job")
    sched, crawler = _open({**settings, "JOBDIR": jobdir})
    for i in range(40):
        sched.enqueue_request(_req(i, (i * 7) % 13, value=((i * 7) % 13) / 13))
    first = []
    for _ in range(15):
        r = sched.next_request()
        first.append(r.url)
        _respond(crawler, r)
    sched.close("closespider_itemcount")

    sched, crawler = _open({**settings, "JOBDIR": jobdir})
    assert sched.queues() == {"waiting": 25, "in_flight": 0, "done": 15, "error": 0}
    assert len(sched.seen) == 40
    assert not sched.enqueue_request(_req(first[0], 100))  # done in the first run
    rest = []
    while (r := sched.next_request()) is not None:
        rest.append(r.url)
        _respond(crawler, r)
    sched.close("finished")
    assert first + rest == full
    if strategy == "annealing":
        assert full != sorted(full, key=lambda u: -((int(u.split("/")[-1][:-4]) * 7) % 13))


class WasteSpider(DemoSpider):
    """A spider that learnt, after their links were found, that ``/talk/`` URLs are
    waste, and hands that judgement to the scheduler as the focused spider hands over its
    URL shapes: a ``frontier_waste_check`` handler connected in ``from_crawler``."""

    learnt = True

    @classmethod
    def from_crawler(cls, crawler, *args, **kwargs):
        spider = super().from_crawler(crawler, *args, **kwargs)
        crawler.signals.connect(spider._waste_check, signal=focused_signals.frontier_waste_check)
        return spider

    def _waste_check(self):
        return self.wasteful

    def wasteful(self, url: str) -> bool:
        return self.learnt and "/talk/" in url


def _waste_crawler(spidercls: type[Spider] = WasteSpider) -> tuple[object, Spider]:
    crawler = get_crawler(spidercls)
    crawler.spider = spider = spidercls.from_crawler(crawler)
    return crawler, spider


def test_waiting_link_of_a_wasteful_shape_is_requeued_at_the_bottom(tmp_path):
    """Talk links found with the best priority come up, are re-queued below every content
    link (kept, as chrome, without rescoring evidence), and the re-queue is journaled:
    a resumed crawl keeps them at the bottom. A re-queued pick does not cool the
    annealing temperature."""
    base = "http://127.0.0.1:1"
    jobdir = str(tmp_path / "job")
    crawler, spider = _waste_crawler()
    sched = FocusedScheduler(jobdir=jobdir, waste_recheck=True, crawler=crawler)
    sched.open(spider)
    for i in range(3):
        sched.enqueue_request(_req(f"{base}/talk/{i}", 10, link_evidence=b"ev", depth=1))
    for i in range(3):
        sched.enqueue_request(_req(f"{base}/p/{i}", 5, depth=1))
    chrome = _req(f"{base}/nav", keys.CHROME_PRIORITY - 2, depth=2)
    sched.enqueue_request(chrome)
    first = sched.next_request()
    assert first.url == f"{base}/p/0" and sched.waste_requeued == 3
    sched.close("shutdown")  # p/0 in flight, not stored: waits again after the resume

    spider.learnt = False  # nothing re-checked now: the journal keeps the order
    sched = FocusedScheduler(jobdir=jobdir, waste_recheck=True, crawler=crawler)
    sched.open(spider)
    out = []
    while (r := sched.next_request()) is not None:
        out.append(r)
    assert [r.url.removeprefix(base) for r in out] == [
        "/p/0",
        "/p/1",
        "/p/2",
        "/talk/0",
        "/talk/1",
        "/talk/2",
        "/nav",
    ]
    talk = out[3]
    assert talk.priority == keys.CHROME_PRIORITY - 1
    assert talk.meta[keys.CHROME] is True and talk.meta[keys.LINK_VALUE] == 0.0
    assert keys.EVIDENCE not in talk.meta  # no rescore lifts it again
    sched.close("finished")

    crawler, spider = _waste_crawler()
    sched = FocusedScheduler(
        waste_recheck=True, anneal=True, t0=0.5, alpha=0.5, k=4, seed=1, crawler=crawler
    )
    sched.open(spider)
    for i in range(3):
        sched.enqueue_request(_req(f"{base}/talk/{i}", 10, value=0.9))
    for i in range(4):  # the top K once the talk links are down
        sched.enqueue_request(_req(f"{base}/p/{i}", 5, value=0.5))
    assert "/p/" in sched.next_request().url and sched.waste_requeued >= 1
    assert sched.annealer.picks == 1 and sched.annealer.temperature == 0.25


class DuckSpider(DemoSpider):
    """Has a method named as the focused spider's, but hands nothing over."""

    def wasteful_link(self, url: str) -> bool:  # pragma: no cover - must not be called
        raise AssertionError("the scheduler probed the spider")


def test_only_a_handed_over_check_re_checks_waiting_links():
    """No ``frontier_waste_check`` handler: no re-check, whatever the spider's methods;
    with the setting off, a handler is not asked; with two, either one's verdict counts."""
    base = "http://127.0.0.1:1"
    for spidercls, recheck, want in (
        (DuckSpider, True, ["/talk/0", "/p/0"]),
        (WasteSpider, False, ["/talk/0", "/p/0"]),
        (WasteSpider, True, ["/p/0", "/talk/0"]),
    ):
        crawler, spider = _waste_crawler(spidercls)
        sched = FocusedScheduler(waste_recheck=recheck, crawler=crawler)
        sched.open(spider)
        sched.enqueue_request(_req(f"{base}/talk/0", 10))
        sched.enqueue_request(_req(f"{base}/p/0", 5))
        assert [u.removeprefix(base) for u in _drain(sched)] == want, spidercls
        assert sched.waste_requeued == (want[0] == "/p/0")
        sched.close("finished")

    crawler, spider = _waste_crawler()

    def forum(url: str) -> bool:
        return "/forum/" in url

    crawler.signals.connect(lambda: forum, signal=focused_signals.frontier_waste_check, weak=False)
    crawler.signals.connect(lambda: None, signal=focused_signals.frontier_waste_check, weak=False)
    sched = FocusedScheduler(waste_recheck=True, crawler=crawler)
    sched.open(spider)
    for path, priority in (("/forum/0", 10), ("/talk/0", 9), ("/p/0", 5)):
        sched.enqueue_request(_req(base + path, priority))
    assert [u.removeprefix(base) for u in _drain(sched)] == ["/p/0", "/forum/0", "/talk/0"]
    assert sched.waste_requeued == 2


def test_in_flight_at_close_is_requeued_unless_stored(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    db = sqlite3.connect(out / "pages.sqlite3")
    db.execute("CREATE TABLE pages (id INTEGER PRIMARY KEY, url TEXT UNIQUE)")
    db.execute("INSERT INTO pages (url) VALUES (?)", ("http://127.0.0.1:1/p/0.htm",))
    db.commit()
    db.close()
    settings = {"JOBDIR": str(tmp_path / "job"), "FOCUSED_OUTPUT_DIR": str(out)}
    sched, _ = _open(settings)
    for i in range(5):
        sched.enqueue_request(_req(i, 10 - i))
    assert [sched.next_request().url for _ in range(2)][0].endswith("/0.htm")
    sched.close("shutdown")  # 0 and 1 still in flight
    sched, _ = _open(settings)
    assert sched.queues() == {"waiting": 4, "in_flight": 0, "done": 1, "error": 0}
    assert sched.next_request().url.endswith("/1.htm")


def test_dont_filter_requeues_in_this_run_but_not_after_resume(tmp_path):
    settings = {"JOBDIR": str(tmp_path / "job")}
    sched, crawler = _open(settings)
    sched.enqueue_request(_req(1))
    r = sched.next_request()
    _respond(crawler, r)
    assert sched.enqueue_request(_req(1, dont_filter=True).replace(dont_filter=True))
    r = sched.next_request()
    assert r.dont_filter
    _respond(crawler, r)
    sched.close("finished")
    sched, _ = _open(settings)
    assert not sched.enqueue_request(_req(1).replace(dont_filter=True))
    assert not sched.has_pending_requests()


def test_custom_callback_request_is_journaled_with_its_callback(tmp_path):
    settings = {"JOBDIR": str(tmp_path / "job")}
    sched, crawler = _open(settings)
    req = Request("http://e.org/x", callback=crawler.spider.parse_other, cb_kwargs={"a": 1})
    sched.enqueue_request(req)
    sched.enqueue_request(Request("http://e.org/lambda", callback=lambda r: None, priority=-1))
    sched.close("shutdown")
    assert crawler.stats.get_value("focused/scheduler/unserializable") == 1
    sched, crawler = _open(settings)
    got = sched.next_request()
    assert got.url == "http://e.org/x" and got.cb_kwargs == {"a": 1}
    assert got.callback.__name__ == "parse_other"
    assert sched.next_request() is None  # the lambda one is lost, as documented


def test_checkpoint_signal_commits_the_journal(tmp_path):
    jobdir = tmp_path / "job"
    sched, crawler = _open({"JOBDIR": str(jobdir)})
    sched.next_request()  # opens a fresh transaction
    sched.enqueue_request(_req(1))
    reader = sqlite3.connect(jobdir / "frontier.sqlite3")  # another process would see:
    waiting = "SELECT COUNT(*) FROM urls WHERE state=0"
    assert reader.execute(waiting).fetchone() == (0,)  # not committed yet
    crawler.signals.send_catch_log(signal=focused_signals.frontier_checkpoint)
    assert reader.execute(waiting).fetchone() == (1,)
    reader.close()
    sched.close("finished")


class UserStorePipeline:
    """A user's own page store (not the project's class): it sends the same signals."""

    def __init__(self, crawler) -> None:
        self.crawler = crawler
        self.batch: list[str] = []

    @classmethod
    def from_crawler(cls, crawler):
        return cls(crawler)

    def open_spider(self) -> None:
        self.crawler.signals.send_catch_log(focused_signals.page_store_opened)

    def process_item(self, item):
        self.batch.append(ItemAdapter(item)["url"])
        return item

    def commit(self) -> None:
        send = self.crawler.signals.send_catch_log
        send(focused_signals.frontier_checkpoint)
        # ... its own COMMIT here ...
        send(focused_signals.pages_stored, urls=self.batch)
        self.batch = []


def _open_with_pipelines(tmp_path: Path, pipelines: dict, **settings) -> tuple:
    """A scheduler, then the item pipelines, opened in the order Scrapy 2.19 opens them
    (``ExecutionEngine.open_spider_async``: the scheduler first)."""
    from scrapy.pipelines import ItemPipelineManager

    jobdir = tmp_path / "job"
    sched, crawler = _open(
        {
            "JOBDIR": str(jobdir),
            "ITEM_PIPELINES": pipelines,
            "FOCUSED_OUTPUT_DIR": str(tmp_path / "out"),
            "FOCUSED_STORE_THREAD": False,
            **settings,
        }
    )
    manager = ItemPipelineManager.from_crawler(crawler)
    for pipe in manager.middlewares:
        if hasattr(pipe, "call_later"):  # a batch's time bound: Twisted's clock, no reactor
            pipe.call_later = Clock().callLater
        pipe.open_spider()
    reader = sqlite3.connect(jobdir / "frontier.sqlite3")

    def journaled(url: str) -> int:  # the state another process would read
        sched._commit(force=True)
        return reader.execute("SELECT state FROM urls WHERE url = ?", (url,)).fetchone()[0]

    return sched, crawler, manager.middlewares, journaled, reader


def _through_pipelines(crawler, pipes, response) -> dict:
    from focused.items import PageItem

    item = PageItem(url=response.url, title="t", body=b"<html></html>")
    for pipe in pipes:
        item = pipe.process_item(item)
    crawler.signals.send_catch_log(
        scrapy_signals.item_scraped, item=item, response=response, spider=crawler.spider
    )
    return item


def test_without_a_page_store_the_items_pass_journals_the_page_done(tmp_path):
    sched, crawler, pipes, journaled, reader = _open_with_pipelines(tmp_path, {})
    assert not sched.waits_for_store
    sched.enqueue_request(_req(1))
    response = _respond(crawler, sched.next_request())
    assert sched.queues()["done"] == 1
    assert journaled(response.url) == IN_FLIGHT  # fetched, its item not through yet
    _through_pipelines(crawler, pipes, response)
    assert journaled(response.url) == DONE
    reader.close()
    sched.close("finished")


def test_a_users_own_store_pipeline_that_sends_the_signals_is_waited_for(tmp_path):
    """No class is looked at: a user's store that sends page_store_opened is waited for."""
    sched, crawler, pipes, journaled, reader = _open_with_pipelines(
        tmp_path, {UserStorePipeline: 300}
    )
    assert sched.waits_for_store  # heard from the pipeline when it opened
    sched.enqueue_request(_req(1))
    sched.enqueue_request(_req(2))
    first = _respond(crawler, sched.next_request())
    second = _respond(crawler, sched.next_request())
    _through_pipelines(crawler, pipes, first)
    _through_pipelines(crawler, pipes, second)
    assert journaled(first.url) == IN_FLIGHT  # through the pipelines, not committed yet
    (store,) = pipes
    store.commit()
    assert journaled(first.url) == journaled(second.url) == DONE
    reader.close()
    sched.close("finished")


def test_the_project_store_journals_a_page_done_once_its_row_is_committed(tmp_path):
    sched, crawler, pipes, journaled, reader = _open_with_pipelines(
        tmp_path, {"focused.pipelines.PageStorePipeline": 300}, FOCUSED_STORE_COMMIT_EVERY=2
    )
    assert sched.waits_for_store
    for i in (1, 2):
        sched.enqueue_request(_req(i))
    first = _respond(crawler, sched.next_request())
    second = _respond(crawler, sched.next_request())
    _through_pipelines(crawler, pipes, first)
    # its row sits in the store's open transaction: not done yet
    assert journaled(first.url) == IN_FLIGHT
    assert _stored(tmp_path / "out") == set()
    _through_pipelines(crawler, pipes, second)  # the second row commits the batch
    assert _stored(tmp_path / "out") == {first.url, second.url}
    assert journaled(first.url) == journaled(second.url) == DONE
    reader.close()
    for pipe in pipes:
        pipe.close_spider()
    sched.close("finished")


@pytest.mark.parametrize("with_store", [True, False])
def test_a_page_without_item_is_journaled_done_at_the_next_commit(tmp_path, with_store):
    """A fetched page the spider skips (not text) yields no item: it is journaled done at
    the next commit, not at close, so a resume after kill -9 does not fetch it again."""
    pipelines = {"focused.pipelines.PageStorePipeline": 300} if with_store else {}
    jobdir = tmp_path / "job"
    sched, crawler = _open({"JOBDIR": str(jobdir), "ITEM_PIPELINES": pipelines})
    sched.enqueue_request(_req(1))
    sched.enqueue_request(_req(2))
    skipped = _respond(crawler, sched.next_request())
    kept = _respond(crawler, sched.next_request())
    reader = sqlite3.connect(jobdir / "frontier.sqlite3")

    def journaled() -> dict[str, int]:
        crawler.signals.send_catch_log(signal=focused_signals.frontier_checkpoint)
        return dict(reader.execute("SELECT url, state FROM urls"))

    crawler.signals.send_catch_log(focused_signals.page_skipped, response=skipped)
    states = journaled()
    assert states[skipped.url] == DONE
    assert states[kept.url] == IN_FLIGHT  # its item has not gone through the pipelines
    # a second signal for the same page changes nothing
    crawler.signals.send_catch_log(focused_signals.page_skipped, response=skipped)
    assert sched.queues()["done"] == 2
    reader.close()
    sched.close("finished")


def _done_without_and_with_the_store(tmp_path: Path) -> tuple[list[str], dict[str, str]]:
    """A first run with the project's page store: two pages stored, one skipped by the
    spider, one answering 404, one redirecting (its target left waiting). The URLs of
    the stored pages, and the others by what happened to them."""
    store = {"focused.pipelines.PageStorePipeline": 300}
    sched, crawler, pipes, journaled, reader = _open_with_pipelines(tmp_path, store)
    for i in range(1, 7):
        sched.enqueue_request(_req(i, 10 - i))
    stored = [_respond(crawler, sched.next_request()) for _ in range(2)]
    for response in stored:
        _through_pipelines(crawler, pipes, response)
    skipped = _respond(crawler, sched.next_request())
    crawler.signals.send_catch_log(focused_signals.page_skipped, response=skipped)
    failed = _respond(crawler, sched.next_request(), status=404)
    moved = sched.next_request()
    target = "http://127.0.0.1:1/p/moved-here.htm"
    sched.enqueue_request(Request(target, meta={"redirect_urls": [moved.url]}))
    assert [journaled(r.url) for r in stored] == [DONE, DONE]
    assert journaled(skipped.url) == journaled(moved.url) == DONE
    reader.close()
    for pipe in pipes:
        pipe.close_spider()
    sched.close("finished")
    others = {"skipped": skipped.url, "failed": failed.url, "moved": moved.url, "target": target}
    return [r.url for r in stored], others


@pytest.mark.parametrize("how", ["folder removed", "older copy"])
def test_a_resume_fetches_again_the_stored_pages_the_store_no_longer_holds(tmp_path, how):
    """Nothing marked done that was not stored: the pages the journal says were stored
    wait again when the page store does not hold them (its folder removed, or its
    database an older copy); pages done without being stored stay done."""
    out = tmp_path / "out"
    if how == "older copy":  # a copy taken before the first run stored anything
        sched, _, pipes, _, reader = _open_with_pipelines(
            tmp_path, {"focused.pipelines.PageStorePipeline": 300}
        )
        reader.close()
        for pipe in pipes:
            pipe.close_spider()
        sched.close("shutdown")
        old = (out / "pages.sqlite3").read_bytes()
    stored, others = _done_without_and_with_the_store(tmp_path)
    assert _stored(out) == set(stored)
    if how == "older copy":
        for name in ("pages.sqlite3-wal", "pages.sqlite3-shm"):
            (out / name).unlink(missing_ok=True)
        (out / "pages.sqlite3").write_bytes(old)
    else:
        shutil.rmtree(out)
    sched, crawler, pipes, journaled, reader = _open_with_pipelines(
        tmp_path, {"focused.pipelines.PageStorePipeline": 300}
    )
    # the two stored pages and the redirect's target wait; the skipped page, the
    # redirecting URL (done, not stored) and the 404 (an error) do not
    assert sched.queues() == {"waiting": 4, "in_flight": 0, "done": 2, "error": 1}
    assert set(_drain(sched)) == {*stored, others["target"], "http://127.0.0.1:1/p/6.htm"}
    assert crawler.stats.get_value("focused/store/missing_requeued") == 2
    reader.close()
    for pipe in pipes:
        pipe.close_spider()
    sched.close("finished")


def test_a_journal_from_before_the_stored_marks_learns_them_from_the_store(tmp_path):
    """A JOBDIR journaled before done rows said whether they were stored: at its first
    resume the done URLs the store holds are marked stored, so that a store lost later
    is noticed; the others (not stored) stay done whatever happens to the store."""
    stored, others = _done_without_and_with_the_store(tmp_path)
    db = sqlite3.connect(tmp_path / "job" / "frontier.sqlite3")
    db.execute("ALTER TABLE urls DROP COLUMN stored")  # as written before the marks
    db.commit()
    db.close()
    sched, crawler, pipes, journaled, reader = _open_with_pipelines(
        tmp_path, {"focused.pipelines.PageStorePipeline": 300}
    )
    assert crawler.stats.get_value("focused/store/missing_requeued") is None
    marked = reader.execute("SELECT url FROM urls WHERE stored = 1").fetchall()
    assert {u for (u,) in marked} == set(stored)
    reader.close()
    for pipe in pipes:
        pipe.close_spider()
    sched.close("shutdown")
    shutil.rmtree(tmp_path / "out")
    sched, crawler, pipes, journaled, reader = _open_with_pipelines(
        tmp_path, {"focused.pipelines.PageStorePipeline": 300}
    )
    # the pages not stored stay done
    assert set(_drain(sched)) == {*stored, others["target"], "http://127.0.0.1:1/p/6.htm"}
    assert crawler.stats.get_value("focused/store/missing_requeued") == 2
    reader.close()
    for pipe in pipes:
        pipe.close_spider()
    sched.close("finished")


def test_the_spider_says_when_it_skips_a_page():
    from scrapy.http import Response

    from focused.spiders.focused import FocusedSpider

    crawler = get_crawler(FocusedSpider, {"FOCUSED_WEB": "sandbox"})
    spider = FocusedSpider.from_crawler(crawler, topic="chemistry")
    heard: list[str] = []

    def hear(response, **kwargs) -> None:  # connected weakly: kept alive by this scope
        heard.append(response.url)

    crawler.signals.connect(hear, signal=focused_signals.page_skipped)
    request = Request("http://127.0.0.1:1/a.bin")
    binary = Response(request.url, body=b"\x00\x01", request=request)
    assert list(spider.parse(binary)) == []
    html = HtmlResponse("http://127.0.0.1:1/a.htm", body=b"<title>x</title>", request=request)
    assert [type(x).__name__ for x in spider.parse(html)] == ["PageItem"]
    assert heard == [binary.url]
    assert crawler.stats.get_value("focused/skipped/not_text") == 1


# --- the journal alone and a simulated kill -9 --------------------------------------
def test_a_journal_between_its_commit_and_its_next_transaction_is_still_held(tmp_path):
    """The journal keeps SQLite's write lock across commits by ``COMMIT`` then ``BEGIN
    IMMEDIATE``: in between, a second crawl of the same ``JOBDIR`` took the journal (it
    waited on the lock up to 2 s) and the first crawl's next write waited on it, or
    failed. The journal's lock file is held for as long as it is open."""
    first = Journal(tmp_path / "f.sqlite3")
    first._db.execute("COMMIT")  # the instant inside first.commit()
    try:
        with pytest.raises(JournalBusy, match=f"pid {os.getpid()}"):
            Journal(tmp_path / "f.sqlite3")
    finally:
        first._db.execute("BEGIN IMMEDIATE")
        first.close()
    Journal(tmp_path / "f.sqlite3").close()  # let go once closed


def test_journal_write_reopen_same_state(tmp_path):
    j = Journal(tmp_path / "f.sqlite3")
    assert j.run == 1
    for i in range(5):
        j.push(Entry(url=f"http://e/{i}", fp=i, priority=i, value=i / 10, seq=i, m=51.2))
    j.set_state(0, IN_FLIGHT)
    j.set_state(1, DONE)
    j.set_state(2, ERROR)
    j.put_meta("k", b"v")
    j.close()
    j = Journal(tmp_path / "f.sqlite3")
    assert j.run == 2 and j.get_meta("k") == b"v"
    assert j.counts() == {WAITING: 2, IN_FLIGHT: 1, DONE: 1, ERROR: 1}
    rows = list(j.rows(WAITING))
    assert [r.entry.fp for r in rows] == [3, 4] and rows[0].entry.m == 51.2
    assert sorted(j.fingerprints()) == [0, 1, 2, 3, 4]
    assert j.state_of(1) == (DONE, 1) and j.state_of(9) is None
    with pytest.raises(JournalBusy, match="in use by another crawl"):
        Journal(tmp_path / "f.sqlite3")  # j holds its write transaction
    j.close()
    assert stored_urls(tmp_path / "none.sqlite3", ["http://e/0"]) == set()
    assert stored_urls(None, ["http://e/0"]) == set()
    # a scheduler without a page store still resumes (in-flight rows are re-queued)
    sched = FocusedScheduler(jobdir=str(tmp_path / "job"))
    sched.open(DemoSpider())
    sched.enqueue_request(_req(1))
    sched.next_request()
    sched.close("shutdown")
    sched = FocusedScheduler(jobdir=str(tmp_path / "job"))
    sched.open(DemoSpider())
    assert sched.queues() == {"waiting": 1, "in_flight": 0, "done": 0, "error": 0}


KILL_SCRIPT = textwrap.dedent(
    """
    import os, sys
    sys.path.insert(0, {root!r})
    from scrapy import Request, Spider
    from scrapy.utils.test import get_crawler
    from focused import signals as fs
    from focused.scheduler import FocusedScheduler

    class DemoSpider(Spider):
        name = "demo"

    crawler = get_crawler(DemoSpider, {settings!r})
    spider = DemoSpider.from_crawler(crawler)
    sched = FocusedScheduler.from_crawler(crawler)
    sched.open(spider)
    for i in range(30):
        sched.enqueue_request(Request(f"http://127.0.0.1:1/p/{{i}}.htm", priority=100 - i,
                                      meta={{"focused_value": 1 - i / 100}}))
    for _ in range(6):
        sched.next_request()          # commits: 6 in flight
    crawler.signals.send_catch_log(signal=fs.frontier_checkpoint)
    for i in range(30, 40):            # never committed
        sched.enqueue_request(Request(f"http://127.0.0.1:1/p/{{i}}.htm", priority=1000))
    os._exit(0)
    """
)


def test_a_claimed_journal_is_handed_to_the_scheduler_and_refuses_another(tmp_path):
    """The crawl command takes the journal before Scrapy starts (Journal.claim): a
    second opener is refused and told which crawl has it; the scheduler gets the same
    journal, once."""
    job = tmp_path / "job"
    claimed = Journal.claim(job)
    assert Journal.claim(job) is claimed  # the spider's claim, after the command's
    with pytest.raises(JournalBusy) as info:
        Journal(job / "frontier.sqlite3")
    assert info.value.owner is not None and info.value.owner["pid"] == os.getpid()
    sched = FocusedScheduler(jobdir=str(job))
    sched.open(DemoSpider())
    assert sched.journal is claimed and claimed.run == 1
    sched.close("finished")
    again = FocusedScheduler(jobdir=str(job))
    again.open(DemoSpider())  # handed over once: a new journal, the next run
    assert again.journal is not claimed and again.journal.run == 2
    again.close("finished")


@pytest.mark.parametrize("strategy", ["bfs", "annealing"])
def test_resume_after_kill_loses_only_uncommitted_work(tmp_path, strategy):
    out = tmp_path / "out"
    out.mkdir()
    settings = {
        "JOBDIR": str(tmp_path / "job"),
        "FOCUSED_OUTPUT_DIR": str(out),
        "FOCUSED_STRATEGY": strategy,
        "FOCUSED_SA_T0": 0.5,
    }
    script = KILL_SCRIPT.format(root=str(ROOT), settings=settings)
    subprocess.run([sys.executable, "-c", script], check=True, cwd=tmp_path, timeout=120)
    # two of the six in-flight pages reached the page store before the kill
    j = Journal(tmp_path / "job" / "frontier.sqlite3")
    in_flight = [r.entry.url for r in j.rows(IN_FLIGHT)]
    annealed_picks = j.get_meta("annealer")
    j.close()
    assert len(in_flight) == 6
    assert (annealed_picks is not None) == (strategy == "annealing")
    db = sqlite3.connect(out / "pages.sqlite3")
    db.execute("CREATE TABLE pages (id INTEGER PRIMARY KEY, url TEXT UNIQUE)")
    db.executemany("INSERT INTO pages (url) VALUES (?)", [(u,) for u in in_flight[:2]])
    db.commit()
    db.close()

    sched, _ = _open(settings)
    assert sched.queues() == {"waiting": 28, "in_flight": 0, "done": 2, "error": 0}
    assert len(sched.seen) == 30  # the ten uncommitted pushes are gone
    if strategy == "annealing":
        assert sched.annealer.picks == 6
    urls = _drain(sched)
    assert len(urls) == 28 and not set(urls) & set(in_flight[:2])
    assert set(in_flight[2:]) <= set(urls)
    sched.close("finished")


def test_journal_holds_10k_pushes_and_pops(tmp_path):
    """10k pushes + pops with JOBDIR: every request comes back once (the cost is
    measured by the speed benchmark, not here)."""
    sched, _ = _open({"JOBDIR": str(tmp_path / "job")})
    for i in range(10_000):
        sched.enqueue_request(_req(i, i % 100))
    got = {sched.next_request().url for _ in range(10_000)}
    assert len(got) == 10_000 and sched.next_request() is None
    sched.close("finished")
    assert os.path.getsize(tmp_path / "job" / "frontier.sqlite3") > 0


# --- end to end: real crawls of a sandbox served on a fixed port --------------------
E2E_PAGES = 200
CRAWLED = re.compile(r"Crawled \((\d+)\) <GET (\S+)>")


@pytest.fixture(scope="module")
def sandbox_base():
    """A sandbox on its own port, so that every run of a job sees the same URLs."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "focused.web.sandbox", "--pages", str(E2E_PAGES), "--seed", "7"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        base = proc.stdout.readline().strip().rstrip("/")
        assert base.startswith("http://127.0.0.1:"), base
        yield base
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def _crawl_cmd(base: str, out: Path, *settings: str) -> list[str]:
    from focused.web.sandbox import generate_site

    seeds = generate_site(seed=7, pages=E2E_PAGES).seeds("subject.Science.Chemistry")
    defaults = {
        "FOCUSED_WEB": "real",
        "FOCUSED_SEEDS": ",".join(base + p for p in seeds),
        "FOCUSED_STRATEGY": "bfs",  # never drops a link: the fetched set is order-free
        "AUTOTHROTTLE_ENABLED": False,
        "FOCUSED_REPORT": False,
        "LOG_LEVEL": "DEBUG",
    }
    return crawl_command(
        "chemistry", output_dir=out, settings={**defaults, **settings_from_strings(settings)}
    )


def _crawl(base: str, out: Path, *settings: str) -> str:
    proc = subprocess.run(
        _crawl_cmd(base, out, *settings), cwd=ROOT, capture_output=True, text=True, timeout=240
    )
    log = proc.stderr + proc.stdout
    assert proc.returncode == 0, log[-3000:]
    assert "Traceback" not in log, log[-5000:]
    return log


def _fetched(log: str) -> list[str]:
    return [url for _, url in CRAWLED.findall(log) if not url.endswith("/robots.txt")]


def _stored(out: Path) -> set[str]:
    db = sqlite3.connect(out / "pages.sqlite3")
    try:
        return {u for (u,) in db.execute("SELECT url FROM pages")}
    except sqlite3.OperationalError:  # the crawl has not created the table yet
        return set()
    finally:
        db.close()


@pytest.fixture(scope="module")
def full_crawl(sandbox_base, tmp_path_factory):
    out = tmp_path_factory.mktemp("full")
    fetched = _fetched(_crawl(sandbox_base, out))
    assert len(fetched) == len(set(fetched)) > 100
    return set(fetched)


@pytest.mark.integration
def test_crawl_stopped_and_resumed_fetches_the_same_pages_once(sandbox_base, full_crawl, tmp_path):
    out, job = tmp_path / "out", f"JOBDIR={tmp_path / 'job'}"
    log1 = _crawl(sandbox_base, out, job, "CLOSESPIDER_ITEMCOUNT=40")
    assert "'finish_reason': 'closespider_itemcount'" in log1
    first = _fetched(log1)
    assert 40 <= len(first) < len(full_crawl)
    log2 = _crawl(sandbox_base, out, job)
    assert "focused: resuming crawl" in log2
    second = _fetched(log2)
    assert not set(first) & set(second)  # nothing fetched twice
    assert len(second) == len(set(second))
    assert set(first) | set(second) == full_crawl
    assert _stored(out) == full_crawl
    assert "'focused/duplicates': 0" in log2


@pytest.mark.integration
def test_pages_a_power_cut_took_from_the_store_are_fetched_again(
    sandbox_base, full_crawl, tmp_path
):
    """The last records of a segment lost with the power (their rows committed, the
    bytes not on disk, as with FOCUSED_STORE_FSYNC off): the resumed crawl's store
    removes the rows and the scheduler journals those pages waiting again."""
    out, job = tmp_path / "out", f"JOBDIR={tmp_path / 'job'}"
    _crawl(sandbox_base, out, job, "CLOSESPIDER_ITEMCOUNT=40")
    db = sqlite3.connect(out / "pages.sqlite3")
    try:
        rows = db.execute(
            "SELECT url, file_path, record_offset FROM pages ORDER BY record_offset DESC LIMIT 3"
        ).fetchall()
    finally:
        db.close()
    segment = {path for _, path, _ in rows}
    assert len(segment) == 1
    path = Path(segment.pop())
    path = path if path.is_absolute() else out / path
    with open(path, "r+b") as f:
        f.truncate(rows[-1][2])  # the last three records are gone
    lost = {url for url, _, _ in rows}
    log2 = _crawl(sandbox_base, out, job)
    assert "3 stored pages were lost in a crash" in log2
    assert "'focused/store/lost_requeued': 3" in log2
    assert lost <= set(_fetched(log2))  # fetched again
    assert _stored(out) == full_crawl


@pytest.mark.integration
def test_crawl_killed_and_resumed_loses_at_most_the_in_flight_pages(
    sandbox_base, full_crawl, tmp_path
):
    out, job = tmp_path / "out", f"JOBDIR={tmp_path / 'job'}"
    concurrency = 4
    with open(tmp_path / "run1.log", "w") as log:
        proc = subprocess.Popen(
            _crawl_cmd(
                sandbox_base, out, job, f"CONCURRENT_REQUESTS={concurrency}", "DOWNLOAD_DELAY=0.02"
            ),
            cwd=ROOT,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        try:
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline and proc.poll() is None:
                if (out / "pages.sqlite3").exists() and len(_stored(out)) >= 40:
                    break
                time.sleep(0.05)
            assert proc.poll() is None, "the crawl ended before it could be killed"
        finally:
            proc.send_signal(signal.SIGKILL)
            proc.wait(timeout=30)
    stored_at_kill = _stored(out)
    first = _fetched((tmp_path / "run1.log").read_text())
    assert len(stored_at_kill) >= 40 and len(first) < len(full_crawl)

    log2 = _crawl(sandbox_base, out, job)
    assert "focused: resuming crawl" in log2
    second = _fetched(log2)
    assert not stored_at_kill & set(second)  # a stored page is never fetched again
    again = set(first) & set(second)  # fetched but not stored at the kill: in flight
    assert len(again) <= concurrency + 1
    assert set(first) | set(second) == full_crawl
    assert _stored(out) == full_crawl


# --- rescoring the waiting links (the learning strategy) ----------------------------
def test_rescore_signal_reorders_on_schedule_and_evidence_survives_a_resume(tmp_path: Path):
    """The scheduler rescores every FOCUSED_RESCORE_EVERY learnt pages, or every
    waiting / FOCUSED_RESCORE_BUDGET pages when longer; the evidence is journaled."""
    jobdir = str(tmp_path / "job")
    settings = {"FOCUSED_RESCORE_EVERY": 2, "FOCUSED_RESCORE_BUDGET": 3, "JOBDIR": jobdir}
    sched, crawler = _open(settings)
    for i in range(6):  # evidence b"k<i % 3>"; priorities as found: 0, 1, ..., 5
        assert sched.enqueue_request(_req(i, priority=i, link_evidence=b"k%d" % (i % 3)))
    calls = []

    def rescorer(evidence):
        calls.append(len(evidence))
        prios = [{b"k0": 50, b"k1": 10, b"k2": 30}[e] for e in evidence]
        return prios, [p / 100 for p in prios]

    send = crawler.signals.send_catch_log
    for _ in range(3):  # 6 waiting / budget 3 = every 2 pages: the 2nd learnt page
        send(focused_signals.frontier_rescore, rescorer=rescorer)
    assert calls == [6] and sched.rescorings == 1 and sched.rescore_moved == 6
    request = sched.next_request()  # k0 first now, first found first: p/0 then p/3
    assert request.url.endswith("/p/0.htm") and request.priority == 50
    assert request.meta[keys.LINK_VALUE] == 0.5 and request.meta[keys.EVIDENCE] == b"k0"
    sched.close("finished")
    # resumed: the same links waiting, their evidence back (the journal keeps the
    # priorities as found: the model that rescored them is not saved)
    sched2, crawler2 = _open(settings)
    waiting = {e.url.rsplit("/", 1)[-1]: e.evidence for e in sched2.frontier.entries()}
    assert waiting == {f"{i}.htm": b"k%d" % (i % 3) for i in range(6)}  # 0: was in flight
    sched2.close("finished")


def test_no_rescoring_when_off_or_without_evidence():
    sched, crawler = _open({"FOCUSED_RESCORE_EVERY": 0})
    sched.enqueue_request(_req(1, link_evidence=b"x"))
    for _ in range(5):
        crawler.signals.send_catch_log(
            focused_signals.frontier_rescore, rescorer=lambda ev: ([9] * len(ev), [0.9] * len(ev))
        )
    assert sched.rescorings == 0 and sched.next_request().priority == 0
    sched.close("finished")


@pytest.mark.parametrize("debug", [False, True])
def test_scheduler_debug_logs_every_request_that_cannot_be_journaled(tmp_path, caplog, debug):
    """``SCHEDULER_DEBUG``, as in Scrapy's scheduler: each request that cannot go to
    JOBDIR is logged; without it the first one only, the others counted."""
    settings = {"JOBDIR": str(tmp_path / "job"), "SCHEDULER_DEBUG": debug}
    sched, crawler = _open(settings)
    with caplog.at_level(logging.WARNING, logger="focused.scheduler"):
        for i in range(3):
            sched.enqueue_request(Request(f"http://e.org/l{i}", callback=lambda r: None))
    sched.close("shutdown")
    assert crawler.stats.get_value("focused/scheduler/unserializable") == 3
    lines = [r.getMessage() for r in caplog.records if "cannot be journaled" in r.getMessage()]
    assert len(lines) == (3 if debug else 1), lines


# --- failures of a run that no host answers ---------------------------------------------
def _fail(crawler, request: Request) -> None:
    crawler.signals.send_catch_log(focused_signals.download_failed, request=request)


def _journal_state(jobdir: Path, url: str) -> int:
    with sqlite3.connect(jobdir / "frontier.sqlite3") as db:
        (state,) = db.execute("SELECT state FROM urls WHERE url=?", (url,)).fetchone()
    return state


def test_failures_before_any_answer_wait_for_the_next_run_once(tmp_path: Path) -> None:
    """A run that no host answers keeps its failures for the next run (they stay in flight
    in the journal); a 5xx is no answer; a second such run in a row journals them."""
    jobdir = tmp_path / "job"
    urls = [f"http://127.0.0.1:1/p/{i}.htm" for i in range(3)]
    sched, crawler = _open({"JOBDIR": str(jobdir)})
    for url in urls:
        sched.enqueue_request(_req(url))
    first = sched.next_request()
    _respond(crawler, first, status=503)  # a dead proxy's answer: no answer
    _fail(crawler, first)
    for _ in range(2):
        _fail(crawler, sched.next_request())
    sched.close("finished")
    assert [_journal_state(jobdir, url) for url in urls] == [IN_FLIGHT] * 3
    again, crawler = _open({"JOBDIR": str(jobdir)})
    assert sorted(e.url for e in again.frontier.entries()) == urls  # all back
    for _ in range(3):
        _fail(crawler, again.next_request())
    again.close("finished")
    assert [_journal_state(jobdir, url) for url in urls] == [ERROR] * 3  # the second run
    third, _crawler = _open({"JOBDIR": str(jobdir)})
    assert len(third.frontier) == 0 and third.errors == 3
    third.close("finished")


def test_the_first_answer_journals_the_earlier_failures_but_not_a_retried_one(
    tmp_path: Path,
) -> None:
    jobdir = tmp_path / "job"
    sched, crawler = _open({"JOBDIR": str(jobdir)})
    for i in range(3):
        sched.enqueue_request(_req(i))
    failed, retried = sched.next_request(), sched.next_request()
    _fail(crawler, failed)
    _fail(crawler, retried)
    assert sched.enqueue_request(retried.replace(dont_filter=True))  # queued again
    _respond(crawler, sched.next_request())  # the first answer
    journal = sched.journal
    assert journal is not None
    assert journal.state_of(sched._fingerprint(failed))[0] == ERROR
    assert journal.state_of(sched._fingerprint(retried))[0] != ERROR
    sched.close("shutdown")
    resumed, _crawler = _open({"JOBDIR": str(jobdir)})
    assert [e.url for e in resumed.frontier.entries()] == [retried.url]
    resumed.close("shutdown")


def test_the_urls_of_a_host_given_up_wait_for_the_next_run(tmp_path):
    """A host given up for this run (nothing but server errors for a minute) had its
    other requests dropped as errors: journaled so, a resume after the outage never
    fetched them. They wait in the journal now, as a host's whose robots.txt stays
    unreachable; a true failure is still an error."""
    from scrapy.exceptions import IgnoreRequest
    from scrapy.http import Response

    from focused.robustness import RobustnessMiddleware

    mw = RobustnessMiddleware(max_server_errors=2)
    down = [_req(f"http://127.0.0.2:1/p/{i}.htm") for i in range(4)]
    for status in (429, 503, 503):  # a pause asked for (Retry-After) is no server error
        answer = Response(down[0].url, status=status, headers={"Retry-After": "5"})
        mw.process_response(down[0], answer)
    with contextlib.suppress(IgnoreRequest):
        mw.process_request(down[0])  # not given up: no exception
    assert not mw.server_errors.gave_up
    for request in down[:2]:
        mw.process_response(request, Response(request.url, status=503, request=request))
    sched = FocusedScheduler(jobdir=str(tmp_path / "job"))
    sched.open(DemoSpider())
    for request in down:
        sched.enqueue_request(request)
    taken = [sched.next_request() for _ in down]
    robots = Request("http://127.0.0.1:1/robots.txt")  # the run's first answer: no outage
    sched._on_response(Response(robots.url, status=200, request=robots), robots, DemoSpider())
    for request in taken[:3]:
        with pytest.raises(IgnoreRequest) as refused:
            mw.process_request(request)
        sched._on_download_failed(request, refused.value)
    sched._on_download_failed(taken[3], IgnoreRequest("a failure of its own"))
    sched.close("shutdown")
    sched = FocusedScheduler(jobdir=str(tmp_path / "job"))
    sched.open(DemoSpider())
    assert sched.queues() == {"waiting": 3, "in_flight": 0, "done": 0, "error": 1}
    sched.close("shutdown")
