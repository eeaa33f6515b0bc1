"""When to rescore the waiting links: the pacing of a frontier's rescoring.

A strategy that learns while it crawls (``learning``) can value a waiting link again
with what it learnt since the link was found; the frontier then re-orders its waiting
entries (:meth:`focused.frontier.memory.MemoryFrontier.rescore`). A rescore costs
O(waiting), so it is paced: every ``every`` learnt pages, or every ``waiting / budget``
learnt pages when that is longer (at most ``budget`` entries rescored per learnt page on
average, so a large frontier is rescored less often).

Pure module: no Scrapy import.
"""

from __future__ import annotations

__all__ = ["RescoreSchedule"]


class RescoreSchedule:
    """Counts learnt pages and says when a rescore is due.

    ``every``: learnt pages between two rescores (0: never rescore). ``budget``: at most
    this many waiting entries rescored per learnt page on average (0: no such bound).
    Call :meth:`learnt` once per page the strategy learnt from, with the number of
    waiting entries; when it returns True, rescore and report the number of entries
    whose priority changed with :meth:`rescored`.
    """

    __slots__ = ("budget", "every", "learnt_pages", "moved", "rescorings", "_at_last")

    def __init__(self, every: int = 0, budget: int = 0) -> None:
        self.every = max(0, int(every))
        self.budget = max(0, int(budget))
        self.learnt_pages = 0  # pages learnt from, in all
        self.rescorings = 0  # rescores done
        self.moved = 0  # entries whose priority a rescore changed, in all
        self._at_last = 0  # learnt_pages at the last rescore

    @property
    def enabled(self) -> bool:
        return self.every > 0

    def interval(self, waiting: int) -> int:
        """Learnt pages between two rescores with ``waiting`` entries waiting."""
        interval = self.every
        if self.budget:
            interval = max(interval, -(-max(0, waiting) // self.budget))
        return interval

    def learnt(self, waiting: int, can_rescore: bool = True) -> bool:
        """One more learnt page; True when a rescore of the ``waiting`` entries is due
        now (never when off, or when the frontier cannot rescore: ``can_rescore``)."""
        self.learnt_pages += 1
        if not self.enabled or not can_rescore:
            return False
        if self.learnt_pages - self._at_last < self.interval(waiting):
            return False
        self._at_last = self.learnt_pages
        return True

    def rescored(self, moved: int) -> None:
        """A rescore was done and changed the priority of ``moved`` entries."""
        self.rescorings += 1
        self.moved += int(moved)
