"""The quality benchmark's ceiling: a strategy that knows the labels.

Never a real crawl's choice, so it lives with the benchmarks, outside the ``focused``
package (and the scrapyd egg). A crawl selects it by its dotted path::

    -s FOCUSED_STRATEGY=bench.oracle.OracleStrategy

From the frontier it always fetches a link to a known target first, otherwise it crawls
breadth-first: shallower first, first found first (FIFO ties, encoded in the priority so
that it holds under any priority queue). Its recall curve is what the strategies of Liu,
Xia & Xu (2010) and the others are judged against in :mod:`bench.quality`. ``targets``
are canonical URLs (``w3lib.url.canonicalize_url``), the crawl's known targets
(``params.targets`` in :meth:`OracleStrategy.from_params`).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable

from w3lib.url import canonicalize_url

from focused.strategies.base import Link, LinkScore, Parent, Strategy, StrategyParams

#: Room for this many links per depth level before the FIFO order of two levels mixes.
_PER_LEVEL = 10**9
#: Any target link outranks every non-target link (depth < 10**6).
_TARGET_BONUS = 10**15


class OracleStrategy(Strategy):
    """A link to a known target first, else breadth-first with FIFO ties."""

    name = "oracle"
    anneal = False

    def __init__(self, targets: Iterable[str] = frozenset()) -> None:
        self.targets = frozenset(canonicalize_url(t) for t in targets)
        self._order = itertools.count()

    @classmethod
    def from_params(cls, params: StrategyParams) -> OracleStrategy:
        return cls(targets=params.targets)

    def is_target(self, url: str) -> bool:
        return canonicalize_url(url) in self.targets

    def seed(self) -> LinkScore:
        return LinkScore(priority=_TARGET_BONUS * 2, value=1.0)

    def score(self, parent: Parent, link: Link) -> LinkScore | None:
        depth = parent.depth + 1
        rank = next(self._order) % _PER_LEVEL  # later links rank lower: FIFO ties
        if self.is_target(link.url):
            return LinkScore(priority=_TARGET_BONUS - rank, value=1.0)
        return LinkScore(priority=-depth * _PER_LEVEL - rank, value=0.5 / (1 + depth))
