"""A strategy outside the registry, chosen by dotted path (``FOCUSED_STRATEGY=
tests.strategy_plugin.TargetsFirstStrategy``): what a benchmark's oracle looks like."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from w3lib.url import canonicalize_url

from focused.meta import PageFacts
from focused.strategies.base import Link, LinkScore, Parent, Strategy, StrategyParams


@dataclass
class TargetsFirstStrategy(Strategy):
    """A known target first, else breadth-first (the crawl's targets: ``params.targets``)."""

    targets: frozenset[str] = frozenset()
    scored: list[str] = field(default_factory=list)
    pages: int = 0
    name = "targets_first"
    learns = True  # hears every fetched page: observe()

    @classmethod
    def from_params(cls, params: StrategyParams) -> TargetsFirstStrategy:
        return cls(targets=frozenset(map(canonicalize_url, params.targets)))

    def score(self, parent: Parent, link: Link) -> LinkScore | None:
        self.scored.append(link.url)
        if canonicalize_url(link.url) in self.targets:
            return LinkScore(priority=1000, value=1.0)
        return LinkScore(priority=-(parent.depth + 1), value=0.5 / (parent.depth + 2))

    def observe(self, url: str, page: PageFacts, link: Mapping[str, Any]) -> None:
        self.pages += 1

    def stats(self) -> dict[str, float]:
        return {"targets": float(len(self.targets)), "pages": float(self.pages)}


class NotAStrategy:
    """Anything else: refused as FOCUSED_STRATEGY."""
