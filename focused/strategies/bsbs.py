"""``bsbs``: best-first with a tunneling depth D (BS-BS tunneling depth, Lin et al. 2007).

Best-first keeps links of relevant pages. BS-BS does not drop the links of an irrelevant
page at once: it explores at most D irrelevant hops below the last relevant page. A
relevant page found within D hops starts a new branch (its links are back to hop 0 with
its own, high, relevance); deeper links are discarded.
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
class BSBSStrategy(Strategy):
    depth: int = 2  # D
    title_weight: float = 4.0
    name = "bsbs"

    @classmethod
    def from_params(cls, params: StrategyParams) -> BSBSStrategy:
        return cls(depth=params.bsbs_depth, title_weight=params.title_weight)

    def score(self, parent: Parent, link: Link) -> LinkScore | None:
        hops = 0 if parent.relevant else parent.hops + 1
        if hops > self.depth:
            return None
        value = parent.page_relevance / (self.title_weight + 1.0)
        # Within a tunnel, shallower hops first: a branch is explored level by level.
        value = value / (1 + hops)
        return LinkScore(priority=value_priority(value), value=value, hops=hops)
