"""The URL a ``scrapy.Request`` keeps of a link, made once per URL.

A ``scrapy.Request`` built from a URL keeps ``w3lib.url.safe_url_string(url, "utf-8")``
(its ``_set_url``): two URL parses and a quoting of each part, ~15 us. A crawl builds a
request for every link it has not fetched yet, and most of those are links it has found
before on other pages (three in four on wikispeedia): :class:`SafeUrls` keeps what
``safe_url_string`` made of the URLs seen last, and the request is built from that
result with Scrapy's ``verbatim_url`` meta key (its URL taken as given), which gives
the request the same URL at the cost of a dictionary lookup.
"""

from __future__ import annotations

from w3lib.url import safe_url_string

from focused.bounded import remember

__all__ = ["SafeUrls"]


class SafeUrls:
    """``safe_url_string(url, "utf-8")`` (what ``scrapy.Request`` makes of ``url`` with
    its default encoding), for the last ``size`` URLs at most (the memo is emptied when
    full; ~2 MB at 8,192 URLs of ~80 characters)."""

    def __init__(self, size: int = 1 << 13) -> None:
        self.size = size
        self._made: dict[str, str] = {}

    def of(self, url: str) -> str:
        """The request URL of ``url``; raises ``ValueError`` as ``safe_url_string`` does
        (for example for a port out of range)."""
        made = self._made.get(url)
        if made is None:
            made = safe_url_string(url, "utf-8")
            made = remember(self._made, url, url if made == url else made, self.size)
        return made

    def __len__(self) -> int:
        return len(self._made)
