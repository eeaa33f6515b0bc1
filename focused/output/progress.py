"""The progress line of a long crawl: when to print it and what it says.

Every ``every_pages`` pages or ``every_seconds`` seconds, whichever comes first, one line
with pages per second, the harvest rate (relevant pages / pages) over the whole crawl
*and over the pages since the previous line* (a crawl drifting off-topic shows there
first: the overall rate moves slowly), recall when targets are known, the four queues of
Liu, Xia & Xu (2010) and the annealing temperature (He, Cheng & Cai 2009) when the
strategy anneals.

Pure module: no Scrapy import; the clock is passed in.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

__all__ = ["Progress", "Snapshot"]

#: the window's harvest rate below this share of the overall one is flagged
DRIFT_SHARE = 0.5
#: ... once the window has at least this many pages
DRIFT_MIN_PAGES = 20


@dataclass(frozen=True, slots=True)
class Snapshot:
    """What the crawl's stats say now."""

    pages: int
    relevant: int
    recall: float | None = None
    targets_found: int = 0
    targets: int = 0
    queues: Mapping[str, int | None] | None = None
    temperature: float | None = None


class Progress:
    """Decides when a progress line is due and writes it.

    ``every_pages`` / ``every_seconds``: 0 turns that trigger off. :meth:`line` starts a
    new window (the next line's "last N pages" are the pages after this one).
    """

    def __init__(self, every_pages: int, every_seconds: float, now: float) -> None:
        self.every_pages = max(0, int(every_pages))
        self.every_seconds = max(0.0, float(every_seconds))
        self.started = now
        self.last_time = now
        self.last_pages = 0
        self.last_relevant = 0

    @property
    def enabled(self) -> bool:
        return bool(self.every_pages or self.every_seconds)

    def due(self, pages: int, now: float) -> bool:
        if self.every_pages and pages - self.last_pages >= self.every_pages:
            return True
        return bool(self.every_seconds) and now - self.last_time >= self.every_seconds

    def line(self, snap: Snapshot, now: float) -> str:
        """The progress line for ``snap``; starts the next window."""
        window = snap.pages - self.last_pages
        seconds = max(now - self.last_time, 1e-9)
        window_relevant = snap.relevant - self.last_relevant
        overall = snap.relevant / snap.pages if snap.pages else 0.0
        parts = [
            f"focused: progress {snap.pages} pages, {window / seconds:.1f} pages/s "
            f"({snap.pages / max(now - self.started, 1e-9):.1f} overall)"
        ]
        harvest = f"harvest rate {overall:.3f}"
        if window > 0:
            recent = window_relevant / window
            harvest += f", last {window} pages {recent:.3f}"
            if window >= DRIFT_MIN_PAGES and recent < DRIFT_SHARE * overall:
                harvest += " (falling: drifting off-topic?)"
        else:
            harvest += ", no page in the last window"
        parts.append(harvest)
        if snap.recall is not None:
            parts.append(f"recall {snap.recall:.3f} ({snap.targets_found}/{snap.targets} targets)")
        if snap.queues:
            parts.append(
                "queues "
                + " ".join(
                    f"{name.replace('_', ' ')} {'-' if n is None else n}"
                    for name, n in snap.queues.items()
                )
            )
        if snap.temperature is not None:
            parts.append(f"temperature {snap.temperature:.4g}")
        self.last_time, self.last_pages, self.last_relevant = now, snap.pages, snap.relevant
        return "; ".join(parts)
