"""The compact priority frontier (the waiting queue of the m-value rule, Liu, Xia & Xu 2010)."""

from __future__ import annotations

import dataclasses
import random

import pytest

from focused.frontier.memory import Entry, MemoryFrontier
from focused.ranking.annealing import Annealer


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
        evidence=b"\x00\x01terms",
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
    assert got.evidence == b"\x00\x01terms"


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


def test_100k_pushes_and_pops_keep_the_order():
    f = MemoryFrontier()
    rng = random.Random(0)
    for i in range(100_000):
        f.push(_e(i, rng.randrange(1000), value=rng.random(), parent_url="http://example.com/"))
    n = 0
    prev = None
    while (e := f.pop()) is not None:
        assert prev is None or (e.priority, -e.seq) <= prev
        prev = (e.priority, -e.seq)
        n += 1
    assert n == 100_000


# --- rescoring (the learning strategy re-orders the waiting links) ---------------------
def _by_evidence(table: dict[bytes, int]):
    """A rescorer that looks each entry's evidence up in ``table`` (and counts calls)."""
    calls: list[list[bytes]] = []

    def rescorer(evidence: list[bytes]) -> tuple[list[int], list[float]]:
        calls.append(list(evidence))
        prios = [table[e] for e in evidence]
        return prios, [p / 100 for p in prios]

    rescorer.calls = calls  # type: ignore[attr-defined]
    return rescorer


def test_rescore_reorders_up_and_down_and_keeps_fifo_within_a_priority():
    f = MemoryFrontier()
    # 0..5 with evidence; 6 without (a seed: keeps its priority); 7 promoted while waiting
    prios = [50, 40, 30, 20, 10, 10, 35, 5]
    for i, p in enumerate(prios):
        f.push(_e(i, p, evidence=b"" if i == 6 else b"e%d" % i))
    assert f.push(_e(7, 45, evidence=b"e7"))  # promoted: its old record is stale
    new = {b"e0": 1, b"e1": 60, b"e2": 60, b"e3": 60, b"e4": 70, b"e5": 30, b"e7": 60}
    rescorer = _by_evidence(new)
    moved = f.rescore(rescorer)
    assert len(rescorer.calls) == 1  # one batch, every live entry with evidence once
    assert sorted(rescorer.calls[0]) == sorted(new)
    assert moved == 7  # every entry with evidence changed its priority here
    assert len(f) == 8
    # new priorities, then first found first: 1, 2, 3 were found before 7's first push
    got = [(e.fp, e.priority, e.value) for e in iter(f.pop, None)]
    assert [fp for fp, _p, _v in got] == [4, 1, 2, 3, 7, 6, 5, 0]
    assert got[0][1:] == (70, 0.7) and got[5][1:] == (35, 0.0)  # 6: untouched


def test_rescore_then_push_promote_and_anneal_still_work():
    f = MemoryFrontier()
    for i in range(20):
        f.push(_e(i, i % 4, evidence=b"x%d" % (i % 3)))
    f.rescore(_by_evidence({b"x0": 3, b"x1": 1, b"x2": 2}))
    assert f.get(5).priority == 2 and f.get(5).evidence == b"x2"
    assert f.push(_e(5, 9))  # promotion after a rescore
    assert not f.push(_e(6, 0))  # ignored: lower than its rescored priority
    f.push(_e(100, 3, evidence=b"x1"))  # new entries go behind older ones of their priority
    first = f.pop_annealed(Annealer(t0=0.0, k=4))
    assert first.fp == 5
    order = _drain(f)
    assert order == [0, 3, 6, 9, 12, 15, 18, 100, 2, 8, 11, 14, 17, 1, 4, 7, 10, 13, 16, 19]
    # a second rescore with nothing to change moves nothing
    g = MemoryFrontier()
    g.push(_e(1, 3, evidence=b"x0"))
    assert g.rescore(_by_evidence({b"x0": 3})) == 0
    assert MemoryFrontier().rescore(_by_evidence({})) == 0  # empty: the rescorer is not called


def test_rescore_is_a_stable_sort_by_new_priority_on_random_frontiers():
    rng = random.Random(8)
    for _ in range(20):
        f = MemoryFrontier()
        seqs: dict[int, int] = {}
        for _ in range(rng.randrange(1, 300)):
            fp = rng.randrange(120)
            e = _e(fp, rng.randrange(6), evidence=bytes([fp]))
            if f.push(e) and fp not in seqs:
                seqs[fp] = e.seq
        new = {bytes([fp]): rng.randrange(6) for fp in seqs}
        f.rescore(_by_evidence(new))
        expect = sorted(seqs, key=lambda fp: (-new[bytes([fp])], f.get(fp).seq))
        assert _drain(f) == expect


def test_rescore_keeps_every_entry_its_new_value_and_place_among_mixed_picks():
    """Promotions, annealing and host-aware picks (which leave dead and stale records in
    the buckets), fingerprint 0, many distinct priorities: after each rescore every
    waiting entry has its new priority and value, and the frontier drains in order."""
    rng = random.Random(11)
    for _ in range(15):
        f = MemoryFrontier()
        model: dict[int, tuple[int, int, float, bytes]] = {}  # fp -> prio, seq, value, ev
        annealer = Annealer(t0=0.5, alpha=1.0, k=4, seed=3)
        for _step in range(rng.randrange(50, 400)):
            op = rng.random()
            if op < 0.6:
                fp = rng.randrange(-60, 200)
                ev = b"" if rng.random() < 0.2 else fp.to_bytes(8, "little", signed=True)
                e = Entry(
                    url=f"http://127.0.0.{fp % 5 + 1}/p/{fp}",
                    fp=fp,
                    priority=rng.randrange(-3, 40),
                    value=rng.random(),
                    evidence=ev,
                )
                if f.push(e):
                    model[fp] = (e.priority, e.seq, e.value, ev)
            elif op < 0.7:
                got = f.pop_annealed(annealer)
                assert got is not None or not model
                if got is not None:
                    del model[got.fp]
            elif op < 0.8:
                host = f"http://127.0.0.{rng.randrange(1, 6)}"
                got = f.pop_available(lambda h, _extra, host=host: h == host)
                if got is not None:
                    assert got.url.startswith(host + "/")
                    del model[got.fp]
            else:
                new = {fp: (rng.randrange(-(10**9), 10**9), rng.random()) for fp in model}

                def rescorer(evidence: list[bytes], new=new):
                    fps = [int.from_bytes(ev, "little", signed=True) for ev in evidence]
                    assert len(set(fps)) == len(fps)
                    return [new[fp][0] for fp in fps], [new[fp][1] for fp in fps]

                moved = f.rescore(rescorer)
                assert moved <= len(model)
                for fp, (_prio, seq, _value, ev) in list(model.items()):
                    if ev:
                        model[fp] = (new[fp][0], seq, new[fp][1], ev)
            assert len(f) == len(model)
            for fp, (prio, seq, value, ev) in model.items():
                got = f.get(fp)
                assert (got.priority, got.seq, got.value, got.evidence) == (prio, seq, value, ev)
        expect = sorted(model, key=lambda fp: (-model[fp][0], model[fp][1]))
        assert _drain(f) == expect


def test_a_rescorers_bad_answer_leaves_the_frontier_as_it_was():
    def frontier() -> MemoryFrontier:
        f = MemoryFrontier()
        for i in range(5):
            f.push(_e(i + 1, i, evidence=b"x%d" % i))
        return f

    for bad in (
        lambda ev: ([1] * len(ev), ["x"] * len(ev)),  # values that are no numbers
        lambda ev: ([1] * len(ev), [[0.5, 0.5]] * len(ev)),  # not one value each
        lambda ev: ([1] * len(ev), [0.5] * (len(ev) - 1)),  # one value short
        lambda ev: ([None] * len(ev), [0.5] * len(ev)),  # priorities that are no ints
    ):
        f = frontier()
        with pytest.raises((ValueError, TypeError)):
            f.rescore(bad)
        assert len(f) == 5
        assert [(e.fp, e.priority) for e in iter(f.pop, None)] == [
            (5, 4),
            (4, 3),
            (3, 2),
            (2, 1),
            (1, 0),
        ]
