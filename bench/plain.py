"""The plain-Scrapy reference crawler of the speed benchmark (``bench.speed``).

A minimal spider that does what any Scrapy crawler does and nothing focused: follow every
http(s) link of a page (Scrapy's ``LinkExtractor``), write one item per page (url, title)
to a JSON lines feed. It runs with Scrapy's default scheduler and dupefilter, without the
project's spider/downloader middlewares and pipelines:

    python -m scrapy runspider bench/plain.py -a seeds=URL[,URL...] \
        -s FEEDS='{"out/items.jsonl": {"format": "jsonlines"}}'

**Replay** (``-a replay=FILE``, one URL a line, with :class:`ReplayOnly` among the
downloader middlewares): fetch exactly the URLs of ``FILE``, in its order, and no other
page, while doing on each page what a plain crawl does: ``LinkExtractor`` over it, one
``scrapy.Request`` per link yielded (through Scrapy's spider middlewares, dupefilter and
priority queue, as in a plain crawl), one item. The listed requests are all in the
scheduler before the first download, above every link's priority, so they are fetched
first and in order; :class:`ReplayOnly` drops a link request should one be popped while
the last listed pages are in flight. The spider closes (``replayed``) once every listed
URL has been answered.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import scrapy
from scrapy.exceptions import CloseSpider, IgnoreRequest
from scrapy.http import Response, TextResponse
from scrapy.linkextractors import LinkExtractor
from scrapy.settings.default_settings import SCHEDULER, SCHEDULER_PRIORITY_QUEUE

#: request meta key of a listed (replayed) request
REPLAY = "plain_replay"


class ReplayOnly:
    """Downloader middleware of a replay: a request that is not a listed URL (nor a
    robots.txt) is dropped before it is downloaded (``plain/replay/dropped``)."""

    def __init__(self, stats: Any) -> None:
        self.stats = stats

    @classmethod
    def from_crawler(cls, crawler: Any) -> ReplayOnly:
        return cls(crawler.stats)

    def process_request(self, request: scrapy.Request, spider: Any = None) -> None:
        if REPLAY in request.meta or request.url.endswith("/robots.txt"):
            return
        self.stats.inc_value("plain/replay/dropped")
        raise IgnoreRequest("not a replayed URL")


class PlainSpider(scrapy.Spider):
    """Follow every link from ``-a seeds=URL,URL``; one ``{url, title}`` item per page.
    ``-a replay=FILE``: fetch exactly the URLs of ``FILE`` instead (module docstring)."""

    name = "plain"
    custom_settings = {  # noqa: RUF012 - Scrapy's own style
        "SCHEDULER": SCHEDULER,
        "SCHEDULER_PRIORITY_QUEUE": SCHEDULER_PRIORITY_QUEUE,
        "SPIDER_MIDDLEWARES": {"focused.middlewares.FocusedPriorityMiddleware": None},
        "DOWNLOADER_MIDDLEWARES": {"focused.robustness.RobustnessMiddleware": None},
        "ITEM_PIPELINES": {},
        # plain Scrapy: none of the project's extensions (its resolver is a process
        # setting, given on the command line by bench.speed)
        "EXTENSIONS": {},
    }

    def __init__(self, seeds: str = "", replay: str = "", *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.seeds = [s for s in seeds.split(",") if s]
        self.replay = (
            [u for u in Path(replay).read_text(encoding="utf-8").splitlines() if u]
            if replay
            else []
        )
        self.answered = 0
        self.link_extractor = LinkExtractor()

    async def start(self) -> AsyncIterator[Any]:
        if self.replay:
            # every listed request in the scheduler now (start() is read lazily), each
            # above the next and above every link (-1), so they leave in the list's order
            n = len(self.replay)
            for i, url in enumerate(self.replay):
                request = scrapy.Request(
                    url,
                    priority=n - i,
                    dont_filter=True,
                    meta={REPLAY: True},
                    errback=self._failed,
                )
                self.crawler.engine.crawl(request)
            return
        for url in self.seeds:
            yield scrapy.Request(url)

    def parse(self, response: Response, **kwargs: Any) -> Iterator[Any]:
        if not isinstance(response, TextResponse):
            self._answered()
            return
        priority = -1 if self.replay else 0
        for link in self.link_extractor.extract_links(response):
            yield scrapy.Request(link.url, priority=priority)
        yield {"url": response.url, "title": response.xpath("//title/text()").get("")}
        if self.replay:
            self._answered()

    def _failed(self, failure: Any) -> None:
        self._answered()

    def _answered(self) -> None:
        if self.replay:
            self.answered += 1
            if self.answered >= len(self.replay):
                raise CloseSpider("replayed")
