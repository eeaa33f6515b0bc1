"""The waste re-check of waiting links on the shared Redis frontier
(``FOCUSED_WASTE_SHAPE_RECHECK``), against a real ``redis-server`` on a free loopback port.

A link found before its URL shape was learnt wasteful, picked by a worker whose spider now
judges it wasteful, goes back into the shared queue at the bottom instead of being fetched:
once per entry whatever the workers judge, never fetched twice, never lost (also when
Redis fails between the pick and the re-queue), and counted in
``focused/scheduler/waste_requeued``.
"""

from __future__ import annotations

import json
import os
import shutil
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
from scrapy import Request, Spider
from scrapy.utils.test import get_crawler

from bench.scale import RedisServer
from focused import meta as keys
from focused.distributed.frontier import BEST, WASTE_REQUEUED, RedisFrontier
from focused.distributed.scheduler import RedisScheduler
from focused.frontier.memory import Entry
from focused.signals import frontier_waste_check
from tests.crawling import run_crawl
from tests.test_content import ARTICLE, Site
from tests.test_urlshape import TALK_ANCHOR, TALK_TITLE, TALKS, _page

pytestmark = pytest.mark.skipif(
    shutil.which("redis-server") is None and not os.environ.get("CI"),
    reason="redis-server is not installed (apt-get install redis-server)",
)

BASE = "http://127.0.0.1:1"


@pytest.fixture(scope="module")
def redis_url() -> Iterator[str]:
    with RedisServer() as server:
        yield server.url


_keys = iter(range(10**6))


@pytest.fixture
def key() -> str:
    return f"waste:{next(_keys)}:{time.monotonic_ns()}"


class WasteSpider(Spider):
    """Judges ``/talk/`` URLs wasteful once it has ``learnt`` so, and hands that judgement
    to the scheduler as the focused spider does (a ``frontier_waste_check`` handler)."""

    name = "waste"
    learnt = True

    @classmethod
    def from_crawler(cls, crawler: Any, *args: Any, **kwargs: Any) -> WasteSpider:
        spider = super().from_crawler(crawler, *args, **kwargs)
        crawler.signals.connect(spider._waste_check, signal=frontier_waste_check)
        spider.asked = []
        spider.on_ask = None
        return spider

    def _waste_check(self) -> Callable[[str], bool]:
        return self.wasteful

    def wasteful(self, url: str) -> bool:
        self.asked.append(url)
        if self.on_ask is not None:
            self.on_ask(url)
        return self.learnt and "/talk/" in url


def _worker(
    redis_url: str, out: Path, key: str, **settings: object
) -> tuple[RedisScheduler, WasteSpider, Any]:
    crawler = get_crawler(
        WasteSpider,
        {
            "FOCUSED_FRONTIER": "redis",
            "FOCUSED_STRATEGY": "best_first",
            "REDIS_URL": redis_url,
            "FOCUSED_REDIS_KEY": key,
            "FOCUSED_OUTPUT_DIR": str(out),
            **settings,
        },
    )
    crawler.spider = spider = WasteSpider.from_crawler(crawler)
    sched = RedisScheduler.from_crawler(crawler)
    sched.open(spider)
    return sched, spider, crawler


def _req(path: str, priority: int, depth: int = 1, **meta: object) -> Request:
    fields = {keys.LINK_VALUE: 0.5, keys.M: 1.0, keys.DEPTH: depth, **meta}
    return Request(BASE + path, priority=priority, meta=fields)


def _drain(sched: RedisScheduler) -> list[Request]:
    out = []
    while (r := sched.next_request()) is not None:
        out.append(r)
    return out


def _paths(requests: list[Request]) -> list[str]:
    return [r.url.removeprefix(BASE) for r in requests]


def test_a_link_whose_shape_became_wasteful_waits_at_the_bottom_and_is_fetched_once(
    redis_url: str, key: str, tmp_path: Path
) -> None:
    """Talk links found with the best priority come up, go back to the bottom of the shared
    queue (as chrome, without rescoring evidence), and are handed out after every content
    link and before the chrome link found deeper, each once."""
    sched, spider, crawler = _worker(redis_url, tmp_path, key)
    for i in range(3):
        sched.enqueue_request(_req(f"/talk/{i}", 10, **{keys.EVIDENCE: b"ev"}))
    for i in range(3):
        sched.enqueue_request(_req(f"/p/{i}", 5))
    sched.enqueue_request(_req("/nav", keys.CHROME_PRIORITY - 2, depth=2))
    out = _drain(sched)
    assert _paths(out) == ["/p/0", "/p/1", "/p/2", "/talk/0", "/talk/1", "/talk/2", "/nav"]
    talk = out[3]
    assert talk.priority == keys.CHROME_PRIORITY - 1
    assert talk.meta[keys.CHROME] is True and talk.meta[keys.LINK_VALUE] == 0.0
    assert keys.EVIDENCE not in talk.meta  # no rescore lifts it again
    # each talk link was judged once: when it came up first; the second time it was
    # flagged as re-queued and handed out
    asked = Counter(u.removeprefix(BASE) for u in spider.asked)
    assert all(asked[f"/talk/{i}"] == 1 for i in range(3))
    assert sched.waste_requeued == 3
    assert crawler.stats.get_value("focused/scheduler/waste_requeued") == 3
    status = RedisFrontier(redis.Redis.from_url(redis_url), key).status()
    assert status["seen"] == 7 and status["in_flight"] == 7 and status["waiting"] == 0
    sched.close("finished")


def test_with_partitions_the_re_queue_goes_to_the_entry_s_partition(
    redis_url: str, key: str, tmp_path: Path
) -> None:
    """The frontier split by host into 4 partitions: each talk link goes back to the bottom
    of its own partition, and the articles of every partition are handed out first."""
    sched, _, _ = _worker(redis_url, tmp_path, key, FOCUSED_REDIS_PARTITIONS=4)
    hosts = [f"http://127.0.0.{n}:1" for n in range(2, 6)]
    for host in hosts:
        for i in range(2):
            sched.enqueue_request(Request(f"{host}/talk/{i}", priority=10))
            sched.enqueue_request(Request(f"{host}/p/{i}", priority=5))
    out = [r.url for r in _drain(sched)]
    assert len(out) == len(set(out)) == 16
    assert all("/p/" in u for u in out[:8]) and all("/talk/" in u for u in out[8:]), out
    assert sched.waste_requeued == 8
    frontier = RedisFrontier(redis.Redis.from_url(redis_url), key, partitions=4)
    assert len({frontier.layout.partition_of_url(h) for h in hosts}) == 4  # one each
    status = frontier.status()
    assert status["in_flight"] == 16 and status["waiting"] == 0 and status["seen"] == 16
    sched.close("finished")


def test_without_the_setting_or_a_judgement_nothing_is_re_checked(
    redis_url: str, key: str, tmp_path: Path
) -> None:
    for n, (settings, learnt) in enumerate(
        (({"FOCUSED_WASTE_SHAPE_RECHECK": False}, True), ({}, False))
    ):
        sched, spider, crawler = _worker(redis_url, tmp_path / str(n), f"{key}:{n}", **settings)
        spider.learnt = learnt
        sched.enqueue_request(_req("/talk/0", 10))
        sched.enqueue_request(_req("/p/0", 5))
        assert _paths(_drain(sched)) == ["/talk/0", "/p/0"]
        assert sched.waste_requeued == 0
        assert crawler.stats.get_value("focused/scheduler/waste_requeued") is None
        # the setting off: the judgement is not even asked for; on: asked, and "no"
        assert len(spider.asked) == (0 if settings else 2)
        sched.close("finished")


def test_a_re_queued_entry_is_never_re_queued_again_even_when_promoted(
    redis_url: str, key: str, tmp_path: Path
) -> None:
    """Worker A judges talk pages wasteful, worker B has not learnt it. A re-queues the
    talk link B found; B finds it again with a higher priority (a promotion, which keeps
    the re-queue mark); A then fetches it instead of re-queuing it a second time."""
    a, a_spider, _ = _worker(redis_url, tmp_path / "a", key)
    b, b_spider, _ = _worker(redis_url, tmp_path / "b", key)
    b_spider.learnt = False
    assert b.enqueue_request(_req("/talk/0", 10))
    assert b.enqueue_request(_req("/p/0", 5))
    assert len(b) == 2  # sent
    assert _paths([a.next_request()]) == ["/p/0"] and a.waste_requeued == 1
    assert b.enqueue_request(_req("/talk/0", 20))  # found again, better: promoted
    assert len(b) == 1
    frontier = RedisFrontier(redis.Redis.from_url(redis_url), key)
    (waiting,) = list(frontier.entries())
    assert waiting.priority == 20 and waiting.flags & WASTE_REQUEUED
    got = a.next_request()
    assert _paths([got]) == ["/talk/0"] and got.priority == 20
    assert a.waste_requeued == 1 and b.waste_requeued == 0
    assert a.next_request() is None and b.next_request() is None
    status = frontier.status()
    assert status["promoted"] == 1 and status["in_flight"] == 2 and status["seen"] == 2
    a.close("finished")
    b.close("finished")


def test_many_workers_re_queue_each_entry_once_and_hand_out_each_url_once(
    redis_url: str, key: str, tmp_path: Path
) -> None:
    """Four workers, each in its own thread with its own connection, race for 40 talk
    links and 40 articles on one shared queue; every talk link is re-queued exactly once
    (by whichever worker picked it first) and every URL is handed out exactly once."""
    workers = [_worker(redis_url, tmp_path / f"w{i}", key) for i in range(4)]
    first = workers[0][0]
    for i in range(40):
        first.enqueue_request(_req(f"/talk/{i}", 10))
        first.enqueue_request(_req(f"/p/{i}", 5))
    assert len(first) == 80
    got: list[list[str]] = [[] for _ in workers]
    errors: list[BaseException] = []
    start = threading.Barrier(len(workers))

    def run(n: int) -> None:
        sched = workers[n][0]
        try:
            start.wait()
            while True:
                r = sched.next_request()
                if r is not None:
                    got[n].append(r.url.removeprefix(BASE))
                elif sched.redis.counts.waiting == 0:
                    return
        except BaseException as exc:  # noqa: BLE001 - reported by the test
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(n,)) for n in range(len(workers))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not errors, errors
    assert not any(t.is_alive() for t in threads)
    handed = [u for urls in got for u in urls]
    assert len(handed) == len(set(handed)) == 80  # nothing twice, nothing lost
    assert sum(w[0].waste_requeued for w in workers) == 40
    for urls in got:  # each worker got its articles before its talk pages
        talks = [i for i, u in enumerate(urls) if u.startswith("/talk/")]
        articles = [i for i, u in enumerate(urls) if u.startswith("/p/")]
        assert not talks or not articles or max(articles) < min(talks), urls
    status = RedisFrontier(redis.Redis.from_url(redis_url), key).status()
    assert status["in_flight"] == 80 and status["waiting"] == 0 and status["seen"] == 80
    for sched, _, _ in workers:
        sched.close("finished")


def test_the_annealing_pick_of_a_re_queued_entry_is_taken_back(
    redis_url: str, key: str, tmp_path: Path
) -> None:
    """The shared temperature cools once per URL handed out (He, Cheng & Cai 2009): the
    crawl's pick counter and this worker's annealer do not count the re-queued picks."""
    sched, _, _ = _worker(
        redis_url,
        tmp_path,
        key,
        FOCUSED_STRATEGY="annealing",
        FOCUSED_SA_T0=0.5,
        FOCUSED_SA_ALPHA=0.5,
        FOCUSED_SA_K=4,
        FOCUSED_SEED=1,
    )
    for i in range(3):
        sched.enqueue_request(_req(f"/talk/{i}", 10, **{keys.LINK_VALUE: 0.9}))
    for i in range(4):  # the top K once the talk links are down
        sched.enqueue_request(_req(f"/p/{i}", 5))
    first = sched.next_request()
    assert "/p/" in first.url and sched.waste_requeued >= 1
    assert sched.annealer.picks == 1 and sched.annealer.temperature == 0.25
    status = RedisFrontier(redis.Redis.from_url(redis_url), key).status()
    assert status["picks"] == 1 and status["accepted_worse"] == sched.annealer.accepted_worse
    rest = _drain(sched)
    assert len(rest) == 6 and all("/talk/" in r.url for r in rest[-3:])
    status = RedisFrontier(redis.Redis.from_url(redis_url), key).status()
    assert status["picks"] == 7  # one per URL handed out
    sched.close("finished")


def test_a_re_queue_that_cannot_reach_redis_is_dropped_and_the_lease_gives_the_url_back(
    tmp_path: Path,
) -> None:
    """Redis dies right after the pick of a talk link, before the re-queue goes out: the
    re-queue is dropped (never sent later, when the URL may be another worker's), the
    URL stays in flight under the worker's lease, and once the lease ran out it comes
    back in its old place, is re-queued then, and every URL is handed out once."""
    server = RedisServer(persist=True)
    server.start()
    try:
        key = "waste:down"
        sched, spider, crawler = _worker(server.url, tmp_path, key, FOCUSED_REDIS_LEASE=1.0)
        sched.enqueue_request(_req("/talk/0", 10))
        sched.enqueue_request(_req("/p/0", 5))
        sched.enqueue_request(_req("/p/1", 5))
        assert len(sched) == 3

        def kill(url: str) -> None:
            spider.on_ask = None
            server.kill()

        spider.on_ask = kill  # Redis dies between the pick and the re-queue
        assert sched.next_request() is None
        assert not [op for op in sched.redis.outbox if op[0] in "wWV"]
        assert sched.waste_requeued == 0
        server.start()
        client = redis.Redis.from_url(server.url)
        frontier = RedisFrontier(client, key)
        (deadline,) = [int(s) for _, s in client.zrange(frontier.keys[2], 0, -1, withscores=True)]
        while True:  # until the lease ran out by the server's clock
            sec, usec = client.time()
            if sec * 1000 + usec // 1000 > deadline:
                break
            time.sleep(0.05)
        out = _drain(sched)
        assert _paths(out) == ["/p/0", "/p/1", "/talk/0"]
        assert sched.waste_requeued == 1
        assert crawler.stats.get_value("focused/scheduler/waste_requeued") == 1
        status = frontier.status()
        assert status["reclaimed"] == 1 and status["in_flight"] == 3 and status["seen"] == 3
        sched.close("finished")
        client.close()
    finally:
        server.stop()


def test_a_re_queue_of_an_entry_no_longer_in_flight_does_nothing(
    redis_url: str, key: str, tmp_path: Path
) -> None:
    """Frontier level: a re-queue never brings back a finished URL nor moves a waiting one,
    and it is not saved with the outbox (it would be sent at the next start)."""
    f = RedisFrontier(redis.Redis.from_url(redis_url), key)
    f.open()
    for i, p in enumerate((10, 5, 1)):
        f.stage_push(Entry(url=f"{BASE}/p/{i}", fp=100 + i, priority=p))
    f.sync()
    done = f.sync(BEST).entry
    assert done.fp == 100
    f.stage_finish(done.fp)
    f.stage_waste(Entry(url=done.url, fp=done.fp, priority=-5))  # after its "done"
    f.stage_waste(Entry(url=f"{BASE}/p/1", fp=101, priority=-5))  # waiting, never picked
    step = f.sync()
    assert [(op, code) for op, _, code in step.results] == [("d", 1), ("w", 0), ("w", 0)]
    assert {e.fp: e.priority for e in f.entries()} == {101: 5, 102: 1}  # unchanged
    assert f.status()["done"] == 1 and f.status()["waiting"] == 2
    picked = f.sync(BEST).entry
    f.stage_waste(Entry(url=picked.url, fp=picked.fp, priority=-5, flags=WASTE_REQUEUED))
    assert f.drop_waste() == 1 and f.outbox == []
    f.stage_waste(Entry(url=picked.url, fp=picked.fp, priority=-5, flags=WASTE_REQUEUED))
    f.stage_finish(102)
    assert f.save_outbox(tmp_path / "outbox.pickle") == 1  # the finish only
    assert f.restore_outbox(tmp_path / "outbox.pickle") == 1
    assert [op[0] for op in f.outbox] == ["d"]
    f.clear()
    f.close()


def test_a_crawl_on_the_redis_frontier_re_checks_links_found_before_their_shape_was_learnt(
    redis_url: str, tmp_path: Path
) -> None:
    """A real crawl (``scrapy crawl focused``, the focused spider's URL shapes) on the
    Redis frontier: a hub links TALKS talk pages (first, with topical anchors) and TALKS
    articles; once three talk pages were waste the other talk links come up, go back to
    the bottom of the shared queue and are fetched after every article, each once."""
    text = " ".join([ARTICLE] * 3)
    links = [(f"/wiki/Talk:A{i}", f"{TALK_ANCHOR} {i}") for i in range(TALKS)]
    links += [(f"/wiki/A{i}", f"Acid {i}") for i in range(TALKS)]
    pages = {"/wiki/Hub": _page("Acid", text, links)}
    for i in range(TALKS):
        pages[f"/wiki/A{i}"] = _page(f"Acid {i}", f"Note {i}. {text}", [])
        pages[f"/wiki/Talk:A{i}"] = _page(f"{TALK_TITLE} {i}", f"I disagree with edit {i}.", [])
    site = Site(pages)
    key = "waste:crawl"
    try:
        crawl = run_crawl(
            tmp_path / "out",
            "FOCUSED_WEB=real",
            f"FOCUSED_SEEDS={site.base}/wiki/Hub",
            "FOCUSED_STRATEGY=best_first",
            "FOCUSED_FRONTIER=redis",
            f"REDIS_URL={redis_url}",
            f"FOCUSED_REDIS_KEY={key}",
            "CONCURRENT_REQUESTS=1",
            "ROBOTSTXT_OBEY=False",
            timeout=120,
        )
    finally:
        site.close()
    urls = [r["url"].removeprefix(site.base) for r in crawl.rows()]
    assert len(urls) == len(set(urls)) == 1 + 2 * TALKS  # each page once
    talks = [i for i, u in enumerate(urls) if u.startswith("/wiki/Talk:")]
    articles = [i for i, u in enumerate(urls) if u.startswith("/wiki/A")]
    late = [i for i in talks if i > max(articles)]
    assert 3 <= len(talks) - len(late) <= 4  # learnt from three (one more may be on its way)
    stats = json.loads((crawl.out / "stats.json").read_text())
    assert stats["focused/scheduler/waste_requeued"] == len(late)
    status = RedisFrontier(redis.Redis.from_url(redis_url), key).status()
    assert status["waiting"] == 0 and status["in_flight"] == 0
    assert status["done"] == status["seen"] == len(urls)
