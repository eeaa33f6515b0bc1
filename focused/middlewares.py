"""Scrapy glue that puts the link strategies where Scrapy can act on them."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from scrapy.spidermiddlewares.base import BaseSpiderMiddleware

from focused import config
from focused.strategies import LinkScore, Parent

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.crawler import Crawler
    from scrapy.http import Response
    from scrapy.statscollectors import StatsCollector

#: What the spider puts in ``response.meta`` about the page it just parsed.
PAGE_META = "focused_page"


class FocusedPriorityMiddleware(BaseSpiderMiddleware):
    """Give every request the spider yields its priority under ``FOCUSED_STRATEGY``.

    Like Scrapy's ``DepthMiddleware`` does for depth, this spider middleware sees each
    request before it reaches the scheduler, so the priority it sets decides the crawl
    order (a downloader middleware would run after the request left the queue: too late).
    For the default ``annealing`` and for ``genetic`` it applies the m-value rule of
    seed 000; the other strategies are in :mod:`focused.strategies`.

    It sets ``request.priority`` (integer, higher first), ``meta["link_value"]`` (the
    float the annealing scheduler compares), ``meta["m"]`` and ``meta["hops"]``. A link
    the strategy drops (a side channel past ``FOCUSED_MAX_TUNNEL_HOPS``, a BS-BS branch
    past ``FOCUSED_BSBS_DEPTH``, a link of an irrelevant page under ``gao``) is removed.

    Settings: ``FOCUSED_STRATEGY``, ``FOCUSED_M_INITIAL``, ``FOCUSED_GENETIC_RATIO``,
    ``FOCUSED_ANCHOR_THRESHOLD``, ``FOCUSED_MAX_TUNNEL_HOPS``, ``FOCUSED_TUNNEL_WIDENING``,
    ``FOCUSED_BSBS_DEPTH``, ``FOCUSED_TITLE_WEIGHT``. Stats: ``focused/links/scored``,
    ``focused/links/dropped``.
    """

    def __init__(self, strategy: Any, stats: StatsCollector | None = None) -> None:
        self.strategy = strategy
        self.stats = stats
        self._parent_of: tuple[int, Parent] | None = None

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> FocusedPriorityMiddleware:
        topic = getattr(crawler.spider, "topic", None)  # thresholds the topic overrides
        targets = getattr(crawler.spider, "targets", frozenset())  # the oracle reads them
        o = cls(config.strategy(crawler.settings, topic, targets=targets), crawler.stats)
        o.crawler = crawler
        return o

    def _parent(self, response: Response) -> Parent:
        cached = self._parent_of
        if cached is not None and cached[0] == id(response):
            return cached[1]
        meta = response.meta
        page = meta.get(PAGE_META, {})
        parent = Parent(
            url=response.url,
            page_relevance=page.get("page_relevance", 0.0),
            relevant=page.get("relevant", False),
            body_relevance=page.get("body_relevance", 0.0),
            m=meta.get("m", 0.0),
            hops=meta.get("hops", 0),
            depth=meta.get("depth", 0),
            link_count=page.get("link_count", 0),
        )
        self._parent_of = (id(response), parent)
        return parent

    def get_processed_request(self, request: Request, response: Response | None) -> Request | None:
        if "link_value" in request.meta:  # already scored (e.g. a retry or a redirect)
            return request
        if response is None:
            score: LinkScore | None = self.strategy.seed()
        else:
            score = self.strategy.score(
                self._parent(response), request.url, request.meta.get("anchor_relevance", 0.0)
            )
        if score is None:
            self._inc("focused/links/dropped")
            return None
        self._inc("focused/links/scored")
        request.priority = score.priority
        request.meta["link_value"] = score.value
        request.meta["m"] = score.m
        request.meta["hops"] = score.hops
        return request

    def _inc(self, key: str) -> None:
        if self.stats is not None:
            self.stats.inc_value(key)
