"""The host-aware pick of the shared Redis frontier (pick.lua) against a real
``redis-server``: the best waiting URL among the hosts the worker may fetch now."""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Iterator

import pytest
import redis

from bench.scale import RedisServer
from focused.distributed.frontier import RedisFrontier
from focused.frontier.memory import Entry
from focused.ranking.annealing import Annealer

pytestmark = pytest.mark.skipif(
    shutil.which("redis-server") is None and not os.environ.get("CI"),
    reason="redis-server is not installed (apt-get install redis-server)",
)


@pytest.fixture(scope="module")
def redis_url() -> Iterator[str]:
    with RedisServer() as server:
        yield server.url


@pytest.fixture
def frontier(redis_url: str) -> Iterator[RedisFrontier]:
    f = RedisFrontier(redis.Redis.from_url(redis_url), f"hostaware:{time.monotonic_ns()}")
    f.open()
    yield f
    f.clear()
    f.close()


def _e(i: int, url: str, priority: int, value: float = 0.0) -> Entry:
    return Entry(url=url, fp=1000 + i, priority=priority, value=value)


def _fill(f: RedisFrontier, entries: list[Entry]) -> None:
    for e in entries:
        f.stage_push(e)
    f.sync()


def test_a_busy_host_is_skipped_and_keeps_its_place(frontier: RedisFrontier) -> None:
    _fill(
        frontier,
        [_e(i, f"http://a.test/p{i}", 10) for i in range(5)]
        + [_e(10, "http://b.test/x", 1), _e(11, "https://c.test:8443/y", 5)]
        + [_e(12, "http://b.test/z", 1)],
    )
    assert frontier.pop_free({"a.test"}).fp == 1011
    assert frontier.pop_free({"a.test"}).fp == 1010
    assert frontier.pop_free({"a.test", "b.test"}) is None  # nothing free: nothing taken
    assert frontier.counts.waiting == 6 and frontier.counts.in_flight == 2
    assert [frontier.pop().fp for _ in range(6)] == [1000, 1001, 1002, 1003, 1004, 1012]


def test_the_host_is_read_from_the_url_as_scrapy_names_its_slot(frontier: RedisFrontier) -> None:
    _fill(
        frontier,
        [
            _e(1, "http://user:pw@A.Test:8080/p?q=1", 9),
            _e(2, "http://[::1]:8080/p", 8),
            _e(3, "http://a.test.other/p", 7),
        ],
    )
    assert frontier.pop_free({"a.test", "::1"}).fp == 1003
    assert frontier.pop_free({"a.test"}).fp == 1002


def test_the_scan_is_bounded(frontier: RedisFrontier) -> None:
    _fill(frontier, [_e(i, f"http://a.test/p{i}", 10) for i in range(100)])
    _fill(frontier, [_e(500, "http://b.test/x", 0)])
    assert frontier.pop_free({"a.test"}, scan=50) is None
    assert frontier.pop_free({"a.test"}, scan=101).fp == 1500


def test_the_annealing_pick_draws_among_the_top_k_free(frontier: RedisFrontier) -> None:
    _fill(frontier, [_e(i, f"http://a.test/p{i}", 100, value=1.0) for i in range(20)])
    _fill(
        frontier,
        [_e(i, f"http://h{i % 3}.test/p{i}", 80 - i, value=(80 - i) / 30) for i in range(50, 70)],
    )
    hot = Annealer(t0=5.0, alpha=1.0, k=4, seed=3)
    picked = []
    for _ in range(8):
        free = sorted(
            e.fp for e in frontier.entries() if "a.test" not in e.url and e.fp not in picked
        )
        got = frontier.pop_free({"a.test"}, hot)
        assert got is not None and got.fp in free[:4]
        picked.append(got.fp)
    assert picked != sorted(picked)  # a worse one was taken sometimes
    assert hot.picks == 8


def test_with_no_free_host_a_full_one_is_served_never_a_delayed_one(
    frontier: RedisFrontier,
) -> None:
    _fill(frontier, [_e(1, "http://a.test/1", 9), _e(2, "http://b.test/2", 5)])
    _fill(frontier, [_e(3, "http://a.test/3", 9), _e(4, "http://b.test/4", 5)])
    # a is delayed, b only full: b's best waits in b's slot for a transfer
    assert frontier.pop_free({"a.test", "b.test"}, delayed_hosts={"a.test"}).fp == 1002
    # a free host goes first, even below a full one
    assert frontier.pop_free({"a.test"}, delayed_hosts=set()).fp == 1004
    # both delayed: nothing
    assert frontier.pop_free({"a.test", "b.test"}) is None
    assert frontier.counts.waiting == 2
