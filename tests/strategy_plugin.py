"""A strategy outside the registry, chosen by dotted path (``FOCUSED_STRATEGY=
tests.strategy_plugin.TargetsFirstStrategy``): what a benchmark's oracle looks like."""

from __future__ import annotations

from dataclasses import dataclass, field

from w3lib.url import canonicalize_url

from focused.strategies.base import Link, LinkScore, Parent, Strategy, StrategyParams


@dataclass
class TargetsFirstStrategy(Strategy):
    """A known target first, else breadth-first (the crawl's targets: ``params.targets``)."""

    targets: frozenset[str] = frozenset()
    scored: list[str] = field(default_factory=list)
    name = "targets_first"

    @classmethod
    def from_params(cls, params: StrategyParams) -> TargetsFirstStrategy:
        return cls(targets=frozenset(map(canonicalize_url, params.targets)))

    def score(self, parent: Parent, link: Link) -> LinkScore | None:
        self.scored.append(link.url)
        if canonicalize_url(link.url) in self.targets:
            return LinkScore(priority=1000, value=1.0)
        return LinkScore(priority=-(parent.depth + 1), value=0.5 / (parent.depth + 2))


class NotAStrategy:
    """Anything else: refused as FOCUSED_STRATEGY."""
