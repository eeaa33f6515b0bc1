"""Where a crawl's requests spend their time in Scrapy's downloader, and how busy its
reactor is: a measuring extension for the politeness benchmark (docs/quality.md,
"Politeness").

Enable it on any crawl, e.g. a realistic quality run::

    python -m bench.quality ... --set 'EXTENSIONS={"scrapy.extensions.spiderstate.SpiderState":
        null, "focused.stop.SpiderState": 0, "focused.extensions.CrawlOutputExtension": 500,
        "focused.collector.GarbageCollectorTuning": 0, "bench.slotprobe.SlotProbe": 900}'

and read ``slotprobe.json`` in each crawl's output folder with
``python -m bench.slotprobe out/.../runs/*/*/*/slotprobe.json``.

Every 50 ms it samples ``len(downloader.active)``, the requests queued in the download
slots, transferring, the slots with a ``latercall`` (waiting for their delay), the
scraper's responses and the process CPU time; the lag of that 50 ms timer is the
reactor's. Per request it records when the engine handed it to the downloader, when it
reached its slot (after the downloader middlewares: robots.txt), when its slot started
the download, when the response came, and when it left the downloader; and it times the
scheduler's ``next_request``. It patches Scrapy's ``Downloader`` and the focused
scheduler when imported: a benchmark tool, not for production crawls.
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from pathlib import Path
from time import monotonic
from typing import Any
from urllib.parse import urlsplit

from scrapy import Request, signals
from scrapy.core.downloader import Downloader
from scrapy.utils.asyncio import call_later

import focused.scheduler as _scheduler

TICK = 0.05
#: id(request) -> [request, handed, reached slot, download started, downloaded, left]
_TIMES: dict[int, list[Any]] = {}
_NEXT = {"calls": 0, "none": 0, "secs": 0.0}

_fetch = Downloader.fetch
_download = Downloader._download
_next_request = _scheduler.FocusedScheduler.next_request


def _timed_fetch(self: Downloader, request: Request, spider: Any = None) -> Any:
    _TIMES[id(request)] = [request, monotonic(), 0.0, 0.0, 0.0, 0.0]  # keeps the id unique
    d = _fetch(self, request)

    def left(result: Any) -> Any:
        _TIMES[id(request)][5] = monotonic()
        return result

    d.addBoth(left)
    return d


async def _timed_download(self: Downloader, slot: Any, request: Request) -> Any:
    times = _TIMES.get(id(request))
    if times is not None:
        times[3] = monotonic()
    return await _download(self, slot, request)


def _timed_next_request(self: Any) -> Any:
    started = time.perf_counter()
    request = _next_request(self)
    _NEXT["secs"] += time.perf_counter() - started
    _NEXT["calls"] += 1
    _NEXT["none"] += request is None
    return request


Downloader.fetch = _timed_fetch  # type: ignore[method-assign]
Downloader._download = _timed_download  # type: ignore[method-assign]
_scheduler.FocusedScheduler.next_request = _timed_next_request  # type: ignore[method-assign]


def _schedstat() -> list[int]:
    """(on-CPU ns, runnable-but-waiting ns, time slices) of the main thread."""
    try:
        return [int(x) for x in Path("/proc/self/schedstat").read_text().split()]
    except OSError:
        return [0, 0, 0]


class SlotProbe:
    """The extension: samples while the spider runs, writes ``slotprobe.json``."""

    def __init__(self, crawler: Any) -> None:
        self.crawler = crawler
        self.samples: list[tuple[float, ...]] = []
        self.lags: list[float] = []
        crawler.signals.connect(self.opened, signals.spider_opened)
        crawler.signals.connect(self.closed, signals.spider_closed)
        crawler.signals.connect(self.reached, signals.request_reached_downloader)
        crawler.signals.connect(self.downloaded, signals.response_downloaded)

    @classmethod
    def from_crawler(cls, crawler: Any) -> SlotProbe:
        return cls(crawler)

    def reached(self, request: Request, **_: Any) -> None:
        times = _TIMES.get(id(request))
        if times is not None:
            times[2] = monotonic()

    def downloaded(self, response: Any, request: Request, **_: Any) -> None:
        times = _TIMES.get(id(request))
        if times is not None:
            times[4] = monotonic()

    def opened(self, spider: Any) -> None:
        self.wall0, self.cpu0, self.sched0 = monotonic(), time.process_time(), _schedstat()
        self.expect = monotonic() + TICK
        self.timer = call_later(TICK, self.tick)

    def tick(self) -> None:
        now = monotonic()
        self.lags.append(now - self.expect)
        engine = self.crawler.engine
        slots = list(engine.downloader.slots.values())
        scraper = engine.scraper.slot
        self.samples.append(
            (
                now - self.wall0,
                len(engine.downloader.active),
                sum(len(s.queue) for s in slots),
                sum(len(s.transferring) for s in slots),
                sum(1 for s in slots if s.latercall),
                time.process_time() - self.cpu0,
                len(scraper.active) if scraper else 0,
            )
        )
        self.expect = now + TICK
        self.timer = call_later(TICK, self.tick)

    def closed(self, spider: Any, reason: str) -> None:
        self.timer.cancel()
        sched = _schedstat()
        out = Path(self.crawler.settings.get("FOCUSED_OUTPUT_DIR") or ".") / "slotprobe.json"
        stats = self.crawler.stats.get_stats()
        doc = {
            "wall": monotonic() - self.wall0,
            "cpu": time.process_time() - self.cpu0,
            "on_cpu": (sched[0] - self.sched0[0]) / 1e9,
            "runnable_waiting": (sched[1] - self.sched0[1]) / 1e9,
            "samples": self.samples,
            "lags": self.lags,
            "requests": [[t[0].url, *t[1:]] for t in _TIMES.values() if t[5]],
            "next_request": _NEXT,
            "stats": {k: v for k, v in stats.items() if isinstance(v, int | float)},
        }
        out.write_text(json.dumps(doc), encoding="utf-8")


def _ms(values: list[float]) -> str:
    mean, median = statistics.mean(values), statistics.median(values)
    return f"mean {1000 * mean:.0f} ms, median {1000 * median:.0f} ms"


def summary(doc: dict[str, Any]) -> list[str]:
    """A few lines on one crawl's ``slotprobe.json``."""
    s, reqs, stats = doc["samples"], doc["requests"], doc["stats"]
    cpu, wall = doc["cpu"], doc["wall"]
    responses = max(1, int(stats.get("response_received_count", 1)))
    lines = [
        f"wall {wall:.1f} s, CPU {cpu:.1f} s ({cpu / wall:.2f} of the wall time; "
        f"waiting for a core {doc['runnable_waiting']:.1f} s), "
        f"{1000 * cpu / responses:.0f} ms CPU per response"
    ]
    a, b = s[len(s) // 10], s[9 * len(s) // 10]
    lines.append(f"middle 80 % of the crawl: CPU/wall {(b[5] - a[5]) / (b[0] - a[0]):.2f}")
    names = ("in the downloader", "queued in slots", "transferring", "slots waiting a delay")
    for i, name in enumerate(names, start=1):
        lines.append(f"mean {name}: {statistics.mean(x[i] for x in s):.2f}")
    full = sum(x[1] >= 16 for x in s) / len(s)
    lines.append(f"share of samples with 16 or more in the downloader: {full:.2f}")
    lags = sorted(doc["lags"])
    median, p90 = statistics.median(lags), lags[9 * len(lags) // 10]
    lines.append(f"50 ms timer late by: median {1000 * median:.0f} ms, p90 {1000 * p90:.0f} ms")
    ok = [t for t in reqs if t[2] and t[3] and t[4]]
    if ok:
        lines.append(f"to the slot (middlewares, robots.txt): {_ms([t[2] - t[1] for t in ok])}")
        lines.append(f"queued in the slot: {_ms([t[3] - t[2] for t in ok])}")
        lines.append(f"download (client side): {_ms([t[4] - t[3] for t in ok])}")
        by_host: dict[str, list[float]] = {}
        for t in ok:
            by_host.setdefault(urlsplit(t[0]).hostname or "", []).append(t[3])
        gaps = []
        for starts in by_host.values():
            starts.sort()
            gaps += [y - x for x, y in zip(starts, starts[1:], strict=False)]
        if gaps:
            median = statistics.median(gaps)
            lines.append(f"per-host gap between download starts: median {median:.2f} s")
    n = doc["next_request"]
    each = 1000 * n["secs"] / max(1, n["calls"])
    lines.append(
        f"next_request: {n['calls']} calls ({n['none']} None), {each:.2f} ms each, "
        f"{n['secs'] / max(cpu, 1e-9):.3f} of the CPU"
    )
    return lines


def main(argv: list[str]) -> int:
    for name in argv:
        print(f"== {name}")
        for line in summary(json.loads(Path(name).read_text(encoding="utf-8"))):
            print(f"  {line}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
