"""Links (and seeds) whose host has an empty or over-63-character label.

Python's ``getaddrinfo`` IDNA-encodes the name it looks up and raises ``UnicodeError``
for ``a..b`` or ``.example.org``; in Twisted's resolver thread that error completed no
resolution, so the download (robots.txt first) hung until ``DOWNLOAD_TIMEOUT`` (then
"did not answer in time", the host's robots.txt "unreachable"), and "Unhandled error in
Deferred" was logged at CRITICAL with two tracebacks. A real crawl of a loopback site on
127.0.0.2: no lookup of such a name is made (IDNA fails before any packet is sent).
"""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

import pytest

from tests.crawling import crawl_real_web, error_line, run_cli
from tests.loopback import Answer, LoopbackServer

pytestmark = pytest.mark.integration

TEXT = b"chemistry acid molecule reaction " * 40


def test_links_to_hosts_with_an_empty_label_are_dropped_not_hung(
    project_root: Path, venv_scrapy: list[str], tmp_path: Path
) -> None:
    site: LoopbackServer

    def answer(path: str) -> Answer:
        if path == "/":
            links = (
                b'<a href="http://a..b/x.html">acid</a>'
                b'<a href="http://.127.0.0.2:%d/y.html">acid</a>'
                b'<a href="http://%s.test/z.html">acid</a>'
                b'<a href="/ok.html">acid</a>' % (site.port, b"a" * 64)
            )
            return 200, {}, b"<title>chemistry</title><body>%s%s</body>" % (TEXT, links)
        if path == "/ok.html":
            return 200, {}, b"<title>acid</title><body>%s</body>" % TEXT
        return 404, {}, b""

    site = LoopbackServer("127.0.0.2", answer)
    out = tmp_path / "out"
    started = time.monotonic()
    try:
        result = crawl_real_web(
            project_root,
            venv_scrapy,
            out,
            f"{site.url}/",
            "DOWNLOAD_TIMEOUT=8",
            "CLOSESPIDER_TIMEOUT=60",
        )
    finally:
        site.close()
    took = time.monotonic() - started
    log = result.stderr
    assert result.returncode == 0, log[-3000:]
    assert "Unhandled error" not in log and "CRITICAL" not in log, log[-3000:]
    assert "Traceback" not in log and "did not answer in time" not in log, log[-3000:]
    assert "'focused/links/ignored/bad_host': 3" in log
    con = sqlite3.connect(out / "pages.sqlite3")
    try:
        urls = {url for (url,) in con.execute("SELECT url FROM pages")}
    finally:
        con.close()
    assert urls == {f"{site.url}/", f"{site.url}/ok.html"}
    assert took < 8 + 20  # no DOWNLOAD_TIMEOUT waited for (the start-up takes seconds)


@pytest.mark.parametrize("seed", ["http://a..b/", "http://.127.0.0.2:8/"])
def test_a_seed_with_an_empty_label_is_one_line(
    project_root: Path, venv_scrapy: list[str], tmp_path: Path, seed: str
) -> None:
    """It was crawled: robots.txt "did not answer in time", two CRITICAL tracebacks, and
    the last line blamed the network."""
    out = tmp_path / "out"
    result = run_cli(
        project_root,
        venv_scrapy,
        out,
        *("-a", "topic=chemistry", "-s", "FOCUSED_WEB=real", "-s", f"FOCUSED_SEEDS={seed}"),
    )
    line = error_line(result)
    assert line == (
        f"focused: error: FOCUSED_SEEDS: {seed!r} has a host name Scrapy cannot fetch (bad_host)"
    )
    assert not out.exists()
