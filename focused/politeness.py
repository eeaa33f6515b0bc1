"""What a host asks about pacing, applied to its Scrapy download slot.

- ``Crawl-delay`` in robots.txt (:meth:`SlotDelays.set_floor`, called by
  :class:`focused.robots.FocusedRobotsTxtMiddleware`): the host's slot delay is at least
  the crawl delay (capped by ``FOCUSED_MAX_CRAWL_DELAY``), with no random jitter, for the
  rest of the crawl: also when AutoThrottle lowers it after a response and when Scrapy
  re-creates an idle slot (``per_slot_settings``, what ``DOWNLOAD_SLOTS`` sets).
- ``Retry-After`` on a 429 or 503 answer (:meth:`SlotDelays.pause`): the host's next
  download starts that many seconds after the answer (capped by
  ``FOCUSED_MAX_RETRY_AFTER``), then its delay goes back to what it was. Scrapy's
  ``RetryMiddleware`` retried a 429 at once otherwise.
- A host that keeps asking to wait: once the ``Retry-After`` pauses it asked for since
  its last other answer add up to more than ``FOCUSED_MAX_RETRY_AFTER_TOTAL`` seconds,
  the host is given up (:meth:`SlotDelays.given_up`): one WARNING line, and
  :class:`focused.robustness.RobustnessMiddleware` drops its further requests (its
  retries too). ``FOCUSED_MAX_RETRY_AFTER`` caps each pause, not their number: a host
  answering 429 with ``Retry-After`` at the cap to every request held each of its URLs
  for ``1 + RETRY_TIMES`` pauses, one after the other, for as long as it had URLs.

Scrapy's downloader sends a slot's requests one per ``slot.delay`` when the delay is set
(``scrapy/core/downloader/__init__.py``); the delays here only ever raise it.

Stats: ``focused/politeness/crawl_delay`` (hosts with a crawl delay),
``focused/politeness/retry_after`` (pauses), ``focused/politeness/given_up`` (hosts given
up), ``focused/skipped/retry_after`` (their requests dropped).
"""

from __future__ import annotations

import logging
from time import monotonic
from typing import TYPE_CHECKING, Any
from weakref import WeakKeyDictionary

from scrapy import signals
from scrapy.utils.asyncio import call_later

from focused.defaults import get
from focused.web.sanitize import retry_after_seconds

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.core.downloader import Downloader, Slot
    from scrapy.crawler import Crawler
    from scrapy.http import Response

logger = logging.getLogger(__name__)

_BY_CRAWLER: WeakKeyDictionary[Crawler, SlotDelays] = WeakKeyDictionary()


class SlotDelays:
    """The crawl delays and Retry-After pauses of one crawler's download slots."""

    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        self.max_crawl_delay = float(get(crawler.settings, "FOCUSED_MAX_CRAWL_DELAY"))
        self.max_retry_after = float(get(crawler.settings, "FOCUSED_MAX_RETRY_AFTER"))
        #: the Retry-After seconds a host may ask for in a row (0: no limit)
        self.max_retry_after_total = float(get(crawler.settings, "FOCUSED_MAX_RETRY_AFTER_TOTAL"))
        #: key -> seconds of pauses asked since the host's last other answer
        self.asked: dict[str, float] = {}
        self.gave_up: set[str] = set()  # keys of the hosts given up
        self.floors: dict[str, float] = {}
        self.pauses: dict[str, tuple[float, float]] = {}  # key -> (until, seconds)
        self.saved: dict[str, tuple[float, float]] = {}  # key -> (delay, jitter) before
        crawler.signals.connect(self.response_downloaded, signal=signals.response_downloaded)

    @classmethod
    def of(cls, crawler: Crawler) -> SlotDelays:
        """The crawler's one :class:`SlotDelays`."""
        delays = _BY_CRAWLER.get(crawler)
        if delays is None:
            delays = _BY_CRAWLER[crawler] = cls(crawler)
        return delays

    def _downloader(self) -> Downloader | None:
        engine = getattr(self.crawler, "engine", None)
        return getattr(engine, "downloader", None)

    def slot_key(self, request: Request) -> str | None:
        downloader = self._downloader()
        return None if downloader is None else downloader.get_slot_key(request)

    def _slot(self, key: str) -> Slot | None:
        downloader = self._downloader()
        return None if downloader is None else downloader.slots.get(key)

    # --- Crawl-delay ---------------------------------------------------------------
    def set_floor(self, request: Request, seconds: float) -> float | None:
        """The slot of ``request`` waits at least ``seconds`` (capped) between downloads;
        returns the delay set, None when there is none."""
        downloader = self._downloader()
        if downloader is None or seconds <= 0:
            return None
        seconds = min(float(seconds), self.max_crawl_delay)
        key = downloader.get_slot_key(request)
        self.floors[key] = seconds
        per_slot = dict(downloader.per_slot_settings.get(key, {}))
        base = float(per_slot.get("delay", getattr(downloader, "_delay", 0.0)))
        per_slot["delay"] = max(base, seconds)
        per_slot["jitter"] = 0.0  # a random -50 % would break the host's lower bound
        downloader.per_slot_settings[key] = per_slot
        slot = downloader.slots.get(key)
        if slot is not None:
            slot.delay = max(slot.delay, seconds)
            slot.jitter = 0.0
        if key in self.saved:  # a pause is on: restore to the floor at least
            delay, _ = self.saved[key]
            self.saved[key] = (max(delay, seconds), 0.0)
        self.crawler.stats.inc_value("focused/politeness/crawl_delay")
        logger.info("focused: %s asks for Crawl-delay %g s", key, seconds)
        return seconds

    # --- Retry-After ---------------------------------------------------------------
    def pause(self, request: Request, seconds: float) -> float | None:
        """The slot of ``request`` sends nothing for ``seconds`` (capped) from now."""
        key = self.slot_key(request)
        slot = None if key is None else self._slot(key)
        if key is None or slot is None or seconds <= 0:
            return None
        seconds = min(float(seconds), self.max_retry_after)
        now = monotonic()
        until = now + seconds
        if key not in self.saved:
            self.saved[key] = (slot.delay, slot.jitter)
        if key in self.pauses and self.pauses[key][0] >= until:
            return seconds
        self.pauses[key] = (until, seconds)
        slot.delay = max(slot.delay, seconds)
        slot.jitter = 0.0
        slot.lastseen = now  # the next download waits `seconds` from this answer
        call_later(seconds, self._unpause, key)
        self.crawler.stats.inc_value("focused/politeness/retry_after")
        logger.info("focused: %s asks to retry after %g s; its downloads wait", key, seconds)
        return seconds

    def _unpause(self, key: str) -> None:
        until, _ = self.pauses.get(key, (0.0, 0.0))
        if monotonic() < until - 1e-3:
            return  # a later pause is on
        self.pauses.pop(key, None)
        delay, jitter = self.saved.pop(key, (0.0, 0.0))
        slot = self._slot(key)
        if slot is not None:
            slot.delay = max(delay, self.floors.get(key, 0.0))
            slot.jitter = 0.0 if key in self.floors else jitter
            self._wake(slot)

    def _wake(self, slot: Slot) -> None:
        """The slot's queue is looked at again with its restored delay. Scrapy's
        downloader plans its next look (``slot.latercall``) from the delay of the moment:
        the download the end of a pause lets through planned it one whole pause later,
        and the lower delay did not bring it forward (the host waited the pause twice)."""
        downloader = self._downloader()
        latercall = getattr(slot, "latercall", None)
        process_queue = getattr(downloader, "_process_queue", None)
        if latercall is None or process_queue is None:
            return
        latercall.cancel()
        slot.latercall = None
        process_queue(slot)

    # --- a host that keeps asking to wait -------------------------------------------
    def _ask(self, request: Request, seconds: float, status: int) -> None:
        """A ``Retry-After`` of ``seconds``: the host pauses, or is given up once its
        pauses in a row would add up to more than ``FOCUSED_MAX_RETRY_AFTER_TOTAL``
        (counted as the time they extend the pause by, so that several answers in
        flight together count once)."""
        key = self.slot_key(request)
        if key is None:
            return
        if key in self.gave_up:
            return
        # only what this answer adds to the pause on: answers that were in flight
        # together and fall inside one pause count as that one pause
        until = self.pauses.get(key, (0.0, 0.0))[0]
        wait = min(float(seconds), self.max_retry_after)
        added = max(0.0, wait - max(0.0, until - monotonic()))
        asked = self.asked.get(key, 0.0) + added
        self.asked[key] = asked
        budget = self.max_retry_after_total
        if budget and asked > budget:
            self.gave_up.add(key)
            self.crawler.stats.inc_value("focused/politeness/given_up")
            logger.warning(
                "focused: %s keeps answering %d with Retry-After: %g s of pauses in a row,"
                " over FOCUSED_MAX_RETRY_AFTER_TOTAL=%g; its other requests are dropped",
                key,
                status,
                asked,
                budget,
            )
            return
        self.pause(request, seconds)

    def given_up(self, request: Request) -> bool:
        """Whether the host of ``request`` was given up for asking to wait too long."""
        if not self.gave_up:
            return False
        key = self.slot_key(request)
        return key is not None and key in self.gave_up

    # --- after every response: AutoThrottle may have lowered the delay --------------
    def response_downloaded(self, response: Response, request: Request, **_: Any) -> None:
        if response.status in (429, 503):
            seconds = retry_after_seconds(response.headers.get(b"Retry-After"))
            if seconds is not None and seconds > 0:
                self._ask(request, seconds, response.status)
                return
        if not self.floors and not self.pauses and not self.asked:
            return
        key = self.slot_key(request)
        if key is None:
            return
        self.asked.pop(key, None)  # an answer: the host does not keep asking to wait
        slot = self._slot(key)
        if slot is None:
            return
        floor = self.floors.get(key, 0.0)
        if key in self.pauses:
            floor = max(floor, self.pauses[key][1])
        slot.delay = max(slot.delay, floor)
