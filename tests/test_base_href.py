"""A ``<base href>`` that makes no URL leaves the page a page.

w3lib's ``get_base_url`` raises ``ValueError`` for ``http://[::1``, a port out of range
or a lone surrogate; Scrapy's selector, link extractor and meta refresh all call it, so
the spider lost such a page with a traceback ("Spider error processing"). A real crawl of
a loopback site on 127.0.0.2 shows the page stored and its relative link followed against
the page's own URL, as browsers do.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from focused.robustness import settle_base_url
from tests.crawling import crawl_one_host
from tests.loopback import Answer

WORDS = b"chemistry acid molecule reaction "


def _page(title: bytes, head: bytes = b"", links: bytes = b"") -> bytes:
    return b"<html><head>%s<title>%s</title></head><body>%s%s</body></html>" % (
        head,
        title,
        title * 50,
        links,
    )


@pytest.mark.parametrize(
    "href", ["http://[::1", "http://h.test:99999/", "//[", "https://[::1]:-1/", "http://x:abc/"]
)
def test_a_base_that_makes_no_url_is_the_pages_own_url(href: str) -> None:
    from scrapy.http import HtmlResponse
    from scrapy.utils.response import get_base_url

    body = b'<head><base href="%s"></head><a href="b.html">b</a>' % href.encode()
    response = HtmlResponse("http://h.org/dir/a.html", body=body)
    assert settle_base_url(response)
    assert get_base_url(response) == "http://h.org/dir/a.html"
    assert response.css("a::attr(href)").get() == "b.html"
    good = HtmlResponse("http://h.org/a.html", body=b'<base href="http://g.org/x/">')
    assert not settle_base_url(good)
    assert get_base_url(good) == "http://g.org/x/"


def test_a_page_whose_base_makes_no_url_is_stored_and_its_links_followed(
    project_root: Path, venv_scrapy: list[str], tmp_path: Path
) -> None:
    def answer(path: str) -> Answer:
        if path == "/":
            return (200, {}, _page(b"chemistry acid", links=b'<a href="/dir/a.html">acid</a>'))
        if path == "/dir/a.html":
            head = b'<base href="http://[::1">'
            return (200, {}, _page(b"acid reaction", head, b'<a href="b.html">acid</a>'))
        if path == "/dir/b.html":
            return (200, {}, _page(b"molecule chemistry"))
        return (404, {}, b"")

    out = tmp_path / "out"
    result, site = crawl_one_host(project_root, venv_scrapy, out, answer, "CLOSESPIDER_TIMEOUT=30")
    assert "ERROR" not in result.stderr
    con = sqlite3.connect(out / "pages.sqlite3")
    try:
        urls = {url for (url,) in con.execute("SELECT url FROM pages")}
    finally:
        con.close()
    assert urls == {f"{site.url}/", f"{site.url}/dir/a.html", f"{site.url}/dir/b.html"}
    assert "'focused/pages/bad_base': 1" in result.stderr
