"""A fetched page holds its place in ``CONCURRENT_REQUESTS`` until its links are queued
(``FOCUSED_WAIT_FOR_LINKS``), so each pick knows the links of every page fetched before
it.

Scrapy starts the next download as soon as one ends, while the page that ended is still
parsed: with one request at a time the scheduler was asked for the next URL before the
last page's links were in, and which ones were in was a race (the same 300-page sandbox
crawl came out in one of two orders from run to run). A real crawl of a loopback site
shows the order: the page fetched after a long page is the best of its links, not the
poorer link that waited before it.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from tests.crawling import crawl_real_web
from tests.loopback import LoopbackServer

CHEMISTRY = b"chemistry acid molecule reaction catalyst element "


def _answer(path: str) -> tuple[int, dict[str, str], bytes]:
    if path == "/robots.txt":
        return 200, {"Content-Type": "text/plain"}, b"User-agent: *\nAllow: /\n"
    pages = {
        "/": b'<a href="/long.html">chemistry acid reaction</a> <a href="/poor.html">weather</a>',
        # long to parse (~100,000 words, within FOCUSED_MAX_PARSE_BYTES): its link is read
        # after its download has ended
        "/long.html": CHEMISTRY * 15_000 + b'<a href="/best.html">chemistry acid molecule</a>',
        "/poor.html": b"weather rain",
        "/best.html": CHEMISTRY,
    }
    if path not in pages:
        return 404, {}, b""
    body = b"<html><title>chemistry</title><body>%s %s</body></html>" % (CHEMISTRY, pages[path])
    return 200, {"Content-Type": "text/html"}, body


@pytest.mark.integration
def test_the_next_pick_knows_the_links_of_the_page_before(
    project_root: Path, venv_scrapy: list[str], tmp_path: Path
) -> None:
    site = LoopbackServer("127.0.0.2", _answer)
    try:
        result = crawl_real_web(
            project_root,
            venv_scrapy,
            tmp_path / "out",
            f"{site.url}/",
            "FOCUSED_STRATEGY=best_first",
            "CONCURRENT_REQUESTS=1",
            "CLOSESPIDER_TIMEOUT=60",
        )
    finally:
        site.close()
    assert result.returncode == 0, result.stderr[-3000:]
    pages = [path for path in site.log if path not in ("/", "/robots.txt")]
    assert pages == ["/long.html", "/best.html", "/poor.html"], pages


def _six_pages(path: str) -> tuple[int, dict[str, str], bytes]:
    if path == "/robots.txt":
        return 200, {"Content-Type": "text/plain"}, b"User-agent: *\nAllow: /\n"
    links = b"".join(b'<a href="/p%d.html">chemistry acid %d</a> ' % (i, i) for i in range(5))
    if path not in ("/", *(f"/p{i}.html" for i in range(5))):
        return 404, {}, b""
    # each its own text: pages alike in title, text and links are one page's copies
    body = b"<html><title>chemistry</title><body>%s %s %s</body></html>" % (
        CHEMISTRY,
        path.encode(),
        links if path == "/" else b"",
    )
    return 200, {"Content-Type": "text/html"}, body


@pytest.mark.integration
def test_a_page_whose_item_is_held_does_not_hold_the_next_download(
    project_root: Path, venv_scrapy: list[str], tmp_path: Path
) -> None:
    """Once a page's links are queued its item may take its time in the pipelines (a
    pipeline that writes in batches): with one request at a time, the next page is
    fetched meanwhile. (Counted until its item left the pipelines, the first page held
    the only place while its item waited for two more: the crawl stood still.)"""
    pipelines = {
        "tests.holding_pipeline.HoldInThrees": 100,
        "focused.pipelines.PageStorePipeline": 300,
        "focused.pipelines.MetricsPipeline": 800,
    }
    site = LoopbackServer("127.0.0.2", _six_pages)
    out = tmp_path / "out"
    try:
        result = crawl_real_web(
            project_root,
            venv_scrapy,
            out,
            f"{site.url}/",
            "FOCUSED_STRATEGY=best_first",
            "CONCURRENT_REQUESTS=1",
            f"ITEM_PIPELINES={json.dumps(pipelines)}",
            "CLOSESPIDER_TIMEOUT=30",
        )
    finally:
        site.close()
    assert result.returncode == 0, result.stderr[-3000:]
    assert "'finish_reason': 'finished'" in result.stderr, result.stderr[-3000:]
    con = sqlite3.connect(out / "pages.sqlite3")
    try:
        assert con.execute("SELECT count(*) FROM pages").fetchone()[0] == 6
    finally:
        con.close()
