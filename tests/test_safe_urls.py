"""A link's request URL is made once per URL, and is the URL scrapy.Request makes of it."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from scrapy import Request
from scrapy.http import HtmlResponse
from scrapy.utils.test import get_crawler

from focused.spiders.focused import FocusedSpider
from focused.web.safeurls import SafeUrls

_PARTS = st.sampled_from(
    ["http://", "https://", "HTTP://", "h.org", "例子.com", ":8080", ":99999", "/", "a b",
     "é", "%", "%2", "%C3%A9", "?", "q=é", "&", "#", "frag ment", "\\", "[", "]", "::1",
     "@", "\t", "\ufffd", "~", "{x}", "|"]
)  # fmt: skip


def _verbatim(memo: SafeUrls, url: str) -> str:
    request = Request(memo.of(url), meta={"verbatim_url": True})
    return request.url


@settings(max_examples=300, deadline=None)
@given(st.lists(_PARTS, min_size=1, max_size=8).map("".join))
@example("http://h.org/a b?q=é#f g")
@example("http://h.org:99999/")
def test_the_made_url_is_the_url_scrapy_makes(url: str) -> None:
    memo = SafeUrls(size=4)
    try:
        want: str | type[ValueError] = Request(url).url
    except ValueError:
        want = ValueError
    for _ in range(2):  # made, then from the memo
        try:
            got: str | type[ValueError] = _verbatim(memo, url)
        except ValueError:
            got = ValueError
        assert got == want


def test_the_memo_is_bounded() -> None:
    memo = SafeUrls(size=3)
    for i in range(10):
        memo.of(f"http://h.org/{i} x")
        assert len(memo) <= 3


def _spider(tmp_path: Path) -> FocusedSpider:
    settings = {
        "FOCUSED_OUTPUT_DIR": str(tmp_path / "out"),
        "FOCUSED_WEB": "real",
        "FOCUSED_SEEDS": "http://127.0.0.1:9/",
        "FOCUSED_STRATEGY": "learning",
    }
    crawler = get_crawler(FocusedSpider, settings)
    crawler.spider = FocusedSpider.from_crawler(crawler, topic="chemistry")
    return crawler.spider


@pytest.mark.parametrize("page", ["one.html", "two.html"])
def test_link_requests_carry_scrapys_url_and_no_verbatim_flag(tmp_path: Path, page: str) -> None:
    spider = _spider(tmp_path)
    made = []
    for n, name in enumerate(("one.html", page)):  # the second: the same links, memoised
        # (its own text: a short page with the title, text and links of a page seen
        # before is that page's exact copy, whose links are not followed)
        html = (
            f"<html><head><title>Acid chemistry</title></head><body><p>acid chemistry {n}"
            ' <a href="/wiki/Acid base.html">acid base</a> and <a href="/wiki/Café.html">café</a>'
            ' and <a href="/wiki/Salt.html?q=é&amp;x=1">salt</a></p></body></html>'
        )
        url = f"http://127.0.0.1:9/wiki/{name}"
        response = HtmlResponse(url, body=html.encode(), encoding="utf-8", request=Request(url))
        requests = [r for r in spider.parse(response) if isinstance(r, Request)]
        assert len(requests) == 3
        for request in requests:
            assert "verbatim_url" not in request.meta
            assert Request(request.url).url == request.url  # what Scrapy makes of it
            # a copy with a new URL (a redirect) makes that URL safe as usual
            assert request.replace(url="http://127.0.0.1:9/a b").url.endswith("/a%20b")
        made.append(sorted(r.url for r in requests))
    assert made[0] == made[1]
    assert "http://127.0.0.1:9/wiki/Caf%C3%A9.html" in made[0]
    assert "http://127.0.0.1:9/wiki/Acid%20base.html" in made[0]
    assert len(spider.safe_urls) == 3
