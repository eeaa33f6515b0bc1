"""The genetic m-value rule (Liu, Xia & Xu 2010).

Every URL carries a relevance message value ``m`` inherited from the page that links to
it, and the relevance ``r`` of its anchor text. With initial value ``M0``, genetic ratio
``b`` (0 < b < 1) and anchor threshold ``f``:

- ``r > f`` and ``m_parent == M0``: child ``m = m_parent`` (the main channel keeps M0);
- ``r > f`` and ``m_parent < M0``: child ``m = M0`` (a new main channel opens);
- ``r <= f``: child ``m = m_parent * b`` (a decaying side channel).

The waiting queue is ordered by ``m`` first, then by ``r``.
"""

from __future__ import annotations

import math

#: r is quantised to this many steps inside an integer priority.
R_STEPS = 1000
#: m is quantised to 1/M_SCALE inside an integer priority.
M_SCALE = 1000


def child_m(parent_m: float, r: float, *, m0: float, ratio: float, threshold: float) -> float:
    """Message value of a link with anchor relevance ``r`` found on a page with ``parent_m``."""
    if r > threshold:
        return parent_m if parent_m >= m0 else m0
    return parent_m * ratio


def side_channel_hops(m: float, *, m0: float, ratio: float) -> int:
    """Number of irrelevant hops that decayed ``M0`` down to ``m`` (0 on a main channel)."""
    if m >= m0:
        return 0
    return max(0, round(math.log(m / m0) / math.log(ratio)))


def priority(m: float, r: float) -> int:
    """Integer Scrapy priority ordering by ``m`` first, then ``r`` (higher first).

    ``m`` is kept to 1/1000 and ``r`` (clipped to [0, 1]) to 1/1000, so two links with
    different ``m`` are never reordered by their ``r``.
    """
    r_q = min(R_STEPS - 1, max(0, int(r * (R_STEPS - 1))))
    return int(round(m * M_SCALE)) * R_STEPS + r_q
