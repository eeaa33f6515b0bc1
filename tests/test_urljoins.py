"""FolderJoins: urllib's urljoin, shared by the pages of a folder."""

from __future__ import annotations

from urllib.parse import urljoin

from hypothesis import given, settings
from hypothesis import strategies as st

from focused.web.urljoins import FolderJoins

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
