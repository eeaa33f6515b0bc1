"""Simulated-annealing selection of the next link (He, Cheng & Cai 2009).

Best-first always takes the best-valued link. He, Cheng & Cai (2009) remove that greediness with a
simulated-annealing rule: at each pick, the best entry of the frontier competes with a
candidate drawn uniformly from the top ``K``; the candidate is taken with the Metropolis
probability

    P(accept) = min(1, exp(-(v_best - v_cand) / T))

so a worse link (``v_cand < v_best``) gets a chance that shrinks with the value gap and
with the temperature ``T``. ``T`` cools after every pick, ``T <- max(T_min, alpha * T)``.
A candidate that is not worse (a value tie, or a value above the best's when priority and
value disagree) is a free move, as in standard annealing. With ``T == 0`` (``t0 = 0``)
no random number is drawn and the pick is plain best-first; as ``T -> 0`` a strictly
worse candidate is never taken.

The paper gives neither K, T0, alpha nor a seed: they are the settings
``FOCUSED_SA_K``, ``FOCUSED_SA_T0``, ``FOCUSED_SA_ALPHA``, ``FOCUSED_SA_T_MIN`` and
``FOCUSED_SEED``. A :class:`random.Random` seeded with ``FOCUSED_SEED`` makes a crawl
repeatable, and :meth:`Annealer.state` / :meth:`Annealer.load_state` carry T, the
generator and the counters across a pause/resume.

Pure module: no Scrapy import.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from typing import Any

__all__ = ["Annealer"]


class Annealer:
    """Metropolis choice among the top ``k`` values, with geometric cooling.

    The selection rule of He, Cheng & Cai (2009); see the module docstring.
    """

    def __init__(
        self,
        t0: float = 0.05,
        alpha: float = 0.995,
        t_min: float = 1e-4,
        k: int = 8,
        seed: int = 42,
    ) -> None:
        if t0 < 0 or t_min < 0:
            raise ValueError(f"temperatures must be >= 0, got t0={t0}, t_min={t_min}")
        if not 0 < alpha <= 1:
            raise ValueError(f"alpha must be in (0, 1], got {alpha}")
        if k < 1:
            raise ValueError(f"k must be >= 1, got {k}")
        self.t0 = float(t0)
        self.alpha = float(alpha)
        self.t_min = float(t_min)
        self.k = int(k)
        self.seed = seed
        self.rng = random.Random(seed)
        #: current temperature; 0 with ``t0 == 0`` (plain best-first)
        self.temperature = float(t0)
        #: number of picks made (each cools T once)
        self.picks = 0
        #: picks where a strictly worse candidate was taken
        self.accepted_worse = 0

    def accept(self, delta: float) -> bool:
        """Metropolis test for a candidate ``delta = v_best - v_cand`` below the best.

        Does not cool. ``delta <= 0`` is always accepted; at ``T == 0`` a positive
        ``delta`` is never accepted (and no random number is drawn).
        """
        if delta <= 0:
            return True
        t = self.temperature
        if t <= 0:
            return False
        return self.rng.random() < math.exp(-delta / t)

    def choose(self, values: Sequence[float]) -> int:
        """Index of the entry to take among ``values`` (best first, at most ``k`` used).

        ``values[0]`` is the best entry by the frontier's order. A candidate index is
        drawn uniformly from ``range(min(k, len(values)))`` and replaces the best when
        :meth:`accept` says so. Cools T once per call.
        """
        n = min(self.k, len(values))
        chosen = 0
        if n > 1 and self.temperature > 0:
            j = self.rng.randrange(n)
            if j:
                delta = values[0] - values[j]
                if self.accept(delta):
                    chosen = j
                    if delta > 0:
                        self.accepted_worse += 1
        self.cool()
        return chosen

    def cool(self) -> None:
        """One cooling step ``T <- max(t_min, alpha * T)`` (T stays 0 when ``t0 == 0``)."""
        self.picks += 1
        if self.temperature > 0:
            self.temperature = max(self.t_min, self.alpha * self.temperature)

    # --- pause/resume ---------------------------------------------------------------
    def state(self) -> dict[str, Any]:
        """JSON-serialisable state: temperature, counters and the generator's state."""
        version, internal, gauss = self.rng.getstate()
        return {
            "temperature": self.temperature,
            "picks": self.picks,
            "accepted_worse": self.accepted_worse,
            "rng": [version, list(internal), gauss],
        }

    def load_state(self, state: dict[str, Any]) -> None:
        """Restore what :meth:`state` returned (the parameters stay this object's)."""
        self.temperature = float(state["temperature"])
        self.picks = int(state["picks"])
        self.accepted_worse = int(state.get("accepted_worse", 0))
        version, internal, gauss = state["rng"]
        self.rng.setstate((version, tuple(internal), gauss))
