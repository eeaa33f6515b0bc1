"""Link-ordering strategies, chosen with ``FOCUSED_STRATEGY``.

``FOCUSED_STRATEGY`` is a name of :data:`STRATEGIES` or the dotted import path of a
:class:`~focused.strategies.base.Strategy` subclass (``mypackage.module.MyStrategy``);
:func:`strategy_class` resolves either. Importing this package loads no scikit-learn:
the ``learning`` strategy's module is imported only when it is chosen.
"""

from __future__ import annotations

import importlib
from typing import Any

from focused.strategies.annealing import AnnealingStrategy
from focused.strategies.base import Link, LinkScore, Parent, Strategy, StrategyParams
from focused.strategies.best_first import BestFirstStrategy
from focused.strategies.bfs import BreadthFirstStrategy
from focused.strategies.bsbs import BSBSStrategy
from focused.strategies.gao import GaoStrategy
from focused.strategies.genetic import GeneticStrategy

#: Registered strategies: name -> class, or the dotted path of a class whose module is
#: imported only when the strategy is chosen.
STRATEGIES: dict[str, type[Strategy] | str] = {
    "bfs": BreadthFirstStrategy,
    "best_first": BestFirstStrategy,
    "genetic": GeneticStrategy,
    "annealing": AnnealingStrategy,
    "bsbs": BSBSStrategy,
    "gao": GaoStrategy,
    # learnt online (focused.ranking.learning): numpy-heavy, loaded on demand
    "learning": "focused.strategies.learning.LearningStrategy",
}

__all__ = [
    "STRATEGIES",
    "Link",
    "LinkScore",
    "Parent",
    "Strategy",
    "StrategyParams",
    "UnknownStrategy",
    "build",
    "strategy_class",
]


class UnknownStrategy(ValueError):
    """A ``FOCUSED_STRATEGY`` that is neither registered nor a Strategy class's path."""


def strategy_class(name: str) -> type[Strategy]:
    """The class of the strategy ``name``: a key of :data:`STRATEGIES` or the dotted
    path of a :class:`Strategy` subclass; :class:`UnknownStrategy` (one line) else."""
    name = name.strip()
    found = STRATEGIES.get(name)
    if found is None and "." not in name:
        # BFS, Best-First: the name in another case or with a dash, as papers write it
        spelt = name.lower().replace("-", "_")
        say = f" (say {spelt!r})" if spelt in STRATEGIES else ""
        raise UnknownStrategy(
            f"unknown FOCUSED_STRATEGY {name!r}{say}; valid: {', '.join(sorted(STRATEGIES))}"
            " or the dotted path of a focused.strategies.base.Strategy subclass"
        )
    if found is None or isinstance(found, str):
        found = _load(found or name)
    return found


def _load(path: str) -> type[Strategy]:
    module_name, _, attr = path.rpartition(".")
    try:
        module = importlib.import_module(module_name)
    except (ImportError, ValueError) as exc:
        raise UnknownStrategy(
            f"FOCUSED_STRATEGY {path!r}: cannot import {module_name!r} ({exc})"
        ) from None
    cls: Any = getattr(module, attr, None)
    if cls is None:
        raise UnknownStrategy(f"FOCUSED_STRATEGY {path!r}: {module_name} has no {attr!r}")
    if not (isinstance(cls, type) and issubclass(cls, Strategy)):
        raise UnknownStrategy(
            f"FOCUSED_STRATEGY {path!r} is not a focused.strategies.base.Strategy subclass"
        )
    return cls


def build(name: str, **params: Any) -> Strategy:
    """The strategy ``name`` built from :class:`StrategyParams` ``params`` (a shortcut
    for tests and scripts; a crawl goes through :func:`focused.config.strategy`)."""
    return strategy_class(name).from_params(StrategyParams(**params))
