"""A 206 Partial Content on a crawl with the shared frontier in Redis (a real
``redis-server`` on a free loopback port, two real ``scrapy crawl focused`` runs of a
loopback site)."""

from __future__ import annotations

import os
import shutil
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from bench.scale import RedisServer
from tests.crawling import crawl_real_web
from tests.loopback import Answer, LoopbackServer
from tests.test_page_links import html

pytestmark = pytest.mark.skipif(
    shutil.which("redis-server") is None and not os.environ.get("CI"),
    reason="redis-server is not installed (apt-get install redis-server)",
)


@pytest.fixture(scope="module")
def redis_url() -> Iterator[str]:
    with RedisServer() as server:
        yield server.url


@pytest.mark.integration
def test_a_piece_is_fetched_again_by_a_later_run_and_a_whole_206_is_stored(
    project_root: Path, venv_scrapy: list[str], tmp_path: Path, redis_url: str
) -> None:
    """Two runs of one crawl on the Redis frontier (the second continues the first's
    frontier): a 206 carrying the whole page (``bytes 0-(N-1)/N``) is the page, stored
    once and its link followed; a piece (``bytes 0-299/N``) is an error of the run, not
    done: each run fetches it, it is never stored."""
    whole = html("Chemistry of salts", body='<a href="/after.html">chemistry more</a>')
    n = len(whole)

    def answer(path: str) -> Answer:
        if path == "/":
            links = '<a href="/whole.html">chemistry whole</a> <a href="/part.html">acid</a>'
            return 200, {}, html("Chemistry", body=links)
        if path == "/whole.html":
            return 206, {"Content-Range": f"bytes 0-{n - 1}/{n}"}, whole
        if path == "/part.html":
            return 206, {"Content-Range": f"bytes 0-299/{n}"}, whole[:300]
        if path == "/after.html":
            return 200, {}, html("Chemistry page after")
        return 404, {}, b""

    out = tmp_path / "out"
    site = LoopbackServer("127.0.0.2", answer)
    redis = ("FOCUSED_FRONTIER=redis", f"REDIS_URL={redis_url}")
    key = f"FOCUSED_REDIS_KEY=partial:{tmp_path.name}"
    try:
        runs = [
            crawl_real_web(
                project_root, venv_scrapy, out, f"{site.url}/", "FOCUSED_STRATEGY=bfs", *redis, key
            )
            for _ in range(2)
        ]
    finally:
        site.close()
    for result in runs:
        assert result.returncode == 0, result.stderr[-3000:]
        assert "Traceback" not in result.stderr, result.stderr[-3000:]
        assert "'focused/skipped/partial': 1," in result.stderr, result.stderr[-3000:]
    con = sqlite3.connect(out / "pages.sqlite3")
    try:
        stored = sorted(urlsplit(u).path for (u,) in con.execute("SELECT url FROM pages"))
    finally:
        con.close()
    assert stored == ["/", "/after.html", "/whole.html"]
    assert site.log.count("/whole.html") == 1 and site.log.count("/after.html") == 1
    assert site.log.count("/part.html") == 2, site.log  # once per run
