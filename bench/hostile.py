"""Hostile-page benchmark (``make bench-hostile``): how long one page holds the reactor.

Crawls the hostile sandbox (``python -m focused.web.sandbox --mode hostile``, served by
its own process so that its threads do not compete with the crawl for the GIL) with
``python -m scrapy crawl focused``, once with the default caps (``FOCUSED_MAX_TEXT_CHARS``,
``FOCUSED_MAX_LINKS_PER_PAGE``) and, with ``--uncapped``, once with both set to 0 and
once with tighter text caps (:data:`VARIANTS`). The
crawl process runs the :class:`ReactorHold` extension (enabled only here, through
``-s EXTENSIONS=...``): a Twisted ``LoopingCall`` every 50 ms that records the largest
gaps between its calls (the time something held the reactor) and the responses received
just before each, and the peak RSS of the process (``ru_maxrss``). Writes
``out/bench/hostile.json``.

Usage: ``python -m bench.hostile --help``. Run it under ``flock /tmp/bench.lock``.
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from bench.command import crawl_command
from bench.process import PROJECT, URLServer

INTERVAL = 0.05
KEEP = 10  # gaps reported
#: the measured crawl: short time-outs, no retries, a depth limit for the endless spaces
CRAWL_SETTINGS: dict[str, object] = {
    "FOCUSED_WEB": "real",
    "DOWNLOAD_TIMEOUT": 2,
    "RETRY_TIMES": 0,
    "DEPTH_LIMIT": 6,
    "AUTOTHROTTLE_ENABLED": False,
    "LOG_LEVEL": "INFO",
    "FOCUSED_REPORT": False,
    "CLOSESPIDER_TIMEOUT": 240,
}


class ReactorHold:
    """Scrapy extension: the longest gaps between the calls of a 50 ms ``LoopingCall``,
    each with the URLs of the responses received since the call before, and the peak
    RSS; written as JSON to the ``BENCH_HOSTILE_OUT`` setting's path when the spider
    closes."""

    def __init__(self, path: str) -> None:
        self.path = Path(path)
        self.gaps: list[tuple[float, list[str]]] = []
        self.received: list[str] = []
        self.last_url = ""
        self.ticks = 0
        self.loop: Any = None
        self.last = 0.0
        self.started = 0.0

    @classmethod
    def from_crawler(cls, crawler: Any) -> ReactorHold:
        from scrapy import signals

        ext = cls(crawler.settings.get("BENCH_HOSTILE_OUT", "reactor-hold.json"))
        crawler.signals.connect(ext.opened, signal=signals.spider_opened)
        crawler.signals.connect(ext.closed, signal=signals.spider_closed)
        crawler.signals.connect(ext.response, signal=signals.response_received)
        return ext

    def opened(self, spider: Any) -> None:
        from twisted.internet import task

        self.started = self.last = time.perf_counter()
        self.loop = task.LoopingCall(self.tick)
        self.loop.start(INTERVAL, now=False)

    def response(self, response: Any, request: Any, spider: Any) -> None:
        self.received.append(response.url)
        self.last_url = response.url

    def tick(self) -> None:
        now = time.perf_counter()
        gap = now - self.last - INTERVAL
        self.last = now
        self.ticks += 1
        suspects = self.received[-5:] or [self.last_url]
        self.received = []
        if len(self.gaps) < KEEP or gap > self.gaps[-1][0]:
            self.gaps.append((gap, suspects))
            self.gaps.sort(key=lambda g: -g[0])
            del self.gaps[KEEP:]

    def closed(self, spider: Any) -> None:
        if self.loop is not None and self.loop.running:
            self.loop.stop()
        stats = spider.crawler.stats.get_stats()
        result = {
            "max_hold_s": round(self.gaps[0][0], 3) if self.gaps else 0.0,
            "holds": [{"s": round(g, 3), "responses": urls} for g, urls in self.gaps],
            "ticks": self.ticks,
            "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
            "crawl_s": round(time.perf_counter() - self.started, 1),
            "pages": stats.get("item_scraped_count", 0),
            "stats": {
                k: v
                for k, v in stats.items()
                if k.startswith(("focused/pages/", "focused/links/capped", "focused/feeds/"))
            },
        }
        self.path.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")


#: the crawls: the defaults, both caps off, and tighter text caps (scored and indexed)
VARIANTS: dict[str, dict[str, object]] = {
    "capped": {},
    "uncapped": {"FOCUSED_MAX_TEXT_CHARS": 0, "FOCUSED_MAX_LINKS_PER_PAGE": 0},
    "tight": {"FOCUSED_MAX_TEXT_CHARS": 40000, "FOCUSED_INDEX_MAX_CHARS": 40000},
}


def run(base: str, out: Path, name: str) -> dict[str, Any]:
    """One crawl of the hostile sandbox at ``base``; the :class:`ReactorHold` result."""
    folder = out / f"hostile-{name}"
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    result_file = folder / "reactor-hold.json"
    settings = {
        **CRAWL_SETTINGS,
        "FOCUSED_SEEDS": f"{base}/",
        "EXTENSIONS": json.dumps(
            {"focused.extensions.CrawlOutputExtension": 500, "bench.hostile.ReactorHold": 100}
        ),
        "BENCH_HOSTILE_OUT": str(result_file),
        **VARIANTS[name],
    }
    cmd = crawl_command("chemistry", output_dir=folder / "crawl", settings=settings)
    started = time.perf_counter()
    with (folder / "crawl.log").open("w") as log:
        proc = subprocess.run(cmd, cwd=PROJECT, stdout=log, stderr=subprocess.STDOUT, check=False)
    result = json.loads(result_file.read_text())
    result |= {
        "run": name,
        "exit_status": proc.returncode,
        "wall_s": round(time.perf_counter() - started, 1),
        "settings": {k: v for k, v in settings.items() if k != "EXTENSIONS"},
    }
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="out/bench")
    parser.add_argument("--pages", type=int, default=60, help="sandbox size (about)")
    parser.add_argument(
        "--uncapped",
        action="store_true",
        help="also crawl with both caps off (slow) and with tighter text caps",
    )
    args = parser.parse_args(argv)
    out = Path(args.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    server_cmd = [sys.executable, "-m", "focused.web.sandbox", "--port", "0"]
    server_cmd += ["--mode", "hostile", "--pages", str(args.pages)]
    runs = []
    with URLServer(server_cmd, "hostile sandbox") as server:
        time.sleep(3)  # the server builds its big pages in a thread: not during the crawl
        for name in VARIANTS if args.uncapped else ("capped",):
            runs.append(run(server.base, out, name))
            r = runs[-1]
            print(
                f"{r['run']}: longest hold {r['max_hold_s']} s ({r['holds'][0]['responses']}),"
                f" peak RSS {r['peak_rss_mb']} MB, {r['pages']} pages in {r['wall_s']} s"
            )
    result = {"runs": runs, "elapsed_s": round(time.perf_counter() - started, 1)}
    (out / "hostile.json").write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {out / 'hostile.json'} in {result['elapsed_s']} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
