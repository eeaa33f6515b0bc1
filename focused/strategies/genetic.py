"""``genetic``: the m-value rule (Liu, Xia & Xu 2010) alone, without annealing."""

from __future__ import annotations

from dataclasses import dataclass

from focused.ranking import mvalue
from focused.strategies.base import Link, LinkScore, Parent, Strategy, StrategyParams


@dataclass
class GeneticStrategy(Strategy):
    """Order links by the message value m, then by anchor relevance r (the m-value rule,
    Liu, Xia & Xu 2010).

    Side channels (``r <= f``) decay by ``ratio`` per hop; after ``max_hops`` irrelevant
    hops a link is dropped, so the frontier cannot grow without bound (the paper is
    silent here; ``FOCUSED_MAX_TUNNEL_HOPS``).
    """

    m0: float = 100.0
    ratio: float = 0.8
    anchor_threshold: float = 0.2
    max_hops: int = 6
    name = "genetic"

    @classmethod
    def from_params(cls, params: StrategyParams) -> GeneticStrategy:
        return cls(
            m0=params.m0,
            ratio=params.ratio,
            anchor_threshold=params.anchor_threshold,
            max_hops=params.max_hops,
        )

    def threshold_for(self, parent: Parent) -> float:
        """Anchor threshold f used for the links of ``parent``."""
        return self.anchor_threshold

    def seed(self) -> LinkScore:
        # Seeds are chosen by hand: m = M0 and a fixed, high relevance (step 1 of the
        # m-value rule)
        return self._score(self.m0, 1.0)

    def score(self, parent: Parent, link: Link) -> LinkScore | None:
        anchor_relevance = link.anchor_relevance
        m = mvalue.child_m(
            parent.m or self.m0,
            anchor_relevance,
            m0=self.m0,
            ratio=self.ratio,
            threshold=self.threshold_for(parent),
        )
        hops = mvalue.side_channel_hops(m, m0=self.m0, ratio=self.ratio)
        if hops > self.max_hops:
            return None
        return self._score(m, anchor_relevance)

    def _score(self, m: float, r: float) -> LinkScore:
        r = min(1.0, max(0.0, r))
        return LinkScore(
            priority=mvalue.priority(m, r),
            value=0.9 * m / self.m0 + 0.1 * r,
            m=m,
            hops=mvalue.side_channel_hops(m, m0=self.m0, ratio=self.ratio),
        )
