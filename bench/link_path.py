"""The way a page's links go from the spider to the scheduler, as Scrapy runs it, for
the link micro-benchmarks (:mod:`bench.done_links`, :mod:`bench.waiting_links`): a real
``FocusedSpider`` (``bfs``), ``FocusedScheduler`` and priority middleware, Scrapy's
``DepthMiddleware``, ``UrlLengthMiddleware`` and ``RefererMiddleware`` chained in the
order Scrapy calls them, and the engine's ``request_scheduled`` and ``request_dropped``
signals sent through the crawler's ``SignalManager``. No network."""

from __future__ import annotations

from typing import Any

from scrapy import signals
from scrapy.http import HtmlResponse, Request
from scrapy.spidermiddlewares.depth import DepthMiddleware
from scrapy.spidermiddlewares.referer import RefererMiddleware
from scrapy.spidermiddlewares.urllength import UrlLengthMiddleware
from scrapy.utils.test import get_crawler

from focused.items import PageItem
from focused.middlewares import FocusedPriorityMiddleware
from focused.scheduler import FocusedScheduler
from focused.spiders.focused import FocusedSpider


class LinkPath:
    """One spider, scheduler and middleware chain; :meth:`page` sends one page's links."""

    def __init__(self) -> None:
        settings = {
            "FOCUSED_STRATEGY": "bfs",
            "FOCUSED_WEB": "real",
            "FOCUSED_SEEDS": "http://127.0.0.1:9/",
        }
        self.crawler = get_crawler(FocusedSpider, settings)
        self.spider = FocusedSpider.from_crawler(self.crawler, topic="chemistry")
        self.crawler.spider = self.spider
        self.priority = FocusedPriorityMiddleware.from_crawler(self.crawler)
        self.sched = FocusedScheduler.from_crawler(self.crawler)
        # sends frontier_opened: the spider gets drop_done, the middleware drop_waiting
        self.sched.open(self.spider)
        self.middlewares: list[Any] = [
            DepthMiddleware.from_crawler(self.crawler),
            self.priority,
            UrlLengthMiddleware.from_crawler(self.crawler),
            RefererMiddleware.from_crawler(self.crawler),
        ]
        parent = Request("http://127.0.0.1:9/wiki/Chemistry.html", meta={"depth": 1})
        self.response = HtmlResponse(parent.url, body=b"<html></html>", request=parent)

    def page(self, batch: list[str]) -> int:
        """A page linking to ``batch``, its output through the chain to the scheduler;
        the number of requests that reached the scheduler."""
        spider, response, sched = self.spider, self.response, self.sched
        send = self.crawler.signals.send_catch_log
        out: Any = [r for u in batch if (r := spider._request(u, 0.3, response.url))]
        out.append(PageItem(url=response.url))
        for mw in self.middlewares:
            out = mw.process_spider_output(response, out)
        reached = 0
        for o in out:
            if isinstance(o, Request):
                reached += 1
                send(signals.request_scheduled, request=o, spider=spider)
                if not sched.enqueue_request(o):
                    send(signals.request_dropped, request=o, spider=spider)
        return reached

    def close(self) -> None:
        self.spider.close_web(self.spider)
