"""Hostile and realistic markup and headers, each crawled for real: a loopback site on
127.0.0.2, the ``scrapy crawl focused`` command, the SQLite page store."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from tests.crawling import crawl_one_host
from tests.loopback import Answer

pytestmark = pytest.mark.integration

TEXT = "chemistry acid molecule reaction element chemistry acid base salt"


def _page(title: str, links: str = "", head: str = "") -> str:
    return (
        f"<html><head><title>{title}</title>{head}</head>"
        f"<body><p>{title}: {TEXT}.</p>{links}</body></html>"
    )


def _stored(out: Path) -> dict[str, str]:
    """The stored pages' paths and titles."""
    con = sqlite3.connect(out / "pages.sqlite3")
    try:
        rows = con.execute("SELECT url, title FROM pages").fetchall()
    finally:
        con.close()
    return {"/" + url.split("/", 3)[3]: title for url, title in rows}


def test_a_byte_order_mark_wins_over_the_header_charset(
    project_root: Path, venv_scrapy: list[str], tmp_path: Path
) -> None:
    """UTF-16 pages that begin with their byte order mark, served as ``iso-8859-1`` (a
    server's default) or rightly as ``utf-16``: browsers and Scrapy read them by the
    mark, but their NUL bytes were stripped as stray ones, and the page was stored with
    no title and no text, its links lost."""
    marks = {
        "le": (b"\xff\xfe", "utf-16-le"),
        "be": (b"\xfe\xff", "utf-16-be"),
    }
    pages: dict[str, tuple[str, bytes]] = {}
    for name, (mark, codec) in marks.items():
        for charset in ("iso-8859-1", "utf-16"):
            path = f"/{name}-{charset}.html"
            link = f'<a href="/after-{name}-{charset}.html">a</a>'
            body = _page(f"Acid {name} {charset} 化学", link)
            pages[path] = (charset, mark + body.encode(codec))

    def answer(path: str) -> Answer:
        if path == "/":
            links = "".join(f'<a href="{p}">acid chemistry</a>' for p in pages)
            return (200, {}, _page("Home", links).encode())
        if path in pages:
            charset, body = pages[path]
            return (200, {"Content-Type": f"text/html; charset={charset}"}, body)
        if path.startswith("/after-"):
            return (200, {}, _page(f"After {path}").encode())
        return (404, {}, b"")

    out = tmp_path / "out"
    result, _ = crawl_one_host(project_root, venv_scrapy, out, answer, "CLOSESPIDER_TIMEOUT=30")
    stored = _stored(out)
    for path in pages:
        name, charset = path[1:-5].split("-", 1)
        assert stored[path] == f"Acid {name} {charset} 化学", (path, stored.get(path))
        assert f"/after-{name}-{charset}.html" in stored
    assert "focused/pages/nul_stripped" not in result.stderr


def test_robots_directives_for_another_crawler_do_not_bind_this_one(
    project_root: Path, venv_scrapy: list[str], tmp_path: Path
) -> None:
    """``X-Robots-Tag: otherbot: noindex, nofollow`` is another crawler's: its
    ``nofollow`` (read apart from the name by the comma) stopped the page's links. Those
    addressed to this crawl's name, in the header or a ``<meta name="focused">``, were
    ignored. Now both read as Google reads them: another crawler's name (a header's, or
    ``<meta name="googlebot">``) binds only that crawler, ``focused`` binds this one."""
    pages = {
        # path: (X-Robots-Tag or "", meta tag or "", stored?, its link followed?)
        "/other-header": ("otherbot: noindex, nofollow", "", True, True),
        "/googlebot-meta": ("", '<meta name="googlebot" content="noindex, nofollow">', True, True),
        "/dated": ("unavailable_after: 25 Jun 2010 15:00:00 PST", "", True, True),
        "/own-header": ("focused: noindex, nofollow", "", False, False),
        "/own-meta": ("", '<meta name="Focused" content="noindex">', False, True),
        "/everyone": ("noindex, nofollow", "", False, False),
    }

    def answer(path: str) -> Answer:
        if path == "/":
            links = "".join(f'<a href="{p}">acid chemistry</a>' for p in pages)
            return (200, {}, _page("Home", links).encode())
        if path in pages:
            header, meta, _, _ = pages[path]
            body = _page(f"Acid {path[1:]}", f'<a href="{path}-link.html">acid</a>', meta)
            return (200, {"X-Robots-Tag": header} if header else {}, body.encode())
        if path.endswith("-link.html"):
            return (200, {}, _page(f"Linked {path}").encode())
        return (404, {}, b"")

    out = tmp_path / "out"
    result, site = crawl_one_host(project_root, venv_scrapy, out, answer, "CLOSESPIDER_TIMEOUT=30")
    stored = _stored(out)
    for path, (_, _, kept, followed) in pages.items():
        assert path in site.log  # every page is fetched
        assert (path in stored) is kept, path
        assert (f"{path}-link.html" in site.log) is followed, path
    assert "'focused/pages/noindex': 3" in result.stderr


def test_links_inside_a_template_are_not_followed(
    project_root: Path, venv_scrapy: list[str], tmp_path: Path
) -> None:
    """A ``<template>``'s content is inert: a browser neither shows nor follows it (a
    client-side template's ``<a href="/item/{{id}}">``). Its ``<a>`` and ``<iframe>``
    were followed as the page's links; now they are counted and dropped, as the links
    in a comment or a ``<script type="text/template">`` (which lxml reads as text)."""
    inert = (
        '<template id="row"><tr><td><a href="/template-a.html">acid</a></td></tr>'
        '<iframe src="/template-frame.html"></iframe></template>'
        '<!-- <a href="/comment-a.html">acid</a> -->'
        '<script type="text/template"><a href="/script-a.html">acid</a></script>'
    )

    def answer(path: str) -> Answer:
        if path == "/":
            links = inert + '<a href="/shown.html">acid chemistry</a>'
            return (200, {}, _page("Home", links).encode())
        if path.endswith(".html"):
            return (200, {}, _page(f"Acid {path}").encode())
        return (404, {}, b"")

    out = tmp_path / "out"
    result, site = crawl_one_host(project_root, venv_scrapy, out, answer, "CLOSESPIDER_TIMEOUT=30")
    assert "/shown.html" in site.log
    fetched = {p for p in site.log if p not in ("/", "/robots.txt", "/shown.html")}
    assert fetched == set()
    assert "'focused/links/ignored/template': 1" in result.stderr
