"""One page cannot cost the crawl much: the link cap (FOCUSED_MAX_LINKS_PER_PAGE) reads at
most so many link elements, and an RSS/Atom feed gives its items' links (pure: no crawl;
the hostile crawl of tests/test_hostile.py checks them end to end)."""

from __future__ import annotations

from collections import Counter

import pytest
from scrapy.http import HtmlResponse, XmlResponse

from focused.robustness import FocusedLinkExtractor, read_feed
from focused.web.sandbox import generate_site, hostile

BASE = "http://127.0.0.1:8000"


@pytest.fixture(scope="module")
def site():
    return generate_site(seed=7, pages=600, mode="hostile")


def html(path: str, body: bytes) -> HtmlResponse:
    return HtmlResponse(BASE + path, body=body, encoding="utf-8")


def test_under_the_cap_the_links_are_scrapys(site) -> None:
    capped, whole = FocusedLinkExtractor(max_links=1000), FocusedLinkExtractor()
    html_pages = [p for p, t in site.content_types.items() if t.startswith("text/html")]
    html_pages += [p for p in site.pages if p not in site.content_types and p.endswith(".html")]
    assert len(html_pages) > 500
    for path in html_pages:
        response = HtmlResponse(
            BASE + path,
            body=site.pages[path],
            headers={"Content-Type": site.content_types.get(path, "text/html")},
        )
        got = [(link.url, link.text) for link in capped.extract_links(response)]
        assert got == [(link.url, link.text) for link in whole.extract_links(response)], path


def test_a_page_of_200000_links_is_read_to_the_cap() -> None:
    counted: Counter[str] = Counter()

    def count(key: str, n: int = 1) -> None:
        counted[key] += n

    page = html("/hostile/many-links.html", hostile.many_links_page())
    links = FocusedLinkExtractor(count=count, max_links=1000).extract_links(page)
    assert len(links) == 1000
    assert links[0].url == BASE + "/hostile/after-many-links.html"
    assert [link.url for link in links[1:3]] == [
        BASE + "/hostile/forbidden/0",
        BASE + "/hostile/forbidden/1",
    ]
    assert counted == {"focused/links/capped": hostile.MANY_LINKS + 1 - 1000}
    # duplicates and dropped schemes count against the elements read, not the links kept
    body = b"".join(b'<a href="/same">x</a><a href="mailto:a@b">m</a>' for _ in range(10))
    links = FocusedLinkExtractor(count=count, max_links=6).extract_links(html("/", body))
    assert [link.url for link in links] == [BASE + "/same"]
    assert counted["focused/links/capped"] == hostile.MANY_LINKS + 1 - 1000 + 14


def feed_response(site, path: str) -> XmlResponse:
    return XmlResponse(
        BASE + path, body=site.pages[path], headers={"Content-Type": site.content_types[path]}
    )


@pytest.mark.parametrize("path", list(hostile.FEED_ITEMS))
def test_feed_items_are_links_with_their_titles(site, path: str) -> None:
    counted: list[str] = []
    feed = read_feed(feed_response(site, path), count=lambda key, n=1: counted.append(key))
    assert feed is not None
    assert [(link.url, link.text) for link in feed.links] == [
        (BASE + p, title) for p, title in hostile.FEED_ITEMS[path]
    ]
    assert feed.title.startswith("Chemistry")
    assert hostile.FEED_ITEMS[path][0][1] in feed.text
    if path.endswith(".atom"):  # an enclosure is not the entry's page
        assert not any("nope.mp3" in link.url for link in feed.links)
    else:
        assert counted == ["focused/links/ignored/mailto"]


def test_feed_links_are_capped(site) -> None:
    counted: Counter[str] = Counter()
    feed = read_feed(
        feed_response(site, "/hostile/feed.rss"),
        max_links=1,
        count=lambda key, n=1: counted.update({key: n}),
    )
    assert feed is not None and len(feed.links) == 1
    assert counted["focused/links/capped"] == 2  # the second item and the mailto one


def test_what_is_not_a_feed(site) -> None:
    assert read_feed(html("/", site.pages["/"])) is None  # HTML never is
    sitemap = b'<?xml version="1.0"?><urlset><url><loc>http://h/a</loc></url></urlset>'
    assert read_feed(XmlResponse(BASE + "/sitemap.xml", body=sitemap)) is None
    rss_as_xml = XmlResponse(
        BASE + "/f", body=site.pages["/hostile/feed.rss"], headers={"Content-Type": "text/xml"}
    )
    assert read_feed(rss_as_xml) is not None  # by its root
    typed = XmlResponse(
        BASE + "/f",
        body=b"<?xml version='1.0'?><broken",
        headers={"Content-Type": "application/rss+xml"},
    )
    feed = read_feed(typed)
    assert feed is None or feed.links == []


def test_pager_links_and_frames_share_the_page_cap_with_its_a_links() -> None:
    """The ``<link rel="next">`` and frame links of a page are read within the one cap
    of its link elements, after its ``<a>``: 1500 ``<a>``, 1500 ``<iframe>`` and 10
    ``<link rel="next">`` under a cap of 1000 gave 2000 links (1000 of each kind) and
    counted 500 unread. Now 1000 links, and every element left unread is counted."""
    counted: Counter[str] = Counter()

    def count(key: str, n: int = 1) -> None:
        counted[key] += n

    head = "".join(f'<link rel="next" href="/n/{i}">' for i in range(10))
    body = "".join(f'<a href="/a/{i}">a</a>' for i in range(1500))
    body += "".join(f'<iframe src="/f/{i}"></iframe>' for i in range(1500))
    page = html("/p.html", f"<html><head>{head}</head><body>{body}</body></html>".encode())
    links = FocusedLinkExtractor(count=count, max_links=1000).extract_links(page)
    assert [link.url for link in links] == [f"{BASE}/a/{i}" for i in range(1000)]
    assert counted == {"focused/links/capped": 500 + 1500 + 10}
    # under the cap: what the <a> leave is read in document order (the head's first)
    counted.clear()
    body = "".join(f'<a href="/a/{i}">a</a>' for i in range(600))
    body += "".join(f'<iframe src="/f/{i}"></iframe>' for i in range(300))
    head = "".join(f'<link rel="prev" href="/n/{i}">' for i in range(300))
    page = html("/p.html", f"<html><head>{head}</head><body>{body}</body></html>".encode())
    links = FocusedLinkExtractor(count=count, max_links=1000).extract_links(page)
    want = [f"/a/{i}" for i in range(600)] + [f"/n/{i}" for i in range(300)]
    want += [f"/f/{i}" for i in range(100)]
    assert [link.url for link in links] == [BASE + p for p in want]
    assert counted == {
        "focused/links/capped": 200,
        "focused/links/pager": 300,
        "focused/links/frames": 100,
    }


def test_the_link_and_frame_elements_looked_at_are_bounded() -> None:
    """Every ``<link>``, ``<frame>`` and ``<iframe>`` of a page was looked at for the
    pages it may name, whatever their number (50,000 stylesheet links: 150 ms a page).
    Now at most ``max_links`` of them are looked at; the ``<link rel>`` and frames past
    them are counted unread, not followed."""
    counted: Counter[str] = Counter()
    head = '<link rel="next" href="/n/early">'
    head += '<link rel="stylesheet" href="/s.css">' * 1200
    head += '<link rel="next" href="/n/late"><link href="/no-rel">'
    body = '<a href="/a">a</a><iframe src="/f/late"></iframe><iframe></iframe>'
    page = html("/p.html", f"<html><head>{head}</head><body>{body}</body></html>".encode())
    links = FocusedLinkExtractor(
        count=lambda key, n=1: counted.update({key: n}), max_links=1000
    ).extract_links(page)
    assert [link.url for link in links] == [f"{BASE}/a", f"{BASE}/n/early"]
    # past the 1000 looked at: 201 stylesheets, the late next and the late iframe
    assert counted == {"focused/links/capped": 203, "focused/links/pager": 1}
    # with no cap (0), all are looked at
    links = FocusedLinkExtractor().extract_links(page)
    assert [link.url for link in links][-2:] == [f"{BASE}/n/late", f"{BASE}/f/late"]
