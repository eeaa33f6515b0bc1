"""``bfs``: breadth-first baseline (seed 002): shallower first, first found first."""

from __future__ import annotations

from dataclasses import dataclass

from focused.strategies.base import LinkScore, Parent


@dataclass
class BreadthFirstStrategy:
    name: str = "bfs"
    anneal: bool = False

    def seed(self) -> LinkScore:
        return LinkScore(priority=0, value=1.0)

    def score(self, parent: Parent, url: str, anchor_relevance: float) -> LinkScore | None:
        depth = parent.depth + 1
        return LinkScore(priority=-depth, value=1.0 / (1 + depth))
