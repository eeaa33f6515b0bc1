"""Scrapy glue that puts the link strategies where Scrapy can act on them."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any

from scrapy import Request, signals
from scrapy.exceptions import NotConfigured
from scrapy.spidermiddlewares.base import BaseSpiderMiddleware

from focused import meta
from focused import signals as focused_signals
from focused.habits import ignored_by_strategy, other_scheduler
from focused.meta import PageFacts
from focused.strategies import Link, LinkScore, Parent, Strategy

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.http import Response
    from scrapy.statscollectors import StatsCollector

logger = logging.getLogger(__name__)

_NO_FACTS = PageFacts()


class FocusedPriorityMiddleware(BaseSpiderMiddleware):
    """Give every request the spider yields its priority under the crawl's strategy.

    Like Scrapy's ``DepthMiddleware`` does for depth, this spider middleware sees each
    request before it reaches the scheduler, so the priority it sets decides the crawl
    order (a downloader middleware would run after the request left the queue: too late).
    The strategy is the spider's (``spider.strategy``, a
    :class:`~focused.strategies.base.Strategy` built once per crawl); for the default
    ``annealing`` and for ``genetic`` it applies the m-value rule (Liu, Xia & Xu 2010).
    A spider without a strategy (``scrapy fetch``, ``shell``, ``bench``, ``runspider``
    of another spider in the project) gets no such middleware (``NotConfigured``): its
    requests pass unchanged (:mod:`focused.scope`).

    It sets ``request.priority`` (integer, higher first) and the meta keys of
    :mod:`focused.meta`: :data:`~focused.meta.LINK_VALUE` (the float the annealing
    scheduler compares), :data:`~focused.meta.M`, :data:`~focused.meta.HOPS` and what
    the strategy adds (:attr:`~focused.strategies.base.LinkScore.meta`). A link the
    strategy drops (a side channel past ``FOCUSED_MAX_TUNNEL_HOPS``, a BS-BS branch past
    ``FOCUSED_BSBS_DEPTH``, a link of an irrelevant page under ``gao``) is removed. A
    request that already has a value (a retry, a redirect) is left alone.

    The requests of one page are held until its item (or the end of the output) and
    scored with one ``strategy.score_links(parent, links)`` call; they leave in the
    order the spider yielded them, before the item. When the item arrives the page is
    the outcome of the link that led to it: ``strategy.observe(...)`` hears it (the
    :class:`~focused.meta.PageFacts` the spider left in ``response.meta[focused.meta.
    PAGE]`` and the request meta of that link), once per response, *before* the page's
    own links are scored; then a strategy that ``rescores`` asks the frontier to
    re-order its waiting links (:data:`focused.signals.frontier_rescore`).

    At start it names, in one WARNING each, a ``DEPTH_PRIORITY`` it overrides and a
    ``SCHEDULER`` that is not the focused one (:mod:`focused.habits`).

    Stats: ``focused/links/scored``, ``focused/links/dropped``,
    ``focused/<strategy>/*`` (:meth:`~focused.strategies.base.Strategy.stats`).
    """

    def __init__(self, strategy: Strategy, stats: StatsCollector | None = None) -> None:
        self.strategy = strategy
        self.stats = stats
        self.crawler: Crawler | None = None
        # the last response scored from and its Parent, the last one learnt from (kept,
        # not their id(): a later response may reuse the id of a freed one)
        self._parent_of: tuple[Response, Parent] | None = None
        self._observed: Response | None = None
        # per-link stats counted here, added to the stats once per page (a stats call
        # costs ~1.5 us in Scrapy 2.19, ~40 links a page)
        self._counts: dict[str, int] = {}
        self._counted: dict[str, int] = {}
        self._learns = strategy.learns
        self._rescores = strategy.rescores
        self._stats_prefix = f"focused/{strategy.name or type(strategy).__name__}/"
        # scored: the link text is not needed again (unless the strategy keeps it)
        self._drop_text = strategy.link_evidence and not strategy.keeps_link_text
        self._warned_no_rescore = False
        #: the scheduler's "would this link be no promotion of a waiting URL?"
        #: (:meth:`focused.scheduler.FocusedScheduler.drop_waiting`); None: all go on
        self.drop_waiting: Callable[..., bool] | None = None
        #: ``URLLENGTH_LIMIT``: a longer URL is left to Scrapy's ``UrlLengthMiddleware``
        self.url_length_limit = 0

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> FocusedPriorityMiddleware:
        strategy = getattr(crawler.spider, "strategy", None)
        if not isinstance(strategy, Strategy):
            # not the focused spider (scrapy fetch, shell, bench, runspider): its requests
            # pass unscored (focused.scope)
            logger.debug("focused: FocusedPriorityMiddleware left out: the spider has no strategy")
            raise NotConfigured
        o = cls(strategy, crawler.stats)
        o.crawler = crawler
        name = strategy.name or type(strategy).__name__
        lines = ignored_by_strategy(crawler.settings, name)
        scheduler = other_scheduler(crawler.settings, name)
        for line in [*lines, *([scheduler] if scheduler else [])]:
            logger.warning("focused: %s", line)
        o.url_length_limit = crawler.settings.getint("URLLENGTH_LIMIT")
        crawler.signals.connect(o._flush_counts, signal=signals.spider_closed)
        crawler.signals.connect(o._frontier_opened, signal=focused_signals.frontier_opened)
        return o

    def _frontier_opened(
        self, drop_waiting: Callable[..., bool] | None = None, **kwargs: Any
    ) -> None:
        self.drop_waiting = drop_waiting

    def _dropped_as_waiting(self, request: Request) -> bool:
        """Whether the scheduler counted ``request`` as filtered: a plain link, scored,
        to a URL that waits at a priority at least as high (it would ignore it). Such a
        link goes no further: not through the spider middlewares below this one, the
        engine's ``request_scheduled`` and ``request_dropped`` signals, nor the
        scheduler. The strategy has scored it (what it learns from a repeated link, it
        has learnt)."""
        drop = self.drop_waiting
        if drop is None or request.dont_filter or request.method != "GET" or request.body:
            return False
        url = request.url
        limit = self.url_length_limit
        if (limit and len(url) > limit) or "redirect_urls" in request.meta:
            return False
        return drop(url, request.priority, request.meta.get(meta.PARENT_URL))

    def _parent(self, response: Response) -> Parent:
        cached = self._parent_of
        if cached is not None and cached[0] is response:
            return cached[1]
        got = response.meta
        page = got.get(meta.PAGE, _NO_FACTS)
        parent = Parent(
            url=response.url,
            page_relevance=page.page_relevance,
            relevant=page.relevant,
            body_relevance=page.body_relevance,
            m=got.get(meta.M, 0.0),
            hops=got.get(meta.HOPS, 0),
            depth=got.get(meta.DEPTH, 0),
            link_count=page.link_count,
            waste=page.waste,
        )
        self._parent_of = (response, parent)
        return parent

    def get_processed_request(self, request: Request, response: Response | None) -> Request | None:
        """A request outside a page's output (a seed from ``start()``)."""
        if meta.LINK_VALUE in request.meta:  # already scored (e.g. a retry or a redirect)
            return request
        if response is None:
            score: LinkScore | None = self.strategy.seed()
            self._flush_counts()
        else:
            score = self.strategy.score(self._parent(response), _link(request))
        if score is None:
            self._inc("focused/links/dropped")
            return None
        self._inc("focused/links/scored")
        self._apply(request, score)
        return request

    # --- a page's output: feedback, then its links in one batch ---------------------
    def process_spider_output(
        self, response: Response | None, result: Iterable[Any], spider: Any = None
    ) -> Iterable[Any]:
        if response is None:
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
        if response is None:
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
        if self._learns:
            self._feedback(response)
        yield from self._scored(pending, response)
        if self.crawler is not None:
            self.crawler.signals.send_catch_log(focused_signals.links_queued, response=response)
        item = self.get_processed_item(item, response)
        if item is not None:
            yield item

    def get_processed_item(self, item: Any, response: Response | None) -> Any:
        self._flush_counts()  # the page's item comes after its links
        return item

    def _feedback(self, response: Response) -> None:
        """Tell the strategy the outcome of the link that led to ``response`` (once)."""
        page = response.meta.get(meta.PAGE)
        if not isinstance(page, PageFacts) or self._observed is response:
            return
        self._observed = response
        self.strategy.observe(response.url, page, response.meta)
        if self.stats is not None:
            prefix = self._stats_prefix
            for key, value in self.strategy.stats().items():
                self.stats.set_value(prefix + key, value)
        crawler = self.crawler
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
        todo = [r for r in requests if meta.LINK_VALUE not in r.meta]
        scores: dict[int, LinkScore | None] = {}
        if todo:
            batch = self.strategy.score_links(self._parent(response), [_link(r) for r in todo])
            scores = {id(r): s for r, s in zip(todo, batch, strict=True)}
        drop_text = self._drop_text
        waiting = self.drop_waiting is not None
        for request in requests:
            if id(request) not in scores:  # already scored (a chrome link, retry, redirect)
                if not (waiting and self._dropped_as_waiting(request)):
                    yield request
                continue
            score = scores[id(request)]
            if score is None:
                self._inc("focused/links/dropped")
                continue
            self._inc("focused/links/scored")
            # the slot is scored; a strategy that needs it again has it in its meta
            request.meta.pop(meta.LINK_SLOT, None)
            self._apply(request, score)
            if waiting and self._dropped_as_waiting(request):
                continue
            if drop_text:  # scored: the text is not needed again
                request.meta.pop(meta.ANCHOR_TEXT, None)
                request.meta.pop(meta.LINK_CONTEXT, None)
            yield request

    @staticmethod
    def _apply(request: Request, score: LinkScore) -> None:
        request.priority = score.priority
        got = request.meta
        got[meta.LINK_VALUE] = score.value
        got[meta.M] = score.m
        got[meta.HOPS] = score.hops
        if score.meta:  # what the strategy must see again
            got.update(score.meta)

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


def _link(request: Request) -> Link:
    """The :class:`~focused.strategies.base.Link` a request stands for."""
    got = request.meta
    return Link(
        request.url,
        got.get(meta.ANCHOR_RELEVANCE, 0.0),
        got.get(meta.ANCHOR_TEXT, ""),
        got.get(meta.LINK_CONTEXT, ""),
        got.get(meta.LINK_SLOT, 0),
    )
