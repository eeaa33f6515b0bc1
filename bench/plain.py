"""The plain-Scrapy reference crawler of the speed benchmark (``bench.speed``).

A minimal spider that does what any Scrapy crawler does and nothing focused: follow every
http(s) link of a page (Scrapy's ``LinkExtractor``), write one item per page (url, title)
to a JSON lines feed. It runs with Scrapy's default scheduler and dupefilter, without the
project's spider/downloader middlewares and pipelines:

    python -m scrapy runspider bench/plain.py -a seeds=URL[,URL...] \
        -s FEEDS='{"out/items.jsonl": {"format": "jsonlines"}}'
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any

import scrapy
from scrapy.http import Response, TextResponse
from scrapy.linkextractors import LinkExtractor
from scrapy.settings.default_settings import SCHEDULER, SCHEDULER_PRIORITY_QUEUE


class PlainSpider(scrapy.Spider):
    """Follow every link from ``-a seeds=URL,URL``; one ``{url, title}`` item per page."""

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

    def __init__(self, seeds: str = "", *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.seeds = [s for s in seeds.split(",") if s]
        self.link_extractor = LinkExtractor()

    async def start(self) -> AsyncIterator[Any]:
        for url in self.seeds:
            yield scrapy.Request(url)

    def parse(self, response: Response, **kwargs: Any) -> Iterator[Any]:
        if not isinstance(response, TextResponse):
            return
        for link in self.link_extractor.extract_links(response):
            yield scrapy.Request(link.url)
        yield {"url": response.url, "title": response.xpath("//title/text()").get("")}
