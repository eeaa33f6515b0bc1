"""``oracle``: the benchmark's ceiling; it knows the labels (never a real crawl's choice).

From the frontier it always fetches a link to a known target first, otherwise it crawls
breadth-first: shallower first, first found first (FIFO ties, encoded in the priority
so that it holds under any priority queue). Its recall curve is what seed 000's
strategies are judged against (issue 4); ``targets`` are canonical URLs
(``w3lib.url.canonicalize_url``), normally ``spider.targets``.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

from w3lib.url import canonicalize_url

from focused.strategies.base import LinkScore, Parent

#: Room for this many links per depth level before the FIFO order of two levels mixes.
_PER_LEVEL = 10**9
#: Any target link outranks every non-target link (depth < 10**6).
_TARGET_BONUS = 10**15


@dataclass
class OracleStrategy:
    targets: frozenset[str] = frozenset()
    name: str = "oracle"
    anneal: bool = False
    _order: itertools.count = field(default_factory=itertools.count, repr=False)

    def __post_init__(self) -> None:
        self.targets = frozenset(canonicalize_url(t) for t in self.targets)

    def is_target(self, url: str) -> bool:
        return canonicalize_url(url) in self.targets

    def seed(self) -> LinkScore:
        return LinkScore(priority=_TARGET_BONUS * 2, value=1.0)

    def score(self, parent: Parent, url: str, anchor_relevance: float) -> LinkScore | None:
        depth = parent.depth + 1
        rank = next(self._order) % _PER_LEVEL  # later links rank lower: FIFO ties
        if self.is_target(url):
            return LinkScore(priority=_TARGET_BONUS - rank, value=1.0)
        return LinkScore(priority=-depth * _PER_LEVEL - rank, value=0.5 / (1 + depth))
