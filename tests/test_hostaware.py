"""The host-aware pick (focused/frontier/hostaware.py): the best waiting URL among the
hosts that may be fetched now, on the in-memory frontier."""

from __future__ import annotations

import random
from functools import partial

from focused.frontier.hostaware import HostMemo, choose, first_available, wanted
from focused.frontier.memory import Entry, MemoryFrontier
from focused.ranking.annealing import Annealer


def _e(i: int, host: str, priority: int, value: float = 0.0, **kw) -> Entry:
    return Entry(url=f"http://{host}/p{i}", fp=i, priority=priority, value=value, **kw)


def _host(e: Entry) -> str:
    return e.url.split("/")[2]


def _everyone(host: str, extra: object) -> bool:
    return True


def _random_frontier(seed: int, n: int = 400) -> MemoryFrontier:
    rng = random.Random(seed)
    f = MemoryFrontier()
    for _ in range(n):
        fp = rng.randrange(n // 2)  # repeats: promotions and ignored pushes
        f.push(_e(fp, f"h{fp % 7}.test", rng.randrange(6), value=rng.random()))
    return f


def test_first_available_takes_the_first_wanted_within_the_scan():
    items = list(range(20))
    assert first_available(items, lambda x: x % 5 == 4, want=2) == [4, 9]
    assert first_available(items, lambda x: x % 5 == 4, want=2, scan=5) == [4]
    assert first_available(items, lambda x: x > 100, want=1) == []
    assert first_available(items, lambda x: True, want=0) == []


def test_wanted_and_choose_follow_the_annealer():
    assert wanted(None) == 1
    assert wanted(Annealer(t0=0.0, k=8)) == 1
    assert wanted(Annealer(t0=0.5, k=8)) == 8
    cold = Annealer(t0=0.0, k=8)
    assert choose([0.9, 0.1], cold) == 0 and cold.picks == 1  # a pick cools once


def test_memo_asks_each_host_once_per_pick_but_entries_with_extra_each_time():
    calls: list[str] = []
    memo = HostMemo(lambda host, extra: calls.append(host) or host != "a")
    assert not memo(1, lambda: "a") and not memo(1, lambda: "a")
    assert memo(2, lambda: "b")
    assert calls == ["a", "b"]
    memo(1, lambda: "a", extra={"meta": {"download_slot": "x"}})
    memo(1, lambda: "a", extra={"meta": {"download_slot": "x"}})
    assert calls == ["a", "b", "a", "a"] and memo.asked == 4


def _drain(pick) -> list[int]:
    out = []
    while (e := pick()) is not None:
        out.append(e.fp)
    return out


def test_with_every_host_available_it_is_the_strict_order():
    for seed in range(5):
        a, b = _random_frontier(seed), _random_frontier(seed)
        strict = _drain(a.pop)
        aware = _drain(partial(b.pop_available, _everyone))
        assert aware == strict and len(b) == 0


def test_with_every_host_available_the_annealing_pick_is_unchanged():
    for seed in range(5):
        a, b = _random_frontier(seed), _random_frontier(seed)
        sa, sb = Annealer(t0=0.5, alpha=0.99, k=6, seed=seed), Annealer(0.5, 0.99, 1e-4, 6, seed)
        strict = _drain(partial(a.pop_annealed, sa))
        aware = _drain(partial(b.pop_available, _everyone, sb))
        assert aware == strict
        assert (sa.picks, sa.accepted_worse, sa.temperature) == (
            sb.picks,
            sb.accepted_worse,
            sb.temperature,
        )


def test_a_busy_host_is_skipped_and_its_entries_keep_their_place():
    f = MemoryFrontier()
    for i in range(5):
        f.push(_e(i, "a.test", 10))
    f.push(_e(10, "b.test", 1))
    f.push(_e(11, "c.test", 5))
    f.push(_e(12, "b.test", 1))
    busy = {"http://a.test"}

    def free(host: str, extra: object) -> bool:
        return host not in busy

    assert f.pop_available(free).fp == 11  # the best of the free hosts
    assert f.pop_available(free).fp == 10  # then first found first among equals
    busy.add("http://b.test")
    assert f.pop_available(free) is None  # nothing free: nothing taken
    assert len(f) == 6
    busy.clear()
    assert [e.fp for e in iter(f.pop, None)] == [0, 1, 2, 3, 4, 12]


def test_the_scan_is_bounded():
    f = MemoryFrontier()
    for i in range(100):
        f.push(_e(i, "a.test", 10))
    f.push(_e(500, "b.test", 0))

    def free(host: str, extra: object) -> bool:
        return host != "http://a.test"

    assert f.pop_available(free, scan=50) is None
    assert f.pop_available(free, scan=101).fp == 500


def test_skipping_works_past_promoted_and_taken_records():
    f = MemoryFrontier()
    for i in range(6):
        f.push(_e(i, "a.test" if i % 2 else "b.test", 3))
    f.push(_e(0, "b.test", 9))  # promoted: a stale record stays in the bucket of 3
    f.push(_e(20, "b.test", 3))

    def free(host: str, extra: object) -> bool:
        return host == "http://b.test"

    assert [f.pop_available(free).fp for _ in range(4)] == [0, 2, 4, 20]
    assert f.pop_available(free) is None
    assert [e.fp for e in iter(f.pop, None)] == [1, 3, 5]


def test_the_annealing_pick_chooses_among_the_top_k_available():
    f = MemoryFrontier()
    for i in range(50):
        f.push(_e(i, "a.test", 100, value=1.0))  # the best, on a busy host
    for i in range(50, 80):
        f.push(_e(i, f"h{i % 3}.test", 80 - i, value=(80 - i) / 30))
    hot = Annealer(t0=5.0, alpha=1.0, k=4, seed=1)

    def free(host: str, extra: object) -> bool:
        return host != "http://a.test"

    picked = []
    for _ in range(10):
        waiting_free = sorted((e for e in f.entries() if _host(e) != "a.test"), key=lambda e: e.fp)
        top4 = {e.fp for e in waiting_free[:4]}
        got = f.pop_available(free, hot)
        assert got.fp in top4
        picked.append(got.fp)
    assert picked != sorted(picked)  # it did take a worse one sometimes
    assert hot.picks == 10 and len(f) == 70


def test_an_entry_with_its_own_slot_is_asked_with_its_extra():
    f = MemoryFrontier()
    f.push(_e(1, "a.test", 5, extra={"meta": {"download_slot": "elsewhere"}}))
    f.push(_e(2, "a.test", 5))

    def free(host: str, extra: object) -> bool:
        slot = (extra or {}).get("meta", {}).get("download_slot")
        return slot == "elsewhere"

    assert f.pop_available(free).fp == 1
    assert f.pop_available(free) is None


def test_a_priority_per_entry_deep_walks_leave_the_order_whole():
    """Each entry in a bucket of its own (a priority each, some pushed again at a higher
    one): picks that walk hundreds of buckets find the best entry of the free host and
    leave every other entry where it was."""
    rng = random.Random(7)
    a, b = MemoryFrontier(), MemoryFrontier()
    for i in range(600):
        e = _e(i, f"h{i % 8}.test", rng.randrange(10**6))
        a.push(e)
        b.push(e)
    for i in range(0, 600, 5):  # promotions: a second heap entry for some priorities
        e = _e(i, f"h{i % 8}.test", 2 * 10**6 + rng.randrange(10**6))
        a.push(e)
        b.push(e)
    only = "http://h7.test"
    strict = _drain(a.pop)
    best_of_h7 = next(fp for fp in strict if fp % 8 == 7)
    assert b.pop_available(lambda host, extra: host == only, scan=10**6).fp == best_of_h7
    for _ in range(20):  # picks that find nothing walk the whole heap and put it back
        assert b.pop_available(lambda host, extra: False, scan=10**6) is None
    assert _drain(b.pop) == [fp for fp in strict if fp != best_of_h7]


def _refusing(busy: frozenset[str]):
    def available(host: str, extra: object) -> bool:
        return host not in busy

    return available


def test_a_pick_that_found_nothing_is_remembered_and_gives_the_same_answers() -> None:
    """The same random pushes and picks on two frontiers, one naming each pick's
    predicate by its busy hosts (the scheduler's key): every pick takes the same entry,
    in the strict order, with the annealer too; many picks are answered from the memo."""
    hosts = [f"http://h{i}.test" for i in range(6)]
    for seed in range(4):
        rng = random.Random(seed)
        plain, keyed = MemoryFrontier(), MemoryFrontier()
        sa = Annealer(0.5, 0.99, 1e-4, 4, seed) if seed % 2 else None
        sb = Annealer(0.5, 0.99, 1e-4, 4, seed) if seed % 2 else None
        # a few busy-host sets, as the gate's would repeat between downloads
        choices = [frozenset(rng.sample(hosts, k)) for k in (6, 5, 5, 4, 6, 3)]
        fp = 0
        for _ in range(3000):
            if rng.random() < 0.35:
                fp += 1
                one, other = _e_pair(rng.randrange(fp + 1), rng)  # repeats: promotions
                plain.push(one)
                keyed.push(other)
            else:
                busy = rng.choice(choices)
                a = plain.pop_available(_refusing(busy), sa, 64)
                b = keyed.pop_available(_refusing(busy), sb, 64, busy)
                assert (a and a.fp) == (b and b.fp)
        assert len(plain) == len(keyed)
        assert keyed.remembered > 100 and plain.remembered == 0


def _e_pair(fp: int, rng: random.Random) -> tuple[Entry, Entry]:
    host, prio, value = f"h{rng.randrange(6)}.test", rng.randrange(5), rng.random()
    return _e(fp, host, prio, value), _e(fp, host, prio, value)


def test_an_available_push_or_a_take_ends_the_memo() -> None:
    f = MemoryFrontier()
    for i in range(50):
        f.push(_e(i, "a.test", 5))
    busy = frozenset({"http://a.test"})
    assert f.pop_available(_refusing(busy), key=busy) is None
    f.push(_e(100, "a.test", 9))  # a busy host's entry: still nothing, without a walk
    assert f.pop_available(_refusing(busy), key=busy) is None
    assert f.remembered == 1
    f.push(_e(101, "b.test", 0))  # a free host's, at the bottom: found
    assert f.pop_available(_refusing(busy), key=busy).fp == 101
    assert f.pop_available(_refusing(busy), key=busy) is None  # walked again, then kept
    free = frozenset()
    assert f.pop_available(_refusing(free), key=free).fp == 100  # another key: a walk
    assert f.pop_available(_refusing(busy), key=busy) is None  # the take ended the memo
    assert f.remembered == 1
