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
and keeps it until the next download starts, or until its delay or jitter changes (a
Crawl-delay, a Retry-After pause or AutoThrottle). Each gap is then a random value between
``(1 - jitter) × delay`` and ``(1 + jitter) × delay``, as Scrapy documents
``DOWNLOAD_DELAY_JITTER``, averaging one delay; and the gate reads the same draw as the
downloader (:meth:`DrawnDelaySlot.next_delay`), so it hands a host its next request when
the host can start it.

Chosen by ``DOWNLOADER = "focused.downloader.FocusedDownloader"`` (the project's
settings). With Scrapy's own downloader the crawl works the same, with Scrapy's redraws.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from scrapy.core.downloader import Downloader, Slot

if TYPE_CHECKING:
    from scrapy import Request, Spider


class DrawnDelaySlot(Slot):
    """A download slot whose random delay is drawn once per gap between downloads."""

    __slots__ = ("_drawn", "_drawn_for")

    def __init__(self, concurrency: int, delay: float, jitter: float | None = None) -> None:
        super().__init__(concurrency, delay, jitter)
        self._drawn = 0.0
        self._drawn_for: tuple[float, float, float] | None = None

    @classmethod
    def like(cls, slot: Slot) -> DrawnDelaySlot:
        """A new slot with the concurrency, delay and jitter of ``slot`` (a fresh one)."""
        return cls(slot.concurrency, slot.delay, slot.jitter)

    def download_delay(self) -> float:
        """The delay before the next download: one draw per last download start."""
        if not self.jitter:
            return self.delay
        key = (self.lastseen, self.delay, self.jitter)
        if key != self._drawn_for:
            self._drawn_for = key
            self._drawn = super().download_delay()
        return self._drawn

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
