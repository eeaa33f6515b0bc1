"""FolderJoins: urllib's urljoin, shared by the pages of a folder."""

from __future__ import annotations

import html
from urllib.parse import urljoin, urlsplit

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scrapy.http import HtmlResponse

from focused.robustness import FocusedLinkExtractor
from focused.web.urljoins import FolderJoins, backslashes_as_slashes

BASES = [
    "http://h.example/a/b.html",
    "http://h.example/a/c.html?q=1#top",  # same folder, another query
    "http://h.example/a/",
    "http://h.example",
    "http://h.example/",
    "http://h.example/a;p/b;q",
    "http://h.example/a/b?x/y",
    "http://h.example/a/One?x=1",
    "http://h.example/a/Two",
    "https://h.example/a/b.html",
    "http://g.example/a/b.html",
    "http://g.example/a/b/../c/d.html",
    "",
    "foo",
    "/a/b",
    "http://[::1",  # urlsplit refuses it
]
HREFS = [
    "", "?q", "#f", "x", "../x", "./", "..", ".", "/abs", "//o.example/p", "http://z.example/",
    "http:rel", "HTTP:rel", "mailto:a@b", ";p", "a?b#c", "../../../x", "x/../y", "a b",
    "javascript:void(0)", "?", "#", "é/ü",
    # no path once parsed: the base's path or query is taken too
    "http:", "https:", "HTTP:", "http:?page=2", "http:#x", "//", ";", "\x0b?page=2", "\x01",
]  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(BASES), st.sampled_from(HREFS)), max_size=40))
def test_folder_joins_are_urljoins(pairs: list[tuple[str, str]]) -> None:
    joins = FolderJoins(size=16)  # small: it is also emptied on the way
    for base, href in pairs:
        try:
            expected: str | type[ValueError] = urljoin(base, href)
        except ValueError:
            expected = ValueError
        try:
            got: str | type[ValueError] = joins.of(base)(href)
        except ValueError:
            got = ValueError
        assert got == expected, (base, href)


def test_a_folder_shares_its_joins_and_other_folders_do_not() -> None:
    joins = FolderJoins()
    first = joins.of("http://h.example/wiki/A.html")
    assert first("../img/x.png") == "http://h.example/img/x.png"
    assert len(joins._joins) == 1
    # another page of the folder: the join is looked up, not made again
    joins._joins[next(iter(joins._joins))] = "http://cached.example/"
    assert joins.of("http://h.example/wiki/B.html?x=1")("../img/x.png") == "http://cached.example/"
    # another folder, host or scheme joins on its own
    assert joins.of("http://h.example/other/B.html")("../img/x.png") == "http://h.example/img/x.png"
    assert (
        joins.of("https://h.example/wiki/B.html")("../img/x.png") == "https://h.example/img/x.png"
    )
    # a query or fragment alone takes the page's own URL: never shared
    assert joins.of("http://h.example/wiki/C.html")("?p=2") == "http://h.example/wiki/C.html?p=2"
    assert joins.of("http://h.example/wiki/D.html")("#s") == "http://h.example/wiki/D.html#s"


@pytest.mark.parametrize(
    ("href", "url"),
    [
        ("\\\\127.0.0.2\\page", "http://127.0.0.2/page"),  # another host, as browsers read it
        ("/\\127.0.0.3\\x", "http://127.0.0.3/x"),
        ("http:\\\\127.0.0.4\\w", "http://127.0.0.4/w"),
        ("HTTP://127.0.0.5\\v", "http://127.0.0.5/v"),
        ("..\\x\\y", "http://127.0.0.1:8000/a/x/y"),  # dot segments resolved
        (" sub\\p.html?q=a\\b#f\\g ", "http://127.0.0.1:8000/a/b/sub/p.html?q=a%5Cb#f%5Cg"),
        ("plain/p.html", "http://127.0.0.1:8000/a/b/plain/p.html"),
    ],
)
@pytest.mark.parametrize("fast", [True, False], ids=["fast", "scrapy"])
def test_backslashes_in_an_href_are_slashes_as_in_a_browser(
    href: str, url: str, fast: bool
) -> None:
    """The WHATWG URL standard reads ``\\`` as ``/`` in an http(s) URL (before its query):
    ``<a href="\\\\127.0.0.2\\page">`` is a link to another host. The extractor took it
    for a path on the page's own host (``http://127.0.0.1:8000/a/b///127.0.0.2/page``:
    a page that does not exist, in the crawl's scope although the link leaves it). The
    link's host is now the one a browser goes to, and the scope checks see it."""
    page = HtmlResponse(
        "http://127.0.0.1:8000/a/b/c.html",
        body=f'<a href="{html.escape(href)}">x</a>'.encode(),
        encoding="utf-8",
    )
    extractor = FocusedLinkExtractor() if fast else FocusedLinkExtractor(allow=())
    links, url_of = extractor.links_and_urls(page)
    assert [link.url for link in links] == [url]
    assert url_of(href) == url
    # what OffsiteMiddleware and the address filter read: the host a browser goes to
    assert urlsplit(links[0].url).hostname == urlsplit(url).hostname


def test_backslashes_are_left_in_other_schemes_and_in_queries() -> None:
    assert backslashes_as_slashes("mailto:a\\b") == "mailto:a\\b"
    assert backslashes_as_slashes("a\\b?c\\d#e\\f") == "a/b?c\\d#e\\f"
    assert backslashes_as_slashes("a\\b#e?\\f") == "a/b#e?\\f"
    assert backslashes_as_slashes("FILE:\\\\x") == "FILE://x"
