"""``bfs``: the breadth-first baseline of the page-relevance rule A = 4B + C's crawler:
shallower first, first found first."""

from __future__ import annotations

from dataclasses import dataclass

from focused.strategies.base import Link, LinkScore, Parent, Strategy


@dataclass
class BreadthFirstStrategy(Strategy):
    name = "bfs"

    def seed(self) -> LinkScore:
        return LinkScore(priority=0, value=1.0)

    def score(self, parent: Parent, link: Link) -> LinkScore | None:
        depth = parent.depth + 1
        return LinkScore(priority=-depth, value=1.0 / (1 + depth))
