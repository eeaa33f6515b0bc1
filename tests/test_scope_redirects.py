"""Redirects stay within ``FOCUSED_ALLOWED_DOMAINS`` whatever the request.

Each case runs the real ``scrapy crawl focused`` against a loopback site on 127.0.0.2
(the allowed domain) whose pages redirect to a logging server on 127.0.0.3, which must
get no request.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.crawling import crawl_real_web
from tests.loopback import Answer, LoopbackServer

PAGE = b"<title>chemistry acid</title><p>" + b"chemistry acid molecule reaction " * 40


@pytest.fixture
def offsite() -> Iterator[LoopbackServer]:
    server = LoopbackServer("127.0.0.3", lambda path: (200, {}, PAGE))
    yield server
    server.close()


def test_a_retried_page_that_redirects_off_the_allowed_domains_is_not_followed(
    project_root: Path, venv_scrapy: list[str], tmp_path: Path, offsite: LoopbackServer
) -> None:
    """A retry is ``dont_filter``, Scrapy's redirect copies that onto the redirected
    request, and Scrapy's ``OffsiteMiddleware`` lets ``dont_filter`` through: a page that
    answered 503 once, then 302 to another host, got that host's page fetched and stored."""
    answers = {"flaky": 0}

    def answer(path: str) -> Answer:
        if path == "/flaky.html":
            answers["flaky"] += 1
            if answers["flaky"] == 1:
                return (503, {}, b"busy")
            return (302, {"Location": f"{offsite.url}/elsewhere.html"}, b"")
        if path == "/":
            return (200, {}, PAGE + b'<a href="/flaky.html">chemistry acid</a>')
        return (404, {}, b"")

    site = LoopbackServer("127.0.0.2", answer)
    out = tmp_path / "out"
    try:
        result = crawl_real_web(
            project_root,
            venv_scrapy,
            out,
            f"{site.url}/",
            "FOCUSED_ALLOWED_DOMAINS=127.0.0.2",
            "CLOSESPIDER_TIMEOUT=30",
        )
    finally:
        site.close()
    assert result.returncode == 0, result.stderr[-3000:]
    assert "Traceback" not in result.stderr
    assert site.log.count("/flaky.html") == 2  # the 503, then the redirect
    assert offsite.log == [] and offsite.connections == 0
    con = sqlite3.connect(out / "pages.sqlite3")
    try:
        urls = [url for (url,) in con.execute("SELECT url FROM pages")]
    finally:
        con.close()
    assert urls == [f"{site.url}/"]
    assert "redirects to 'http://127.0.0.3:" in result.stderr
    assert "'focused/redirects/ignored/offsite': 1" in result.stderr
