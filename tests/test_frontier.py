"""The compact priority frontier (waiting queue of seed 000)."""

from __future__ import annotations

import dataclasses
import random
import time

from focused.annealing import Annealer
from focused.frontier import Entry, MemoryFrontier


def _e(i: int, priority: int = 0, **kw) -> Entry:
    return Entry(url=f"http://example.com/page/{i}", fp=i, priority=priority, **kw)


def _drain(f: MemoryFrontier) -> list[int]:
    out = []
    while (e := f.pop()) is not None:
        out.append(e.fp)
    return out


def test_priority_desc_then_fifo():
    f = MemoryFrontier()
    for i, p in enumerate([1, 3, 2, 3, 1, 2, -5, 10**12, -(10**12)]):
        assert f.push(_e(i, p))
    assert _drain(f) == [7, 1, 3, 2, 5, 0, 4, 6, 8]
    assert len(f) == 0 and f.pop() is None


def test_bfs_order_is_breadth_first():
    f = MemoryFrontier()
    # priority -depth as the bfs strategy sets it; found interleaved
    found = [(0, 0), (1, 1), (2, 1), (3, 2), (4, 1), (5, 2), (6, 3), (7, 2)]
    for i, depth in found:
        f.push(_e(i, -depth, depth=depth))
    assert _drain(f) == [0, 1, 2, 4, 3, 5, 7, 6]


def test_roundtrip_of_every_field():
    f = MemoryFrontier()
    e = Entry(
        url="https://例え.jp/wiki/化学?q=1",
        fp=-(2**63),
        priority=100_000_999,
        value=0.925,
        depth=7,
        m=51.2,
        hops=3,
        anchor_relevance=0.25,
        parent_url="https://例え.jp/wiki/Main",
        extra={"retry_times": 1},
    )
    f.push(e)
    assert f.get(e.fp) == dataclasses.replace(e, seq=0)
    got = f.pop()
    assert (got.url, got.fp, got.priority, got.value, got.depth, got.m, got.hops) == (
        e.url,
        e.fp,
        e.priority,
        e.value,
        e.depth,
        e.m,
        e.hops,
    )
    assert got.anchor_relevance == 0.25 and got.parent_url == e.parent_url
    assert got.extra == {"retry_times": 1} and got.seq == 0


def test_promotion_never_queues_twice():
    f = MemoryFrontier()
    assert f.push(_e(1, 5, m=80.0))
    assert f.push(_e(2, 7))
    assert not f.push(_e(1, 5))  # same priority: ignored
    assert not f.push(_e(1, 2))  # worse: ignored
    assert f.get(1).m == 80.0
    assert f.push(_e(1, 9, m=100.0, parent_url="http://p"))  # better: promoted
    assert f.promoted == 1 and len(f) == 2
    assert f.get(1).priority == 9 and f.get(1).m == 100.0
    first = f.pop()
    assert (first.fp, first.m, first.parent_url) == (1, 100.0, "http://p")
    assert _drain(f) == [2]
    assert len(f) == 0


def test_many_promotions_pop_once_each_and_sweep():
    rng = random.Random(3)
    f = MemoryFrontier()
    best: dict[int, int] = {}
    for _ in range(20_000):
        i, p = rng.randrange(500), rng.randrange(10**6)
        added = f.push(_e(i, p))
        assert added == (p > best.get(i, -1))
        best[i] = max(best.get(i, -1), p)
    assert len(f) == 500
    popped = [(e.fp, e.priority) for e in iter(f.pop, None)]
    assert sorted(popped) == sorted(best.items())
    assert [p for _, p in popped] == sorted(best.values(), reverse=True)


def test_explicit_seq_restores_fifo_and_continues_after_it():
    f = MemoryFrontier()
    f.push(_e(1, 0, seq=10))
    f.push(_e(2, 0, seq=4))
    f.push(_e(3, 0))  # gets seq 11
    assert [e.seq for e in sorted(f.entries(), key=lambda e: e.fp)] == [10, 4, 11]
    assert _drain(f) == [2, 1, 3]


def test_pop_annealed_picks_among_top_k_and_keeps_the_rest():
    f = MemoryFrontier()
    for i in range(100):
        f.push(_e(i, 100 - i, value=1.0 - i / 100))
    a = Annealer(t0=5.0, alpha=1.0, t_min=5.0, k=4, seed=2)
    got = []
    while len(f):
        e = f.pop_annealed(a)
        assert e.fp < len(got) + 4  # always one of the 4 best remaining
        got.append(e.fp)
    assert sorted(got) == list(range(100)) and got != list(range(100))
    assert f.pop_annealed(a) is None


def test_pop_annealed_skips_stale_records():
    f = MemoryFrontier()
    for i in range(10):
        f.push(_e(i, i, value=i / 10))
    for i in range(10):
        f.push(_e(i, 100 + i, value=i / 10))  # every record promoted once
    a = Annealer(t0=1.0, alpha=1.0, t_min=1.0, k=8, seed=0)
    got = [f.pop_annealed(a).fp for _ in range(10)]
    assert sorted(got) == list(range(10)) and len(f) == 0


def test_100k_pushes_and_pops_are_quick():
    f = MemoryFrontier()
    rng = random.Random(0)
    t = time.perf_counter()
    for i in range(100_000):
        f.push(_e(i, rng.randrange(1000), value=rng.random(), parent_url="http://example.com/"))
    n = 0
    prev = None
    while (e := f.pop()) is not None:
        assert prev is None or (e.priority, -e.seq) <= prev
        prev = (e.priority, -e.seq)
        n += 1
    assert n == 100_000
    assert time.perf_counter() - t < 5.0
