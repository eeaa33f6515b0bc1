"""``annealing``: m-value priorities (Liu, Xia & Xu 2010) with simulated-annealing
selection with tunneling (He, Cheng & Cai 2009).

The link scores are the genetic rule's; the scheduler adds the annealing pick
(:mod:`focused.ranking.annealing`). Tunneling widens the topic scope on pages whose
relevance is below the threshold: their links count as relevant from a lower anchor
threshold ``f * FOCUSED_TUNNEL_WIDENING``, so more of them open a main channel and the
crawl passes through low-relevance regions.
"""

from __future__ import annotations

from dataclasses import dataclass

from focused.strategies.base import Parent, StrategyParams
from focused.strategies.genetic import GeneticStrategy


@dataclass
class AnnealingStrategy(GeneticStrategy):
    widening: float = 0.5
    name = "annealing"
    anneal = True

    @classmethod
    def from_params(cls, params: StrategyParams) -> AnnealingStrategy:
        return cls(
            m0=params.m0,
            ratio=params.ratio,
            anchor_threshold=params.anchor_threshold,
            max_hops=params.max_hops,
            widening=params.widening,
        )

    def threshold_for(self, parent: Parent) -> float:
        if parent.relevant:
            return self.anchor_threshold
        return self.anchor_threshold * self.widening
