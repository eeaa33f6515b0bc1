"""One learnt model for every worker on a real ``redis-server``: deltas merged in any
order, a late worker loading it, and the shared queue rescored by one lease holder."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator

import numpy as np
import pytest
import redis

from bench.scale import RedisServer
from focused.distributed.frontier import BEST, RedisFrontier
from focused.distributed.model import SharedModel
from focused.frontier.memory import Entry
from focused.strategies.learning import LearningStrategy
from tests.test_model_state import KEYWORDS, links, pages

pytestmark = pytest.mark.skipif(
    shutil.which("redis-server") is None and not os.environ.get("CI"),
    reason="redis-server is not installed (apt-get install redis-server)",
)


@pytest.fixture(scope="module")
def server() -> Iterator[redis.Redis]:
    with RedisServer() as srv:
        client = redis.Redis.from_url(srv.url)
        yield client
        client.close()


def test_workers_share_one_model_and_a_late_worker_loads_it(server):
    key = "t:share"
    one = LearningStrategy(KEYWORDS)  # a single process that learns every page
    workers = [LearningStrategy(KEYWORDS) for _ in range(2)]
    clients = [SharedModel(server, key) for _ in workers]
    for w in workers:
        w.share()
    for i, (w, c) in enumerate(zip(workers, clients, strict=True)):
        for url, page in pages(30, 10 + i):
            w.observe(url, page, {})
            one.observe(url, page, {})
        deltas, _ = c.sync(w.take_delta())
        for d in deltas or ():
            w.merge(d)
    deltas, _ = clients[0].sync(workers[0].take_delta())  # gets worker 1's pages
    for d in deltas or ():
        workers[0].merge(d)
    late = LearningStrategy(KEYWORDS)
    late.merge(SharedModel(server, key).snapshot())
    for got in (workers[0], late):
        assert got.terms.pages == one.terms.pages == 60
        assert got.exploration.relevant == one.exploration.relevant
        assert got.expander.df_rel == one.expander.df_rel
        np.testing.assert_allclose(got.terms.counts, one.terms.counts)
        np.testing.assert_allclose(got.terms.sums, one.terms.sums, rtol=1e-9)
        np.testing.assert_allclose(got.terms.score(links()), one.terms.score(links()), rtol=1e-9)


def test_one_lease_holder_rescores_waiting_links_and_never_a_picked_one(server):
    key = "t:rescore"
    s = LearningStrategy(KEYWORDS)
    frontier = RedisFrontier(server, key)
    frontier.open()
    ev = links()
    terms = s.terms.link_terms(ev)
    from focused.ranking.learning import encode_evidence

    blobs = encode_evidence(terms, 0.5)
    for i, blob in enumerate(blobs):
        frontier.stage_push(Entry(url=ev[i].url, fp=i + 1, priority=100, value=0.1, evidence=blob))
    frontier.sync()
    picked = frontier.sync(BEST).entry  # in flight: must keep its priority
    assert picked is not None and picked.evidence in blobs
    a, b = SharedModel(server, key), SharedModel(server, key)
    _, scanned_a = a.sync(None, scan=100)
    _, scanned_b = b.sync(None, scan=100)
    assert len(scanned_a) == len(blobs) and scanned_b == []  # b does not hold the lease
    for url, page in pages(50, 3):
        s.observe(url, page, {})
    assert a.stage_rescore(scanned_a, s.rescore) == len(blobs)
    a.sync(None)
    prios, _ = s.rescore([e.evidence for e in [picked]])
    waiting = {e.fp: e.priority for e in frontier.entries()}
    assert picked.fp not in waiting
    want, _ = s.rescore(blobs)
    for i in range(len(blobs)):
        if i + 1 != picked.fp:
            assert waiting[i + 1] == want[i]
    order = []
    while (e := frontier.sync(BEST).entry) is not None:
        order.append(e.priority)
    assert order == sorted(order, reverse=True) and len(order) == len(blobs) - 1


def test_the_lease_holder_scans_at_the_in_memory_pace(server):
    """A scan covers FOCUSED_RESCORE_BUDGET entries per page the crawl learnt since the
    worker's last scan (any worker's pages), within [chunk, 8 x chunk]."""
    from focused.distributed.scheduler import SCAN_CAP, RedisScheduler

    scheduler = RedisScheduler(server=server, rescore_chunk=100, rescore_budget=10)
    learner = LearningStrategy(KEYWORDS)
    learner.share()
    for url, page in pages(30, 3):
        learner.observe(url, page, {})
    assert scheduler._scan_size(learner) == 300
    scheduler._pages_at_scan = 25
    assert scheduler._scan_size(learner) == 100  # at least one chunk
    other = LearningStrategy(KEYWORDS)
    for url, page in pages(90, 4):
        other.observe(url, page, {})
    learner.merge(_delta_of(other))  # another worker's 90 pages count too
    assert scheduler._scan_size(learner) == SCAN_CAP * 100
    assert RedisScheduler(server=server, rescore_chunk=100)._scan_size(learner) == 100


def _delta_of(strategy: LearningStrategy):
    from focused.ranking.modelstate import ModelDelta

    t = strategy.terms
    touched = np.flatnonzero(t.counts)
    return ModelDelta(touched, t.counts[touched], t.sums[touched], t.pages, t.total)
