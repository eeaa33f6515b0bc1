"""Politeness that keeps the order: real crawls (Scrapy in a subprocess, the project's
scheduler and downloader middlewares) of two loopback hosts, 127.0.0.2 and 127.0.0.3.

Host A has many high-priority pages and a download delay; host B has a few low-priority
ones. With ``FOCUSED_HOST_AWARE`` B's pages are fetched while A waits for its delay;
with the strict global order (``False``) A's requests fill the downloader and B's come
after them. The assertions are on the order in which the servers saw the requests.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from tests.loopback import RUN_PROBE, Answer, LoopbackServer, run_probe

pytestmark = pytest.mark.integration

SCRIPT = (
    """
import json, sys
import scrapy
from scrapy.crawler import CrawlerProcess
from focused import settings as project

args = json.loads(sys.argv[1])

class Probe(scrapy.Spider):
    name = "host-aware-probe"
    start_urls = [args["seed"]]

    async def start(self):
        yield scrapy.Request(args["seed"], priority=1000)

    def parse(self, response):
        if response.url == args["seed"]:
            for url, priority in args["links"]:
                yield scrapy.Request(url, priority=priority)

process = CrawlerProcess({
    "SCHEDULER": "focused.scheduler.FocusedScheduler",
    "FOCUSED_STRATEGY": "best_first",
    "DOWNLOADER": project.DOWNLOADER,
    "DOWNLOADER_MIDDLEWARES": project.DOWNLOADER_MIDDLEWARES,
    "TWISTED_DNS_RESOLVER": project.TWISTED_DNS_RESOLVER,
    "FOCUSED_ALLOWED_NETWORKS": ["127.0.0.0/8"],
    "ROBOTSTXT_OBEY": True,
    "AUTOTHROTTLE_ENABLED": False,
    "DOWNLOAD_DELAY_JITTER": 0,
    "RETRY_TIMES": 0,
    "DOWNLOAD_TIMEOUT": 5,
    "TELNETCONSOLE_ENABLED": False,
    "LOG_LEVEL": "INFO",
    **args["settings"],
})
"""
    + RUN_PROBE
)


class Host(LoopbackServer):
    """A loopback server whose page requests are appended as ``(name, path)`` to ``log``
    (shared by the hosts of a test), and their arrival times to :attr:`times`; ``once``
    maps a path to the (status, headers) of its first answer."""

    def __init__(
        self,
        address: str,
        name: str,
        log: list[tuple[str, str]],
        robots: str,
        once: dict[str, tuple[int, dict[str, str]]] | None = None,
    ) -> None:
        once = dict(once or {})
        self.times: list[float] = []

        def answer(path: str) -> Answer:
            body, headers = b"<html><body>page</body></html>", {}
            if path == "/robots.txt":
                body, headers = robots.encode(), {"Content-Type": "text/plain"}
            else:
                log.append((name, path))
                self.times.append(time.monotonic())
            status, extra = once.pop(path, (200, {}))
            return status, {**extra, **headers}, body

        super().__init__(address, answer)


@pytest.fixture
def hosts(request: pytest.FixtureRequest) -> Iterator[tuple[Host, Host, list[tuple[str, str]]]]:
    robots_a = getattr(request, "param", "")
    log: list[tuple[str, str]] = []
    a = Host("127.0.0.2", "a", log, robots_a)
    b = Host("127.0.0.3", "b", log, "")
    yield a, b, log
    a.close()
    b.close()


def crawl(a: Host, b: Host, settings: dict[str, object], n_a: int = 8, n_b: int = 4) -> dict:
    links = [(f"{a.url}/a{i}", 100) for i in range(1, n_a + 1)]
    links += [(f"{b.url}/b{i}", 1) for i in range(1, n_b + 1)]
    args = {"seed": f"{a.url}/a0", "links": links, "settings": settings}
    return run_probe(SCRIPT, args)[0]


def _order(log: list[tuple[str, str]]) -> list[str]:
    return [path.lstrip("/") for _, path in log]


# CONCURRENT_REQUESTS 4 < A's 8 pages: in the strict order A's requests fill the
# downloader and wait in A's slot for its delay.
SETTINGS = {"CONCURRENT_REQUESTS": 4, "DOWNLOAD_DELAY": 0.3}


def test_an_idle_host_is_served_while_a_busy_one_waits(hosts) -> None:
    a, b, log = hosts
    stats = crawl(a, b, {**SETTINGS, "FOCUSED_HOST_AWARE": True})
    order = _order(log)
    assert sorted(order) == sorted([f"a{i}" for i in range(9)] + [f"b{i}" for i in range(1, 5)])
    # B's four pages go while A fetches one page per delay: all before A's fifth
    assert max(order.index(f"b{i}") for i in range(1, 5)) < order.index("a5"), order
    # A's own order is kept (best first, then first found first)
    assert [p for p in order if p.startswith("a")] == [f"a{i}" for i in range(9)]
    assert stats["focused/queue/done"] == 13 and stats["focused/queue/waiting"] == 0
    assert stats["focused/scheduler/hosts_busy"] >= 1  # it did wait for a free host
    # waiting does not spin: a few picks per page and per delay, not one per loop turn
    assert stats["focused/scheduler/hosts_busy"] < 100, stats


def test_without_host_awareness_the_busy_host_blocks_the_others(hosts) -> None:
    a, b, log = hosts
    stats = crawl(a, b, {**SETTINGS, "FOCUSED_HOST_AWARE": False})
    order = _order(log)
    assert min(order.index(f"b{i}") for i in range(1, 5)) > order.index("a5"), order
    assert stats["focused/queue/done"] == 13
    assert "focused/scheduler/hosts_busy" not in stats


def test_a_random_delay_keeps_its_bounds_and_the_idle_host_is_served(hosts) -> None:
    """Scrapy's default ``DOWNLOAD_DELAY_JITTER`` of 0.5 with the project's downloader
    (a draw per download, :mod:`focused.downloader`): A's pages start 0.5-1.5 delays
    apart, never sooner, in A's order; B's first page goes while A waits."""
    a, b, log = hosts
    delay = 0.4
    settings = {"CONCURRENT_REQUESTS": 4, "DOWNLOAD_DELAY": delay, "DOWNLOAD_DELAY_JITTER": 0.5}
    stats = crawl(a, b, {**settings, "FOCUSED_HOST_AWARE": True})
    order = _order(log)
    assert [p for p in order if p.startswith("a")] == [f"a{i}" for i in range(9)]
    # B is served while A waits (the strict order would send B after a5; A's gaps may
    # be as short as 0.2 s here, so only B's first page is held to an early place)
    assert order.index("b1") < order.index("a3"), order
    gaps = [t1 - t0 for t0, t1 in zip(a.times, a.times[1:], strict=False)]
    assert len(gaps) == 8
    # the lower bound of the random delay (less a margin: these are arrival times at the
    # server, and a loaded reactor can send one request late and the next on time)
    assert min(gaps) >= 0.5 * delay - 0.05, gaps
    assert max(gaps) - min(gaps) > 0.05, gaps  # and it is random: drawn for each page
    assert stats["focused/queue/done"] == 13


@pytest.mark.parametrize("hosts", ["User-agent: *\nCrawl-delay: 1\n"], indirect=True)
def test_a_crawl_delay_is_seen_by_the_pick(hosts) -> None:
    """No DOWNLOAD_DELAY: A's robots.txt asks for one second between its pages
    (:mod:`focused.politeness` sets it on A's slot); B is served in the meantime."""
    a, b, log = hosts
    stats = crawl(a, b, {"CONCURRENT_REQUESTS": 4, "FOCUSED_HOST_AWARE": True}, n_a=3)
    order = _order(log)
    assert order.index("b4") < order.index("a1"), order
    assert [p for p in order if p.startswith("a")] == ["a0", "a1", "a2", "a3"]
    assert stats["focused/politeness/crawl_delay"] == 1
    assert stats["focused/queue/done"] == 8
    assert stats["focused/scheduler/hosts_busy"] < 50, stats


def test_a_retry_after_pause_is_seen_by_the_pick() -> None:
    """A's first page answers 429 with Retry-After: 2 (:mod:`focused.politeness` pauses
    A's slot): B's pages are fetched during the pause, not behind A's requests (more of
    them than CONCURRENT_REQUESTS) that wait for it."""
    log: list[tuple[str, str]] = []
    a = Host("127.0.0.2", "a", log, "", once={"/a1": (429, {"Retry-After": "2"})})
    b = Host("127.0.0.3", "b", log, "")
    try:
        stats = crawl(
            a,
            b,
            {"CONCURRENT_REQUESTS": 4, "RETRY_TIMES": 1, "FOCUSED_HOST_AWARE": True},
            n_a=12,
        )
    finally:
        a.close()
        b.close()
    order = _order(log)
    first, again = order.index("a1"), len(order) - 1 - order[::-1].index("a1")
    assert first < again, order  # asked twice: the 429, then the retry
    assert all(first < order.index(f"b{i}") < again for i in range(1, 5)), order
    assert len(order) == 13 + 1 + 4, order  # a0..a12, the retry of a1, b1..b4
    assert stats["focused/politeness/retry_after"] == 1
    assert stats["focused/scheduler/hosts_busy"] < 50, stats
