"""A page's robots meta tags and ``rel=canonical``, read by the real focused spider (built
by Scrapy's ``get_crawler``) from real responses, in every encoding a page may come in."""

from __future__ import annotations

import codecs
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from scrapy.http import HtmlResponse
from scrapy.utils.test import get_crawler

from focused.spiders.focused import FocusedSpider

ROBOTS_PAGE = (
    '<html><head><title>Acid</title><meta name="ROBOTS" content="noindex,nofollow">'
    '<link rel="canonical" href="/the-acid-page"></head>'
    '<body><p>acid chemistry</p><a href="/x">acid</a></body></html>'
)


def spider(topic: Path, **settings: Any) -> FocusedSpider:
    """The focused spider of a crawl with ``settings`` (a topic of loopback seeds)."""
    out = topic.parent / "out"
    crawler = get_crawler(FocusedSpider, {"FOCUSED_OUTPUT_DIR": str(out), **settings})
    return crawler._create_spider(topic=str(topic))


# (encoding the body is in, the byte order mark it begins with, the response's encoding)
WIDE = [
    ("utf-16-le", codecs.BOM_UTF16_LE, "utf-16-le"),
    ("utf-16-be", codecs.BOM_UTF16_BE, "utf-16-be"),
    ("utf-16-le", b"", "utf-16-le"),  # no mark: decoded by its header
    ("utf-32-le", codecs.BOM_UTF32_LE, "utf-32-le"),
]


@pytest.mark.parametrize(("codec", "mark", "encoding"), WIDE)
def test_a_wide_pages_robots_meta_tag_and_canonical_are_read(
    tmp_topic: Callable[..., Path], codec: str, mark: bytes, encoding: str
) -> None:
    """A UTF-16/32 page's ``<meta name=robots content="noindex,nofollow">`` and its
    ``rel=canonical`` were looked for as ASCII bytes before the XPath ran: the words are
    ``r\\x00o\\x00...`` there, so neither was ever read (its links followed, its noindex
    stored). Now a wide page's head is always read."""
    s = spider(tmp_topic())
    r = HtmlResponse("http://h/page", body=mark + ROBOTS_PAGE.encode(codec), encoding=encoding)
    assert r.xpath("//title/text()").get() == "Acid"  # the page itself decodes
    assert s._robots(r) == {"noindex", "nofollow"}
    assert s._canonical(r) == "http://h/the-acid-page"
    plain = HtmlResponse("http://h/page", body=ROBOTS_PAGE.encode())
    assert s._robots(plain) == {"noindex", "nofollow"}
    assert s._canonical(plain) == "http://h/the-acid-page"


@pytest.mark.parametrize("bot_name", ["o'bot", "my bot", "a]b", 'say"x'])
def test_a_bot_name_no_header_can_give_does_not_break_the_robots_meta_tags(
    tmp_topic: Callable[..., Path], bot_name: str
) -> None:
    """A ``BOT_NAME`` with a quote (``o'bot``) was pasted into the XPath that reads the
    robots meta tags: every page with one raised ``ValueError: XPath error``. Only names
    a crawler's name can be (``[A-Za-z0-9_.-]``) are this crawl's; the user agent's token
    and ``robots`` still count."""
    s = spider(tmp_topic(), BOT_NAME=bot_name, USER_AGENT="acidbot/1.0 (+http://127.0.0.1/)")
    assert s.robots_agents == {"acidbot"}
    page = HtmlResponse("http://h/page", body=ROBOTS_PAGE.encode())
    assert s._robots(page) == {"noindex", "nofollow"}
    own = b'<html><head><meta name="AcidBot" content="nofollow"></head><body></body></html>'
    assert s._robots(HtmlResponse("http://h/own", body=own)) == {"nofollow"}
