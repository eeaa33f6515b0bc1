"""Host-aware picking: the best waiting URL among the hosts that may be fetched now.

A frontier kept in one global priority order hands out the best URL even when its host
cannot take another request yet (its download slot is full, or its politeness delay has
not run out): the request then waits in that host's slot while other hosts sit idle
(head-of-line blocking). The pick here walks the waiting entries in the frontier's order
and takes the first one whose host is available, leaving every entry it skips where it
was; the annealing pick (simulated-annealing selection with tunneling, He, Cheng & Cai
2009) draws among the top ``K`` *available* entries instead of the top ``K``.

Work per pick is bounded: at most ``scan`` entries are looked at, and the availability
of a host is asked once per pick (:class:`HostMemo`). An available entry further down
than ``scan`` waits for a later pick.

Pure module: no Scrapy import. The frontiers call :func:`first_available`
(:meth:`focused.frontier.memory.MemoryFrontier.pop_available`); the Redis frontier does
the same walk in its Lua script (``focused/distributed/pick.lua``).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable
from typing import Any, TypeVar

from focused.ranking.annealing import Annealer

__all__ = ["DEFAULT_SCAN", "HostCheck", "HostMemo", "choose", "first_available", "wanted"]

#: at most this many waiting entries are looked at per pick (``FOCUSED_HOST_SCAN``)
DEFAULT_SCAN = 1024

#: ``(scheme://host of the entry's URL, the entry's extra) -> may it be fetched now``
HostCheck = Callable[[str, Any], bool]

T = TypeVar("T")


class HostMemo:
    """A :data:`HostCheck` asked at most once per host during one pick.

    Entries whose ``extra`` is not ``None`` may carry a download slot of their own (a
    request kept whole, a ``download_slot`` meta key), so they are asked each time.
    """

    __slots__ = ("asked", "check", "known")

    def __init__(self, check: HostCheck) -> None:
        self.check = check
        self.known: dict[Hashable, bool] = {}
        self.asked = 0

    def __call__(self, key: Hashable, host: Callable[[], str], extra: Any = None) -> bool:
        """Whether the entry of host ``key`` (``host()`` gives its ``scheme://host``)
        may be fetched now."""
        if extra is None:
            got = self.known.get(key)
            if got is not None:
                return got
        self.asked += 1
        ok = bool(self.check(host(), extra))
        if extra is None:
            self.known[key] = ok
        return ok


def wanted(annealer: Annealer | None) -> int:
    """How many available entries a pick needs: the annealer's ``K`` when it anneals
    (``T > 0`` and ``K > 1``), else one (best-first)."""
    if annealer is None or annealer.temperature <= 0 or annealer.k <= 1:
        return 1
    return annealer.k


def first_available(
    entries: Iterable[T], available: Callable[[T], bool], want: int, scan: int = DEFAULT_SCAN
) -> list[T]:
    """The first ``want`` of ``entries`` (given best first) that are ``available``,
    looking at no more than ``scan`` of them; fewer (or none) when the scan ends first."""
    out: list[T] = []
    if want <= 0:
        return out
    for n, item in enumerate(entries):
        if n >= scan:
            break
        if available(item):
            out.append(item)
            if len(out) >= want:
                break
    return out


def choose(values: list[float], annealer: Annealer | None) -> int:
    """Index of the candidate to take among the available ones (``values`` best first):
    the best one, or the annealer's Metropolis choice among them (which cools T once, as
    :meth:`~focused.frontier.memory.MemoryFrontier.pop_annealed` does)."""
    if annealer is None:
        return 0
    if annealer.temperature <= 0 or annealer.k <= 1:
        annealer.cool()
        return 0
    return annealer.choose(values)
