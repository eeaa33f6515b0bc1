"""Scrapy glue that puts the link strategies where Scrapy can act on them."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Iterable, Iterator
from typing import TYPE_CHECKING, Any

from scrapy import Request, signals
from scrapy.spidermiddlewares.base import BaseSpiderMiddleware

from focused import config
from focused import signals as focused_signals
from focused.ranking.learning import META_ANCHOR, META_CONTEXT
from focused.strategies import Link, LinkScore, Parent

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.http import Response
    from scrapy.statscollectors import StatsCollector

logger = logging.getLogger(__name__)

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
    ``FOCUSED_BSBS_DEPTH``, ``FOCUSED_TITLE_WEIGHT``, ``FOCUSED_LEARNING_*``. Stats:
    ``focused/links/scored``, ``focused/links/dropped``, ``focused/ranking/learning/*``.

    A strategy that learns (``learning``, issue 8) gets two more things. Feedback: when
    the spider's output for a page reaches this middleware, the page is the outcome of
    the link that led to it, and ``strategy.observe(...)`` hears it (page relevance, page
    text, the request meta of that link) *before* the page's own links are scored. Batch
    scoring: the requests of one page are held until its item (or the end of the output)
    and scored with one ``strategy.score_links(parent, links)`` call; they leave in the
    order the spider yielded them, before the item.
    """

    def __init__(self, strategy: Any, stats: StatsCollector | None = None) -> None:
        self.strategy = strategy
        self.stats = stats
        self._parent_of: tuple[int, Parent] | None = None
        self._score_links = getattr(strategy, "score_links", None)
        self._observe = getattr(strategy, "observe", None)
        # per-link stats counted here, added to the stats once per page (a stats call
        # costs ~1.5 us in Scrapy 2.19, ~40 links a page)
        self._counts: dict[str, int] = {}
        self._counted: dict[str, int] = {}
        self._rescores = bool(getattr(strategy, "rescores", False))
        self._drop_text = self._score_links is not None and not getattr(
            strategy, "keeps_link_text", True
        )
        self._warned_no_rescore = False

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> FocusedPriorityMiddleware:
        topic = getattr(crawler.spider, "topic", None)  # thresholds the topic overrides
        targets = getattr(crawler.spider, "targets", frozenset())  # the oracle reads them
        o = cls(config.strategy(crawler.settings, topic, targets=targets), crawler.stats)
        o.crawler = crawler
        crawler.signals.connect(o._flush_counts, signal=signals.spider_closed)
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
            self._flush_counts()
        else:
            score = self.strategy.score(
                self._parent(response), request.url, request.meta.get("anchor_relevance", 0.0)
            )
        if score is None:
            self._inc("focused/links/dropped")
            return None
        self._inc("focused/links/scored")
        self._apply(request, score)
        return request

    # --- learning strategies: feedback and batch scoring (issue 8) -----------------
    def process_spider_output(
        self, response: Response | None, result: Iterable[Any], spider: Any = None
    ) -> Iterable[Any]:
        if self._score_links is None or response is None:
            yield from super().process_spider_output(response, result)
            return
        pending: list[Request] = []
        for o in result:
            if isinstance(o, Request):
                pending.append(o)
                continue
            yield from self._page_done(pending, o, response)
            pending = []
        yield from self._scored(pending, response)

    async def process_spider_output_async(
        self, response: Response | None, result: AsyncIterator[Any], spider: Any = None
    ) -> AsyncIterator[Any]:
        if self._score_links is None or response is None:
            async for o in super().process_spider_output_async(response, result):
                yield o
            return
        pending: list[Request] = []
        async for o in result:
            if isinstance(o, Request):
                pending.append(o)
                continue
            for out in self._page_done(pending, o, response):
                yield out
            pending = []
        for out in self._scored(pending, response):
            yield out

    def _page_done(self, pending: list[Request], item: Any, response: Response) -> Iterator[Any]:
        """The page's item arrived: learn from the page, then score its held links."""
        self._feedback(response)
        yield from self._scored(pending, response)
        item = self.get_processed_item(item, response)
        if item is not None:
            yield item

    def get_processed_item(self, item: Any, response: Response | None) -> Any:
        self._flush_counts()  # the page's item comes after its links
        return item

    def _feedback(self, response: Response) -> None:
        """Tell the strategy the outcome of the link that led to ``response``."""
        page = response.meta.get(PAGE_META)
        if self._observe is None or page is None or page.get("observed"):
            return
        page["observed"] = True
        self._observe(
            url=response.url,
            page_relevance=float(page.get("page_relevance", 0.0)),
            relevant=bool(page.get("relevant", False)),
            text=page.pop("text", ""),
            link=response.meta,
            terms=page.pop("terms", None),
        )
        if self.stats is not None and hasattr(self.strategy, "stats"):
            for key, value in self.strategy.stats().items():
                self.stats.set_value(f"focused/ranking/learning/{key}", value)
        crawler = getattr(self, "crawler", None)
        if self._rescores and crawler is not None:
            # the scheduler re-orders its waiting links when it is time (a frontier that
            # cannot, the Redis one, does not listen: priorities stay as found)
            heard = crawler.signals.send_catch_log(
                focused_signals.frontier_rescore, rescorer=self.strategy.rescore
            )
            if not heard and not self._warned_no_rescore:
                self._warned_no_rescore = True
                logger.info(
                    "focused: this frontier does not rescore waiting links; their"
                    " priorities stay as found"
                )

    def _scored(self, requests: list[Request], response: Response) -> Iterator[Request]:
        """``requests`` of one page with their priorities, scored in one batch."""
        if not requests:
            return
        todo = [r for r in requests if "link_value" not in r.meta]
        scores: dict[int, LinkScore | None] = {}
        if todo:
            links = [
                Link(
                    r.url,
                    r.meta.get("anchor_relevance", 0.0),
                    r.meta.get(META_ANCHOR, ""),
                    r.meta.get(META_CONTEXT, ""),
                )
                for r in todo
            ]
            batch = self._score_links(self._parent(response), links)
            scores = {id(r): s for r, s in zip(todo, batch, strict=True)}
        for request in requests:
            if id(request) not in scores:  # already scored (a retry or a redirect)
                yield request
                continue
            score = scores[id(request)]
            if score is None:
                self._inc("focused/links/dropped")
                continue
            self._inc("focused/links/scored")
            self._apply(request, score)
            if self._drop_text:  # scored: the text is not needed again
                request.meta.pop(META_ANCHOR, None)
                request.meta.pop(META_CONTEXT, None)
            yield request

    @staticmethod
    def _apply(request: Request, score: LinkScore) -> None:
        request.priority = score.priority
        request.meta["link_value"] = score.value
        request.meta["m"] = score.m
        request.meta["hops"] = score.hops
        extra = getattr(score, "meta", None)  # what a learning strategy must see again
        if extra:
            request.meta.update(extra)

    def _inc(self, key: str) -> None:
        counts = self._counts
        counts[key] = counts.get(key, 0) + 1
        if key not in self._counted:  # the first one at once: the stat exists from then on
            self._flush_counts()

    def _flush_counts(self, **kwargs: Any) -> None:
        """Add what :meth:`_inc` counted since the last time to the stats."""
        if self.stats is None:
            return
        counted = self._counted
        for key, n in self._counts.items():
            if n != counted.get(key, 0):
                self.stats.inc_value(key, n - counted.get(key, 0))
                counted[key] = n
