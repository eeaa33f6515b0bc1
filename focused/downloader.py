"""Scrapy's downloader, with a host's random delay drawn once per download.

Scrapy makes a slot wait a random ``(1 ± DOWNLOAD_DELAY_JITTER) × delay`` between two
downloads, but it draws that delay again each time the slot looks at its queue
(``scrapy/core/downloader/__init__.py``: at each new request, each finished download and
each wake-up). A request arriving when the first draw was long waits, and is then held to
a fresh draw: the wait is the first draw that the elapsed time exceeds, not one draw.
So with a busy host the gap between two downloads averages about 1.11-1.13 delays at
the default jitter of 0.5, not the one delay that the setting describes, and the
host-aware pick (:class:`focused.scheduler.HostGate`) cannot know when a slot will take
its next request.

:class:`DrawnDelaySlot` draws the delay once per gap (for the slot's last download start)
and keeps it until the next download starts; a delay or jitter that changes meanwhile (a
Crawl-delay, a Retry-After pause, AutoThrottle) scales the same draw. Each gap is then a
random value between ``(1 - jitter) × delay`` and ``(1 + jitter) × delay``, as Scrapy
documents ``DOWNLOAD_DELAY_JITTER``, averaging one delay; and the gate reads the same
draw as the downloader (:meth:`DrawnDelaySlot.next_delay`), so it hands a host its next
request when the host can start it.

Chosen by ``DOWNLOADER = "focused.downloader.FocusedDownloader"`` (the project's
settings). With Scrapy's own downloader the crawl works the same, with Scrapy's redraws.
"""

from __future__ import annotations

import random
from typing import TYPE_CHECKING

from scrapy.core.downloader import Downloader, Slot

if TYPE_CHECKING:
    from scrapy import Request, Spider


class DrawnDelaySlot(Slot):
    """A download slot whose random delay is drawn once per gap between downloads."""

    __slots__ = ("_drawn", "_drawn_for")

    def __init__(self, concurrency: int, delay: float, jitter: float | None = None) -> None:
        super().__init__(concurrency, delay, jitter)
        self._drawn = 0.0  # in [-1, 1]: the gap is delay * (1 + jitter * drawn)
        self._drawn_for: float | None = None  # the lastseen it was drawn for

    @classmethod
    def like(cls, slot: Slot) -> DrawnDelaySlot:
        """A new slot with the concurrency, delay and jitter of ``slot`` (a fresh one)."""
        return cls(slot.concurrency, slot.delay, slot.jitter)

    def download_delay(self) -> float:
        """The delay before the next download: one draw per last download start.

        What is drawn is where the gap falls in ``(1 ± jitter) × delay``, so a delay
        that changes within the gap (AutoThrottle after a response, a Crawl-delay) moves
        the gap with it instead of drawing it again.
        """
        if not self.jitter:
            return self.delay
        if self.lastseen != self._drawn_for:
            self._drawn_for = self.lastseen
            self._drawn = random.uniform(-1.0, 1.0)  # noqa: S311 - pacing, not security
        # as Scrapy's Slot.download_delay: a jitter above 1 is floored at no delay
        return max(0.0, self.delay * (1 + self.jitter * self._drawn))

    #: what the host-aware pick reads: the same draw as the downloader's next look
    next_delay = download_delay


class FocusedDownloader(Downloader):
    """Scrapy's downloader whose slots are :class:`DrawnDelaySlot`: a host's random delay
    (``DOWNLOAD_DELAY``, ``DOWNLOAD_DELAY_JITTER``, ``DOWNLOAD_SLOTS``, AutoThrottle's) is
    drawn once per download, so the gaps average the delay set and the scheduler's
    host-aware pick knows when each host can take a request. Everything else is Scrapy's.
    """

    def _get_slot(self, request: Request, spider: Spider | None = None) -> tuple[str, Slot]:
        key, slot = super()._get_slot(request)
        if type(slot) is Slot:  # just created by Scrapy: nothing is in it yet
            slot = self.slots[key] = DrawnDelaySlot.like(slot)
        return key, slot
