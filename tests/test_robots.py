"""robots.txt holds for every request (focused.robots.FocusedRobotsTxtMiddleware).

Real crawls (Scrapy in a subprocess, the project's ``DOWNLOADER_MIDDLEWARES``) against a
real loopback server that logs every request it gets and whose robots.txt is slow, fails
the first time, or is missing.
"""

from __future__ import annotations

import functools
import gzip
import sqlite3
import time
import zlib
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import brotli
import pytest
from backports import zstd
from crawling import run_crawl

from tests.loopback import RUN_PROBE, Answer, LoopbackServer, run_probe

pytestmark = pytest.mark.integration

ROBOTS = b"User-agent: *\nDisallow: /private/\n"
COMPRESS = {
    "gzip": gzip.compress,
    "deflate": zlib.compress,
    # quality 1: the default (11) took 13 s (69 s on a loaded machine) to compress the 9 MB
    # robots.txt of test_a_huge_compressed_robots_txt_...[br]; it inflates the same
    "br": functools.partial(brotli.compress, quality=1),
    "zstd": zstd.compress,
}
PRIVATE = "/private/p.html"

SCRIPT = (
    """
import asyncio, json, sys
import scrapy
from scrapy.crawler import CrawlerProcess
from focused import settings as project
from focused.robots import FocusedRobotsTxtMiddleware

args = json.loads(sys.argv[1])
FocusedRobotsTxtMiddleware.RETRY_AFTER = args["retry_after"]

class Probe(scrapy.Spider):
    name = "robots-probe"
    settled = 0  # requests of the batches so far that got a response or an error

    async def start(self):
        sent = 0
        for wait, paths in args["batches"]:
            while self.settled < sent:  # the previous batch is over
                await asyncio.sleep(0.05)
            await asyncio.sleep(wait)
            for path in paths:
                sent += 1
                yield scrapy.Request(args["base"] + path, dont_filter=True, errback=self.failed)

    def parse(self, response):
        self.settled += 1

    def failed(self, failure):
        self.settled += 1

middlewares = project.DOWNLOADER_MIDDLEWARES if args["project"] else {}
process = CrawlerProcess({
    "ROBOTSTXT_OBEY": True,
    "DOWNLOADER_MIDDLEWARES": middlewares,
    "RETRY_TIMES": args["retry_times"],
    "DOWNLOAD_TIMEOUT": args["download_timeout"],
    "TELNETCONSOLE_ENABLED": False,
    "LOG_LEVEL": "INFO",
    "USER_AGENT": project.USER_AGENT,
    "DOWNLOAD_MAXSIZE": project.DOWNLOAD_MAXSIZE,  # 8 MB, as in a crawl (Scrapy's: 1 GB)
    # the probe has no seeds: its loopback server is allowed by name
    "FOCUSED_ALLOWED_NETWORKS": ["127.0.0.0/8"],
})
"""
    + RUN_PROBE
)


class Web(LoopbackServer):
    """A loopback server: pages answer 200; robots.txt answers after ``robots_delay``
    seconds, except for its first ``robots_failures`` requests, which fail as
    ``robots_mode`` says ("503", "drop": close without answering, "404": always 404)."""

    def __init__(self) -> None:
        self.times: list[tuple[float, str]] = []  # (time.monotonic(), path) per request
        self.robots_body = ROBOTS
        self.limited: dict[str, int] = {}  # path -> 429 answers still to give
        self.retry_after = "1"
        self.robots_delay = 0.0
        self.robots_failures = 0
        self.robots_mode = "503"
        self.robots_coding = ""  # a Content-Encoding robots.txt is sent in
        super().__init__("127.0.0.1", self._answer)
        self.base = self.url

    def _answer(self, path: str) -> Answer:
        self.times.append((time.monotonic(), path))
        body, status, headers = b"<html><body>page</body></html>", 200, {}
        if self.limited.get(path, 0) > 0:
            self.limited[path] -= 1
            status = 429
            headers["Retry-After"] = self.retry_after
        if path == "/robots.txt":
            if self.robots_mode == "404":
                status = 404
            elif self.robots_failures > 0:
                self.robots_failures -= 1
                if self.robots_mode == "drop":
                    return None
                status = 503
            else:
                time.sleep(self.robots_delay)
                body, headers["Content-Type"] = self.robots_body, "text/plain"
                if self.robots_coding:
                    body = COMPRESS[self.robots_coding](body)
                    headers["Content-Encoding"] = self.robots_coding
        return status, headers, body


@pytest.fixture
def web() -> Iterator[Web]:
    server = Web()
    yield server
    server.close()


def crawl(
    web: Web,
    batches: list[tuple[float, list[str]]],
    *,
    project: bool = True,
    retry_times: int = 0,
    retry_after: float = 60.0,
    download_timeout: float = 180.0,
    log: list[str] | None = None,
) -> dict[str, object]:
    """Crawl the batches of paths (each after the previous one is over and ``wait`` s);
    return the crawl's stats (and its log lines in ``log``). A traceback in the log fails
    it, except Scrapy's own for a robots.txt download that raised."""
    args = {
        "base": web.base,
        "batches": batches,
        "project": project,
        "retry_times": retry_times,
        "retry_after": retry_after,
        "download_timeout": download_timeout,
    }
    stats, proc = run_probe(SCRIPT, args, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    errors = proc.stderr.split("Error downloading")
    assert "Traceback" not in errors[0] + "".join(e.split("\n2", 1)[-1] for e in errors[1:])
    if log is not None:
        log.extend(proc.stderr.splitlines())
    return stats


def test_the_project_uses_the_fixed_middleware() -> None:
    from focused import settings

    mw = settings.DOWNLOADER_MIDDLEWARES
    assert mw["scrapy.downloadermiddlewares.robotstxt.RobotsTxtMiddleware"] is None
    assert mw["focused.robots.FocusedRobotsTxtMiddleware"] == 100


def test_every_request_waiting_for_robots_txt_obeys_it(web: Web) -> None:
    """A first burst of requests to a host (a resumed JOBDIR) all wait for its slow
    robots.txt; the forbidden one comes last, as the 7th waiter."""
    web.robots_delay = 0.5
    burst = [f"/p{i}.html" for i in range(6)] + [PRIVATE]
    stats = crawl(web, [(0.0, burst)])
    assert PRIVATE not in web.log
    assert sorted(web.log) == sorted(["/robots.txt", *burst[:-1]])
    assert stats["robotstxt/forbidden"] == 1

    # Scrapy 2.19's own middleware lets it through: the test catches the bug.
    web.log.clear()
    crawl(web, [(0.0, burst)], project=False)
    assert PRIVATE in web.log, "Scrapy's middleware obeyed: is scrapy/scrapy#6802 fixed?"


@pytest.mark.parametrize("mode", ["503", "drop"])
def test_unreachable_robots_txt_disallows_then_is_fetched_again(web: Web, mode: str) -> None:
    """robots.txt fails (503 or a dropped connection) and Scrapy retries nothing: the
    host's requests are refused (RFC 9309) until robots.txt is fetched again."""
    web.robots_failures, web.robots_mode = 1, mode
    first = ["/a.html", PRIVATE, "/b.html"]
    later = ["/c.html", PRIVATE, "/d.html"]
    log: list[str] = []
    stats = crawl(web, [(0.0, first), (1.2, later)], retry_after=1.0, log=log)
    host = web.base.split("//")[1]
    assert any(f"robots.txt of {host} unreachable" in line for line in log)
    # The later batch's two pages may be fetched in either order (concurrent downloads).
    assert web.log[:2] == ["/robots.txt", "/robots.txt"]
    assert sorted(web.log[2:]) == ["/c.html", "/d.html"]  # nothing of the first batch
    assert stats["focused/robotstxt/unreachable"] == 1
    assert stats["focused/robotstxt/refused"] == len(first)
    assert stats["robotstxt/forbidden"] == 1


def test_scrapy_retries_heal_one_robots_txt_failure(web: Web) -> None:
    """With the project's RETRY_TIMES, one failed robots.txt download is retried at once."""
    web.robots_failures = 1
    stats = crawl(web, [(0.0, ["/a.html", PRIVATE, "/b.html"])], retry_times=2)
    assert web.log[:2] == ["/robots.txt", "/robots.txt"]
    assert sorted(web.log[2:]) == ["/a.html", "/b.html"]
    assert "focused/robotstxt/unreachable" not in stats
    assert stats["robotstxt/forbidden"] == 1


def test_a_hanging_robots_txt_costs_one_time_out(web: Web) -> None:
    """A host that never answers its robots.txt: the download times out once, is not
    retried (whatever RETRY_TIMES), and the host's pages are refused (RFC 9309), with one
    WARNING line and no traceback."""
    web.robots_delay = 3.0  # longer than DOWNLOAD_TIMEOUT
    log: list[str] = []
    stats = crawl(
        web, [(0.0, ["/a.html", "/b.html"])], retry_times=2, download_timeout=1.0, log=log
    )
    assert web.log == ["/robots.txt"]  # not retried: one time-out, not three
    assert stats["focused/robotstxt/unreachable"] == 1
    assert stats["focused/robotstxt/refused"] == 2
    assert stats["focused/errors/timeout"] == 1
    assert "retry/count" not in stats
    assert not any(" ERROR" in line for line in log)
    assert any("did not answer in time" in line for line in log)


def test_missing_robots_txt_allows_all(web: Web) -> None:
    """A 4xx robots.txt means no rules (RFC 9309), as in Scrapy."""
    web.robots_mode = "404"
    stats = crawl(web, [(0.0, ["/a.html", PRIVATE])])
    assert sorted(web.log) == sorted(["/robots.txt", "/a.html", PRIVATE])
    assert "focused/robotstxt/unreachable" not in stats


def test_a_huge_robots_txt_is_parsed_up_to_its_cap(web: Web) -> None:
    """A 9 MB robots.txt (over DOWNLOAD_MAXSIZE, 260k rules) made the host unreachable;
    now its first FOCUSED_ROBOTS_MAX_BYTES (500 KiB) are parsed (RFC 9309)."""
    filler = b"".join(b"Disallow: /junk/%06d/\n" % i for i in range(450_000))
    web.robots_body = b"User-agent: *\nDisallow: /private/\n" + filler
    assert len(web.robots_body) > 9 * 1024 * 1024
    stats = crawl(web, [(0.0, ["/a.html", PRIVATE, "/junk/000001/x.html", "/b.html"])])
    assert sorted(web.log) == sorted(["/robots.txt", "/a.html", "/b.html"])
    assert stats["focused/robotstxt/truncated"] == 1
    assert "focused/robotstxt/unreachable" not in stats
    assert stats["robotstxt/forbidden"] == 2
    # rules past the cap are not read: /junk/400000/ was disallowed at about 9 MB
    web.log.clear()
    crawl(web, [(0.0, ["/junk/400000/x.html"])])
    assert "/junk/400000/x.html" in web.log


@pytest.mark.parametrize("coding", ["gzip", "br", "zstd", "deflate"])
def test_a_huge_compressed_robots_txt_is_parsed_up_to_its_cap(web: Web, coding: str) -> None:
    """The same robots.txt sent compressed (1.2 MB of gzip): it inflated over
    DOWNLOAD_MAXSIZE, Scrapy's compression middleware refused it, and the robots.txt
    middleware allowed the whole host (the disallowed page was fetched). Now only its
    first FOCUSED_ROBOTS_MAX_BYTES are inflated, and parsed, as when it is sent plain."""
    filler = b"".join(b"Disallow: /junk/%06d/\n" % i for i in range(450_000))
    web.robots_body = b"User-agent: *\nDisallow: /private/\n" + filler
    web.robots_coding = coding
    stats = crawl(web, [(0.0, ["/a.html", PRIVATE, "/junk/000001/x.html", "/b.html"])])
    assert sorted(web.log) == sorted(["/robots.txt", "/a.html", "/b.html"])
    assert stats["focused/robotstxt/truncated"] == 1
    assert stats["robotstxt/forbidden"] == 2


def test_a_small_compressed_robots_txt_is_read_whole(web: Web) -> None:
    web.robots_body = ROBOTS + b"Disallow: /last/\n"
    web.robots_coding = "gzip"
    stats = crawl(web, [(0.0, ["/a.html", PRIVATE, "/last/x.html"])])
    assert sorted(web.log) == sorted(["/robots.txt", "/a.html"])
    assert "focused/robotstxt/truncated" not in stats
    assert stats["robotstxt/forbidden"] == 2


def test_crawl_delay_spaces_the_hosts_downloads(web: Web) -> None:
    """robots.txt says Crawl-delay: 1; the host's downloads are at least 1 s apart."""
    web.robots_body = b"User-agent: *\nCrawl-delay: 1\nDisallow: /private/\n"
    pages = [f"/p{i}.html" for i in range(4)]
    stats = crawl(web, [(0.0, pages)])
    times = [t for t, path in web.times if path in pages]
    assert len(times) == len(pages)
    gaps = [b - a for a, b in zip(times, times[1:], strict=False)]
    # a lower bound on spacing (what the host asked for), not a speed measurement; 20 ms
    # of slack for the server thread that notes the time
    assert min(gaps) >= 1.0 - 0.02, gaps
    assert stats["focused/politeness/crawl_delay"] == 1


def test_retry_after_pauses_the_host(web: Web) -> None:
    """A 429 with Retry-After: 1 is retried no sooner than 1 s later (it was retried at
    once), and the host's other downloads wait too."""
    web.robots_body = b"User-agent: *\nDisallow: /private/\n"
    web.limited["/busy.html"] = 1
    stats = crawl(web, [(0.0, ["/busy.html"])], retry_times=2)
    busy = [t for t, path in web.times if path == "/busy.html"]
    assert len(busy) == 2
    assert busy[1] - busy[0] >= 1.0 - 0.02
    assert stats["focused/politeness/retry_after"] == 1
    assert stats["retry/count"] == 1


# --- a real crawl: a host whose robots.txt fails for a while is postponed, not lost -------
CHEM = "chemistry acid molecule reaction catalyst element " * 20


class FlakyRobots(LoopbackServer):
    """A small chemistry site whose robots.txt answers ``status`` (503) ``failures`` times
    (``None``: always), then ``rules`` (``Allow: /``)."""

    def __init__(
        self, failures: int | None, status: int = 503, rules: bytes = b"Allow: /\n"
    ) -> None:
        self.failures = failures
        self.status = status
        self.rules = rules
        super().__init__("127.0.0.1", self._answer)

    def _answer(self, path: str) -> Answer:
        if path == "/robots.txt":
            if self.failures is None or self.failures > 0:
                if self.failures is not None:
                    self.failures -= 1
                return self.status, {"Content-Type": "text/plain"}, b"busy"
            return 200, {"Content-Type": "text/plain"}, b"User-agent: *\n" + self.rules
        links = "".join(f'<a href="/a{i}.html">chemistry {i}</a> ' for i in range(3))
        body = f"<html><title>chemistry {path}</title><body>{CHEM} {path}"
        return 200, {}, f"{body} {links if path == '/' else ''}</body></html>".encode()


def journal_states(job: Path) -> dict[str, int]:
    con = sqlite3.connect(job / "frontier.sqlite3")
    try:
        return {urlsplit(u).path: s for u, s in con.execute("SELECT url, state FROM urls")}
    finally:
        con.close()


def test_a_host_whose_robots_txt_fails_for_a_while_is_crawled_once_it_answers(
    tmp_path: Path,
) -> None:
    """robots.txt answers 503 to its first 3 requests (Scrapy's one try and two retries):
    the seed waits (RFC 9309: disallowed meanwhile), robots.txt is fetched again after
    FOCUSED_ROBOTS_RETRY_AFTER and the site is crawled; nothing is journaled as an error.
    The crawl ended at once, the seed an error, and a resume fetched nothing."""
    server = FlakyRobots(3)
    job = tmp_path / "job"
    try:
        crawl = run_crawl(
            tmp_path / "out",
            "FOCUSED_WEB=real",
            f"FOCUSED_SEEDS={server.url}/",
            "FOCUSED_STRATEGY=bfs",
            "FOCUSED_ROBOTS_RETRY_AFTER=1.5",
            f"JOBDIR={job}",
        )
    finally:
        server.close()
    assert "unreachable (HTTP 503)" in crawl.log
    assert server.log.count("/robots.txt") == 4
    stored = {urlsplit(r["url"]).path for r in crawl.rows()}
    assert stored == {"/", "/a0.html", "/a1.html", "/a2.html"}
    assert set(journal_states(job).values()) == {2}  # all done, no error (3)


def test_a_robots_txt_that_answers_429_is_waited_for_not_taken_for_allow_all(
    tmp_path: Path,
) -> None:
    """robots.txt answers 429 Too Many Requests to its first 3 requests: it was taken as
    any 4xx, "allow all", so the host that had asked for fewer requests was crawled at
    once, past its rules (``/a2.html``, disallowed, was fetched and stored). Now 429 is
    taken as a 5xx (as Google's crawler does): the host waits, robots.txt is fetched again
    after FOCUSED_ROBOTS_RETRY_AFTER, and its rules hold."""
    server = FlakyRobots(3, status=429, rules=b"Disallow: /a2.html\n")
    job = tmp_path / "job"
    try:
        crawl = run_crawl(
            tmp_path / "out",
            "FOCUSED_WEB=real",
            f"FOCUSED_SEEDS={server.url}/",
            "FOCUSED_STRATEGY=bfs",
            "FOCUSED_ROBOTS_RETRY_AFTER=1.5",
            f"JOBDIR={job}",
        )
    finally:
        server.close()
    assert "unreachable (HTTP 429)" in crawl.log
    assert server.log[:4] == ["/robots.txt"] * 4  # nothing else before robots.txt answered
    assert "/a2.html" not in server.log
    stored = {urlsplit(r["url"]).path for r in crawl.rows()}
    assert stored == {"/", "/a0.html", "/a1.html"}
    states = journal_states(job)
    assert states.pop("/a2.html") == 3  # forbidden: an error, as any disallowed URL
    assert set(states.values()) == {2}


def test_a_host_whose_robots_txt_stays_unreachable_waits_for_the_next_run(
    tmp_path: Path,
) -> None:
    """After FOCUSED_ROBOTS_UNREACHABLE_TRIES failures in a row the run ends, its URLs
    waiting in the journal (not errors): the next run, robots.txt answering, fetches them."""
    server = FlakyRobots(None)
    job = tmp_path / "job"
    settings = [
        "FOCUSED_WEB=real",
        f"FOCUSED_SEEDS={server.url}/",
        "FOCUSED_STRATEGY=bfs",
        "FOCUSED_ROBOTS_RETRY_AFTER=0.5",
        "FOCUSED_ROBOTS_UNREACHABLE_TRIES=2",
        "RETRY_TIMES=0",
        f"JOBDIR={job}",
    ]
    try:
        first = run_crawl(tmp_path / "out", *settings, check=False)
        assert "Traceback" not in first.log
        assert server.log == ["/robots.txt", "/robots.txt"]
        assert "2 times in a row" in first.log
        assert journal_states(job) == {"/": 0}  # waiting
        server.failures = 0
        run_crawl(tmp_path / "out", *settings)
    finally:
        server.close()
    assert {"/", "/a0.html"} <= set(server.log)
    assert set(journal_states(job).values()) == {2}
