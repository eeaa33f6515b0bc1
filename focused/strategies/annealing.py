"""``annealing``: m-value priorities with simulated-annealing selection (seeds 000 + 001).

The link scores are the genetic rule's; the scheduler adds the annealing pick
(:mod:`focused.ranking.annealing`). Seed 001's tunneling widens the topic scope on pages whose
relevance is below the threshold: their links count as relevant from a lower anchor
threshold ``f * FOCUSED_TUNNEL_WIDENING``, so more of them open a main channel and the
crawl passes through low-relevance regions.
"""

from __future__ import annotations

from dataclasses import dataclass

from focused.strategies.base import Parent
from focused.strategies.genetic import GeneticStrategy


@dataclass
class AnnealingStrategy(GeneticStrategy):
    widening: float = 0.5
    name: str = "annealing"
    anneal: bool = True

    def threshold_for(self, parent: Parent) -> float:
        if parent.relevant:
            return self.anchor_threshold
        return self.anchor_threshold * self.widening
