"""``best_first``: links inherit the relevance of the page that holds them.

The baseline of the m-value rule's experiment (Liu, Xia & Xu 2010: "best-first search
on page text"): a link's value is its parent's page relevance A = 4B + C (the
page-relevance rule), scaled to [0, 1].
"""

from __future__ import annotations

from dataclasses import dataclass

from focused.strategies.base import (
    Link,
    LinkScore,
    Parent,
    Strategy,
    StrategyParams,
    value_priority,
)


@dataclass
class BestFirstStrategy(Strategy):
    title_weight: float = 4.0
    name = "best_first"

    @classmethod
    def from_params(cls, params: StrategyParams) -> BestFirstStrategy:
        return cls(title_weight=params.title_weight)

    def score(self, parent: Parent, link: Link) -> LinkScore | None:
        value = parent.page_relevance / (self.title_weight + 1.0)
        return LinkScore(priority=value_priority(value), value=value)
