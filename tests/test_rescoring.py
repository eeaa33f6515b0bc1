"""RescoreSchedule: when the frontier rescores its waiting links (pure, no Scrapy)."""

from __future__ import annotations

from focused.frontier.rescoring import RescoreSchedule


def _due(schedule: RescoreSchedule, waiting: list[int]) -> list[int]:
    """The learnt pages (1-based) at which a rescore was due."""
    return [n for n, w in enumerate(waiting, 1) if schedule.learnt(w)]


def test_every_n_learnt_pages_when_the_frontier_is_small():
    s = RescoreSchedule(every=3, budget=100)
    assert _due(s, [10] * 10) == [3, 6, 9]
    assert s.learnt_pages == 10 and s.rescorings == 0  # counted by rescored()
    s.rescored(4)
    s.rescored(0)
    assert (s.rescorings, s.moved) == (2, 4)


def test_a_large_frontier_is_rescored_less_often_within_the_budget():
    s = RescoreSchedule(every=2, budget=10)
    assert s.interval(5) == 2 and s.interval(20) == 2 and s.interval(21) == 3
    assert s.interval(95) == 10  # ceil(95 / 10)
    # 35 waiting: every ceil(35 / 10) = 4 pages; then 0 waiting: every 2 pages again
    assert _due(s, [35] * 8 + [0] * 4) == [4, 8, 10, 12]


def test_the_interval_counts_from_the_last_rescore_with_the_waiting_count_of_now():
    s = RescoreSchedule(every=1, budget=1)
    assert _due(s, [3, 3, 1]) == [3]  # ceil(3/1) = 3 pages; at page 3: 1 waiting, due


def test_off_or_a_frontier_that_cannot_rescore_is_never_due_but_pages_are_counted():
    off = RescoreSchedule(every=0, budget=5)
    assert not off.enabled and _due(off, [1] * 20) == []
    s = RescoreSchedule(every=1)
    assert not s.learnt(10, can_rescore=False)
    assert s.learnt_pages == 1 and s.learnt(10)  # the page above counts towards the next
    assert RescoreSchedule(every=-3, budget=-1).every == 0  # negative settings: off
