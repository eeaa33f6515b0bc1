"""``best_first``: links inherit the relevance of the page that holds them.

The baseline of seed 000's experiment ("best-first search on page text"): a link's
value is its parent's page relevance A = 4B + C (seed 002), scaled to [0, 1].
"""

from __future__ import annotations

from dataclasses import dataclass

from focused.strategies.base import LinkScore, Parent, value_priority


@dataclass
class BestFirstStrategy:
    title_weight: float = 4.0
    name: str = "best_first"
    anneal: bool = False

    def seed(self) -> LinkScore:
        return LinkScore(priority=value_priority(1.0), value=1.0)

    def score(self, parent: Parent, url: str, anchor_relevance: float) -> LinkScore | None:
        value = parent.page_relevance / (self.title_weight + 1.0)
        return LinkScore(priority=value_priority(value), value=value)
