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


@pytest.mark.parametrize("target", ["offsite", "refused"])
def test_a_robots_txt_redirected_where_the_crawl_may_not_go_keeps_the_host_unfetched(
    project_root: Path,
    venv_scrapy: list[str],
    tmp_path: Path,
    offsite: LoopbackServer,
    target: str,
) -> None:
    """robots.txt answers 301 to another host (off ``FOCUSED_ALLOWED_DOMAINS``, or an
    address the crawl refuses, 0.0.0.0): the redirect is not followed, so the host's rules are
    unknown. Scrapy took that as "allow all", and the page the rules forbid was fetched
    and stored; now the host's URLs are not fetched in this run (RFC 9309 asks to follow
    the redirect; a crawl that may not, cannot read the rules)."""
    elsewhere = (
        f"{offsite.url}/robots.txt" if target == "offsite" else "http://0.0.0.0:9/robots.txt"
    )

    def answer(path: str) -> Answer:
        if path == "/robots.txt":
            return (301, {"Location": elsewhere}, b"")
        if path == "/":
            return (200, {}, PAGE + b'<a href="/secret.html">chemistry acid secret</a>')
        return (200, {}, PAGE)

    site = LoopbackServer("127.0.0.2", answer)
    out = tmp_path / "out"
    settings = ["FOCUSED_ALLOWED_DOMAINS=127.0.0.2", "CLOSESPIDER_TIMEOUT=30"]
    try:
        result = crawl_real_web(project_root, venv_scrapy, out, f"{site.url}/", *settings)
    finally:
        site.close()
    assert "Traceback" not in result.stderr
    assert offsite.log == [] and offsite.connections == 0
    assert site.log == ["/robots.txt"], site.log
    assert "robots.txt of 127.0.0.2" in result.stderr and "does not follow" in result.stderr
    assert "'focused/robotstxt/redirect_refused': 1" in result.stderr
    # the crawl's only host: nothing stored, said in one line, exit status 1
    assert result.returncode == 1, result.stderr[-2000:]
    assert "focused: error: no page was fetched: robots.txt redirects" in result.stderr
