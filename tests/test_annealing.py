"""Simulated-annealing selection (He, Cheng & Cai 2009)."""

from __future__ import annotations

import math

import pytest

from focused.frontier.memory import Entry, MemoryFrontier
from focused.ranking.annealing import Annealer


def _frontier(values: list[float]) -> MemoryFrontier:
    f = MemoryFrontier()
    for i, v in enumerate(values):
        # priority order equals value order (strictly decreasing with i)
        f.push(Entry(url=f"http://h/{i}", fp=i, priority=len(values) - i, value=v))
    return f


def _order(f: MemoryFrontier, annealer: Annealer | None) -> list[str]:
    out = []
    while len(f):
        e = f.pop() if annealer is None else f.pop_annealed(annealer)
        out.append(e.url)
    return out


def test_zero_temperature_is_best_first_even_with_ties():
    values = [1.0, 1.0, 0.9, 0.9, 0.9, 0.5, 0.2, 0.2, 0.1, 0.0] * 3
    a = Annealer(t0=0.0, alpha=0.9, t_min=0.0, k=8, seed=1)
    assert _order(_frontier(values), a) == _order(_frontier(values), None)
    assert a.picks == len(values)
    assert a.temperature == 0.0


def test_cold_limit_is_best_first_for_distinct_values():
    values = [1.0 - i / 100 for i in range(60)]
    a = Annealer(t0=1e-9, alpha=0.5, t_min=1e-12, k=8, seed=3)
    assert _order(_frontier(values), a) == _order(_frontier(values), None)
    assert a.accepted_worse == 0


def test_hot_annealing_reorders_and_counts_worse_picks():
    values = [1.0 - i / 100 for i in range(60)]
    a = Annealer(t0=10.0, alpha=1.0, t_min=1.0, k=8, seed=3)
    order = _order(_frontier(values), a)
    assert sorted(order) == sorted(_order(_frontier(values), None))
    assert order != _order(_frontier(values), None)
    assert a.accepted_worse > 0


@pytest.mark.parametrize("delta,t", [(0.05, 0.05), (0.2, 0.1), (0.01, 0.1)])
def test_acceptance_rate_matches_metropolis(delta, t):
    n = 20_000
    a = Annealer(t0=t, alpha=1.0, t_min=t, k=2, seed=7)
    accepted = sum(a.accept(delta) for _ in range(n))
    p = math.exp(-delta / t)
    sd = math.sqrt(p * (1 - p) / n)
    assert abs(accepted / n - p) < 4 * sd


def test_choose_acceptance_rate_with_uniform_candidate():
    # k=2: the candidate is the runner-up half of the time, accepted with exp(-d/T)
    n, delta, t = 20_000, 0.1, 0.1
    a = Annealer(t0=t, alpha=1.0, t_min=t, k=2, seed=11)
    taken = sum(a.choose([0.9, 0.9 - delta]) for _ in range(n))
    p = 0.5 * math.exp(-delta / t)
    assert abs(taken / n - p) < 4 * math.sqrt(p * (1 - p) / n)
    assert a.accepted_worse == taken


def test_better_or_equal_candidate_is_always_accepted():
    a = Annealer(t0=0.01, alpha=1.0, t_min=0.01, k=2, seed=1)
    assert all(a.accept(d) for d in (0.0, -0.5))
    assert not Annealer(t0=0.0, t_min=0.0).accept(1e-12)


def test_cooling_is_geometric_with_floor():
    a = Annealer(t0=1.0, alpha=0.5, t_min=0.2, k=4, seed=0)
    temps = []
    for _ in range(5):
        a.choose([1.0, 0.5, 0.2])
        temps.append(a.temperature)
    assert temps == [0.5, 0.25, 0.2, 0.2, 0.2]
    assert a.picks == 5


def test_same_seed_same_sequence_and_resume_from_state():
    values = [1.0 - i / 50 for i in range(50)]
    a, b = Annealer(0.2, 0.99, 1e-3, 8, seed=5), Annealer(0.2, 0.99, 1e-3, 8, seed=5)
    assert _order(_frontier(values), a) == _order(_frontier(values), b)
    assert _order(_frontier(values), Annealer(0.2, 0.99, 1e-3, 8, seed=6)) != _order(
        _frontier(values), Annealer(0.2, 0.99, 1e-3, 8, seed=5)
    )
    # stop after 20 picks, export, import into a fresh annealer: same continuation
    full = Annealer(0.2, 0.99, 1e-3, 8, seed=5)
    picks = [full.choose(values[:8]) for _ in range(40)]
    first = Annealer(0.2, 0.99, 1e-3, 8, seed=5)
    head = [first.choose(values[:8]) for _ in range(20)]
    import json

    state = json.loads(json.dumps(first.state()))
    second = Annealer(0.2, 0.99, 1e-3, 8, seed=999)
    second.load_state(state)
    tail = [second.choose(values[:8]) for _ in range(20)]
    assert head + tail == picks
    assert second.temperature == full.temperature
    assert second.picks == 40


@pytest.mark.parametrize(
    "kwargs", [{"t0": -1}, {"alpha": 0}, {"alpha": 1.5}, {"k": 0}, {"t_min": -0.1}]
)
def test_bad_parameters(kwargs):
    with pytest.raises(ValueError):
        Annealer(**kwargs)
