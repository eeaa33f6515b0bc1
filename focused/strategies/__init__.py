"""Link-ordering strategies, chosen with ``FOCUSED_STRATEGY``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from focused.strategies.annealing import AnnealingStrategy
from focused.strategies.base import LinkScore, Parent, Strategy
from focused.strategies.best_first import BestFirstStrategy
from focused.strategies.bfs import BreadthFirstStrategy
from focused.strategies.bsbs import BSBSStrategy
from focused.strategies.gao import GaoStrategy
from focused.strategies.genetic import GeneticStrategy
from focused.strategies.learning import LearningStrategy, Link
from focused.strategies.oracle import OracleStrategy

STRATEGIES: dict[str, type] = {
    "bfs": BreadthFirstStrategy,
    "best_first": BestFirstStrategy,
    "genetic": GeneticStrategy,
    "annealing": AnnealingStrategy,
    "bsbs": BSBSStrategy,
    "gao": GaoStrategy,
    "learning": LearningStrategy,  # issue 8: learnt online (focused.ranking.learning)
    "oracle": OracleStrategy,  # benchmark only: knows the targets (focused.bench)
}

__all__ = [
    "STRATEGIES",
    "Link",
    "LinkScore",
    "Parent",
    "Strategy",
    "UnknownStrategy",
    "build",
]


class UnknownStrategy(ValueError):
    """A strategy name that is not in :data:`STRATEGIES`."""


def build(
    name: str,
    *,
    m0: float = 100.0,
    ratio: float = 0.8,
    anchor_threshold: float = 0.2,
    max_hops: int = 6,
    widening: float = 0.5,
    bsbs_depth: int = 2,
    title_weight: float = 4.0,
    targets: frozenset[str] = frozenset(),
    keywords: Mapping[str, float] | None = None,
    learning: Mapping[str, Any] | None = None,
) -> Any:
    """The strategy called ``name`` with its parameters (one-line error when unknown).

    ``targets`` (canonical URLs) are only read by the benchmark's ``oracle``; the topic's
    ``keywords`` and the ``learning`` parameters (:class:`LearningStrategy` fields) by
    ``learning``.
    """
    genetic = {"m0": m0, "ratio": ratio, "anchor_threshold": anchor_threshold, "max_hops": max_hops}
    if name == "bfs":
        return BreadthFirstStrategy()
    if name == "best_first":
        return BestFirstStrategy(title_weight=title_weight)
    if name == "genetic":
        return GeneticStrategy(**genetic)
    if name == "annealing":
        return AnnealingStrategy(**genetic, widening=widening)
    if name == "bsbs":
        return BSBSStrategy(depth=bsbs_depth, title_weight=title_weight)
    if name == "gao":
        return GaoStrategy()
    if name == "learning":
        return LearningStrategy(
            keywords=dict(keywords or {}), **genetic, title_weight=title_weight, **(learning or {})
        )
    if name == "oracle":
        return OracleStrategy(targets=frozenset(targets))
    raise UnknownStrategy(
        f"unknown FOCUSED_STRATEGY {name!r}; valid: {', '.join(sorted(STRATEGIES))}"
    )
