"""``bsbs``: best-first with a tunneling depth D (BS-BS, Lin et al., seed 004).

Best-first keeps links of relevant pages. BS-BS does not drop the links of an irrelevant
page at once: it explores at most D irrelevant hops below the last relevant page. A
relevant page found within D hops starts a new branch (its links are back to hop 0 with
its own, high, relevance); deeper links are discarded.
"""

from __future__ import annotations

from dataclasses import dataclass

from focused.strategies.base import LinkScore, Parent, value_priority


@dataclass
class BSBSStrategy:
    depth: int = 2  # D
    title_weight: float = 4.0
    name: str = "bsbs"
    anneal: bool = False

    def seed(self) -> LinkScore:
        return LinkScore(priority=value_priority(1.0), value=1.0)

    def score(self, parent: Parent, url: str, anchor_relevance: float) -> LinkScore | None:
        hops = 0 if parent.relevant else parent.hops + 1
        if hops > self.depth:
            return None
        value = parent.page_relevance / (self.title_weight + 1.0)
        # Within a tunnel, shallower hops first: a branch is explored level by level.
        value = value / (1 + hops)
        return LinkScore(priority=value_priority(value), value=value, hops=hops)
