"""Redirects and retries across a pause: every request the scheduler accepts survives.

A loopback server: ``/`` links 60 URLs ``/r/N.html`` that each answer ``301`` to
``/t/N.html``, 20 plain pages ``/p/N.html``, and 5 pages ``/f/N.html`` that answer ``503``
once and then ``200`` (retried). The uninterrupted crawl stores the 86 pages; the same
crawl paused again and again (``CLOSESPIDER_PAGECOUNT=25``, ``CONCURRENT_REQUESTS=4``,
``JOBDIR``), or killed with ``kill -9`` at random moments, and resumed until it finishes
stores exactly the same set and every resume says "0 lost".
"""

from __future__ import annotations

import os
import random
import re
import signal
import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pytest
from crawling import run_crawl
from loopback import QuickHTTPServer, serve_in_thread

from bench.command import crawl_command
from bench.soak import PROJECT, journal_states, stored_urls

pytestmark = pytest.mark.integration

WORDS = "chemistry acid molecule reaction element compound " * 20


class Site(BaseHTTPRequestHandler):
    failed_once: set[str] = set()
    lock = threading.Lock()

    def log_message(self, *args: object) -> None:
        pass

    def _send(self, status: int, body: str = "", headers: dict[str, str] | None = None) -> None:
        data = body.encode()
        self.send_response(status)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        path = self.path
        page = "<html><head><title>{t}</title></head><body><p>{w}</p>{links}</body></html>"
        if path == "/":
            links = "".join(f'<a href="/r/{i}.html">chemistry {i}</a>' for i in range(60))
            links += "".join(f'<a href="/p/{i}.html">acid {i}</a>' for i in range(20))
            links += "".join(f'<a href="/f/{i}.html">molecule {i}</a>' for i in range(5))
            self._send(200, page.format(t="chemistry hub", w=WORDS, links=links))
        elif m := re.fullmatch(r"/r/(\d+)\.html", path):
            self._send(301, headers={"Location": f"/t/{m.group(1)}.html"})
        elif re.fullmatch(r"/(t|p)/\d+\.html", path):
            self._send(200, page.format(t=f"chemistry {path}", w=WORDS, links=""))
        elif re.fullmatch(r"/f/\d+\.html", path):
            with self.lock:
                first = path not in self.failed_once
                self.failed_once.add(path)
            if first:
                self._send(503, "busy")
            else:
                self._send(200, page.format(t=f"chemistry {path}", w=WORDS, links=""))
        else:
            self._send(404, "no")


@contextmanager
def serving() -> Iterator[str]:
    """The site on a free loopback port, every ``/f/`` page to fail once again."""
    Site.failed_once = set()
    server = QuickHTTPServer(("127.0.0.1", 0), Site)
    serve_in_thread(server)
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def site():
    with serving() as base:
        yield base


def _crawl(base: str, out: Path, *extra: str):
    return run_crawl(
        out,
        "FOCUSED_WEB=real",
        f"FOCUSED_SEEDS={base}/",
        "FOCUSED_STRATEGY=bfs",
        "CONCURRENT_REQUESTS=4",
        f"JOBDIR={out}/job",
        *extra,
    )


@pytest.fixture(scope="module")
def reference(tmp_path_factory) -> set[str]:
    """The pages (paths) the uninterrupted crawl stores: one crawl for both tests."""
    with serving() as base:
        crawl = _crawl(base, tmp_path_factory.mktemp("reference") / "out")
    return stored_urls(crawl.out)


def test_redirects_and_retries_survive_a_pause(site, tmp_path, reference):
    expected = reference
    assert len(expected) == 1 + 60 + 20 + 5
    assert {f"/t/{i}.html" for i in range(60)} <= expected

    Site.failed_once = set()
    out = tmp_path / "paused"
    runs = []
    for _ in range(10):
        crawl = _crawl(site, out, "CLOSESPIDER_PAGECOUNT=25")
        runs.append(crawl)
        if "'finish_reason': 'finished'" in crawl.log:
            break
    assert len(runs) > 2, "the crawl was not paused"
    assert "'finish_reason': 'finished'" in runs[-1].log
    for crawl in runs[1:]:
        assert re.search(r"resuming crawl from .*, 0 lost", crawl.log), crawl.log[-2000:]
    assert stored_urls(out) == expected
    states = journal_states(out / "job")
    assert not [u for u, s in states.items() if s in (0, 1)]  # nothing waiting, in flight


def test_redirects_and_retries_survive_kill_9(site, tmp_path, reference):
    expected = reference
    Site.failed_once = set()
    out = tmp_path / "killed"
    rng = random.Random(81)
    settings = {
        "FOCUSED_WEB": "real",
        "FOCUSED_SEEDS": f"{site}/",
        "FOCUSED_STRATEGY": "bfs",
        "CONCURRENT_REQUESTS": 4,
        "DOWNLOAD_DELAY": 0.05,
        "AUTOTHROTTLE_ENABLED": False,
        "FOCUSED_REPORT": False,
        "JOBDIR": str(out / "job"),
    }
    cmd = crawl_command("chemistry", output_dir=out, settings=settings)
    before: set[str] = set()
    for i in range(5):
        log = tmp_path / f"run{i}.log"
        with open(log, "wb") as fh:
            proc = subprocess.Popen(cmd, cwd=PROJECT, stdout=fh, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 30
        while b"Spider opened" not in log.read_bytes() and time.monotonic() < deadline:
            time.sleep(0.02)
        time.sleep(rng.uniform(0.2, 1.5))
        os.kill(proc.pid, signal.SIGKILL)  # the crawl this test started, by its pid
        proc.wait()
        now = stored_urls(out)
        assert before <= now  # nothing stored was lost
        before = now
        if i:
            assert ", 0 lost" in log.read_text(), log.read_text()[-2000:]
    final = _crawl(site, out)
    assert ", 0 lost" in final.log
    assert stored_urls(out) == expected
