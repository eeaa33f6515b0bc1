"""The genetic m-value rule (Liu, Xia & Xu 2010) with the paper's numbers.

M0 = 100, b = 0.8, f = 0.2.
"""

from __future__ import annotations

import pytest

from focused.ranking.mvalue import child_m, priority, side_channel_hops

PAPER = {"m0": 100.0, "ratio": 0.8, "threshold": 0.2}


def test_relevant_anchor_on_main_channel_keeps_m0() -> None:
    # r = 0.5 > f and m_p == M0 -> m = m_p = 100
    assert child_m(100.0, 0.5, **PAPER) == 100.0


@pytest.mark.parametrize("parent_m", [80.0, 64.0, 1.0, 0.001])
def test_relevant_anchor_on_side_channel_restores_m0(parent_m: float) -> None:
    # r = 0.9 > f and m_p < M0 -> m = M0 (a new main channel opens)
    assert child_m(parent_m, 0.9, **PAPER) == 100.0


def test_irrelevant_anchor_decays_by_ratio() -> None:
    assert child_m(100.0, 0.1, **PAPER) == pytest.approx(80.0)  # 100 * 0.8
    assert child_m(80.0, 0.0, **PAPER) == pytest.approx(64.0)  # 80 * 0.8
    assert child_m(64.0, 0.05, **PAPER) == pytest.approx(51.2)  # 64 * 0.8


def test_anchor_relevance_equal_to_threshold_counts_as_irrelevant() -> None:
    # r <= f -> decay: r == f = 0.2 gives 100 * 0.8 = 80, not 100
    assert child_m(100.0, 0.2, **PAPER) == pytest.approx(80.0)
    assert child_m(64.0, 0.2, **PAPER) == pytest.approx(51.2)  # not restored to 100
    # just above f is relevant
    assert child_m(64.0, 0.2000001, **PAPER) == 100.0


def test_other_parameters_are_used() -> None:
    # M0 = 10, b = 0.5, f = 0.6: r = 0.5 <= 0.6 -> 10 * 0.5 = 5; r = 0.7 from m 5 -> 10
    assert child_m(10.0, 0.5, m0=10.0, ratio=0.5, threshold=0.6) == pytest.approx(5.0)
    assert child_m(5.0, 0.7, m0=10.0, ratio=0.5, threshold=0.6) == 10.0


def test_paper_figure_two_chain_a_c_f() -> None:
    # Seed A (M0) -> irrelevant C -> irrelevant E -> relevant anchor to F.
    m_c = child_m(100.0, 0.1, **PAPER)  # 80
    m_e = child_m(m_c, 0.1, **PAPER)  # 64
    m_f = child_m(m_e, 0.7, **PAPER)  # restored: 100
    assert (m_c, m_e, m_f) == pytest.approx((80.0, 64.0, 100.0))


@pytest.mark.parametrize(
    ("m", "hops"),
    [
        (100.0, 0),
        (150.0, 0),  # above M0 is still the main channel
        (80.0, 1),  # 100 * 0.8
        (64.0, 2),  # 100 * 0.8^2
        (100.0 * 0.8 * 0.8 * 0.8, 3),  # 51.2, computed by repeated products like the crawl
        (40.96, 4),  # 100 * 0.8^4
    ],
)
def test_side_channel_hops(m: float, hops: int) -> None:
    assert side_channel_hops(m, m0=100.0, ratio=0.8) == hops


def test_side_channel_hops_follow_a_long_decay_chain() -> None:
    m = 100.0
    for expected in range(1, 12):
        m = child_m(m, 0.0, **PAPER)
        assert side_channel_hops(m, m0=100.0, ratio=0.8) == expected
    # ratio 0.5: 100 -> 12.5 is three halvings
    assert side_channel_hops(12.5, m0=100.0, ratio=0.5) == 3


def test_priority_orders_by_m_before_r() -> None:
    # higher m with r = 0 beats lower m with r = 1:
    # 100*1000*1000 + 0 = 100_000_000 > 80*1000*1000 + 999 = 80_000_999
    assert priority(100.0, 0.0) == 100_000_000
    assert priority(80.0, 1.0) == 80_000_999
    assert priority(100.0, 0.0) > priority(80.0, 1.0)
    # m that differs by only 1/1000 still wins against any r
    assert priority(80.001, 0.0) > priority(80.0, 1.0)  # 80_001_000 > 80_000_999
    assert priority(64.0, 1.0) > priority(51.2, 1.0) > priority(40.96, 1.0)


def test_priority_orders_equal_m_by_r() -> None:
    # r is quantised to int(r * 999): 0.5 -> 499, 0.4 -> 399
    assert priority(80.0, 0.5) == 80_000_499
    assert priority(80.0, 0.4) == 80_000_399
    assert priority(80.0, 0.5) > priority(80.0, 0.4) > priority(80.0, 0.0)


def test_priority_clips_r_to_unit_interval() -> None:
    assert priority(80.0, 1.5) == priority(80.0, 1.0) == 80_000_999
    assert priority(80.0, -0.3) == priority(80.0, 0.0) == 80_000_000


@pytest.mark.parametrize(("m", "r"), [(100.0, 1.0), (80.0, 0.33), (51.2, 0.0), (0.5, 0.7)])
def test_priorities_are_ints(m: float, r: float) -> None:
    assert type(priority(m, r)) is int
