"""The project's downloader: a host's random delay is drawn once per download
(:mod:`focused.downloader`), and the host-aware pick reads that same draw."""

from __future__ import annotations

import asyncio
import random
import statistics

import pytest
from scrapy import Request
from scrapy.core.downloader import Slot
from scrapy.utils.test import get_crawler

from focused import settings as project
from focused.downloader import DrawnDelaySlot, FocusedDownloader
from focused.scheduler import HostGate


def _gaps(slot: Slot, n: int, looks: int) -> list[float]:
    """Gaps between download starts of a host that always has a request waiting, under
    Scrapy's rule (``Downloader._process_queue``): at each look the slot asks
    ``download_delay()`` and sends when the time since its last start exceeds it; else
    it looks again when that delay has passed. ``looks`` other looks per gap (new
    requests, finished downloads) happen at random moments."""
    gaps = []
    now = 0.0
    for _ in range(n):
        slot.lastseen = now
        moments = sorted(random.uniform(0, 2 * slot.delay) for _ in range(looks))
        t = 0.0
        while True:
            delay = slot.download_delay()
            if t >= delay:
                break
            later = [m for m in moments if t < m]
            t = min([delay, *later])
            moments = [m for m in moments if m > t]
        gaps.append(t)
        now += t
    return gaps


def test_one_draw_per_gap_between_downloads() -> None:
    random.seed(7)
    slot = DrawnDelaySlot(1, 1.0, 0.5)
    first = slot.download_delay()
    assert 0.5 <= first <= 1.5
    assert slot.download_delay() == slot.next_delay() == first  # asked again: same draw
    slot.lastseen = 10.0  # a download started: the next gap gets its own draw
    draws = set()
    for i in range(20):
        slot.lastseen = 10.0 + i
        draws.add(slot.download_delay())
    assert len(draws) == 20 and all(0.5 <= d <= 1.5 for d in draws)


def test_a_delay_that_changes_within_the_gap_scales_the_same_draw() -> None:
    """AutoThrottle sets a slot's delay after every response: the gap moves with it,
    it is not drawn again (a new draw per change would lengthen the gaps again)."""
    random.seed(3)
    slot = DrawnDelaySlot(1, 1.0, 0.5)
    first = slot.download_delay()
    slot.delay = 4.0  # AutoThrottle or a Crawl-delay raised it
    assert slot.download_delay() == pytest.approx(4.0 * first)
    slot.jitter = 0.25
    assert slot.download_delay() == pytest.approx(4.0 * (1 + 0.25 * (first - 1) / 0.5))
    slot.jitter = 0.0  # a Crawl-delay is kept exactly
    assert slot.download_delay() == 4.0
    for _ in range(200):  # and every draw stays within the jitter's bounds
        slot.jitter, slot.lastseen = 0.5, slot.lastseen + 1
        assert 2.0 <= slot.download_delay() <= 6.0


def test_gaps_average_the_delay_where_scrapys_redraws_lengthen_them() -> None:
    random.seed(11)
    drawn = _gaps(DrawnDelaySlot(1, 1.0, 0.5), 3000, looks=3)
    redrawn = _gaps(Slot(1, 1.0, 0.5), 3000, looks=3)
    assert min(drawn) >= 0.5 and max(drawn) <= 1.5
    assert statistics.mean(drawn) == pytest.approx(1.0, abs=0.03)
    assert min(redrawn) >= 0.5
    assert statistics.mean(redrawn) > 1.08  # Scrapy's own slot: a draw per look


def test_the_project_downloader_makes_drawn_slots_and_the_gate_reads_their_draw() -> None:
    asyncio.run(_drawn_slots_and_the_gate())  # Scrapy's slot GC loop needs a running loop


async def _drawn_slots_and_the_gate() -> None:
    random.seed(5)
    assert project.DOWNLOADER == "focused.downloader.FocusedDownloader"
    crawler = get_crawler(settings_dict={"DOWNLOAD_DELAY": 2.0, "DOWNLOAD_DELAY_JITTER": 0.5})
    downloader = FocusedDownloader(crawler)
    key, slot = downloader._get_slot(Request("http://127.0.0.2/a"))
    assert isinstance(slot, DrawnDelaySlot) and key == "127.0.0.2"
    assert downloader._get_slot(Request("http://127.0.0.2/b"))[1] is slot
    assert (slot.delay, slot.jitter) == (2.0, 0.5)
    gate = HostGate(crawler)
    now = 100.0
    slot.lastseen = now
    wait = gate.wait(downloader, key, 0, now)
    assert wait == pytest.approx(slot.download_delay() - HostGate.LEAD)
    assert 1.0 - HostGate.LEAD <= wait <= 3.0
    # past the draw (less than the nominal delay when the draw is short): free now
    assert gate.wait(downloader, key, 0, now + slot.download_delay()) == 0.0
    downloader.close()


@pytest.mark.filterwarnings("ignore:The CONCURRENT_REQUESTS_PER_IP setting is deprecated")
def test_empty_picks_are_remembered_only_for_slots_per_host() -> None:
    asyncio.run(_gate_keys())


async def _gate_keys() -> None:
    """Slots per IP depend on Scrapy's DNS cache, which changes on its own: no memo."""
    for settings, expect_key in (({}, True), ({"CONCURRENT_REQUESTS_PER_IP": 2}, False)):
        crawler = get_crawler(settings_dict={"DOWNLOADER": project.DOWNLOADER, **settings})
        crawler.engine = crawler._create_engine()  # the real engine and its downloader
        assert isinstance(crawler.engine.downloader, FocusedDownloader)
        gate = HostGate(crawler)
        key = gate.key({"127.0.0.2"})
        assert (key == frozenset({"127.0.0.2"})) if expect_key else key is None
        crawler.engine.downloader.close()
