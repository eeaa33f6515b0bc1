"""Micro-benchmark: what a link to a URL that waits costs when it would be no promotion,
on its way to the scheduler, with and without
:meth:`focused.scheduler.FocusedScheduler.drop_waiting`.

The old path: the spider's ``scrapy.Request``, Scrapy's ``DepthMiddleware``, the
priority middleware (the strategy scores it), ``UrlLengthMiddleware`` and
``RefererMiddleware`` chained as Scrapy runs a page's output, the engine's
``request_scheduled`` signal, the scheduler's filter (the frontier ignores a push that
is no promotion) and ``request_dropped``. The new one: the same up to the priority
middleware, which drops the request once scored. A real spider and scheduler (3,000
waiting URLs, ``bfs``: the links are one level deeper than the waiting URLs), no
network. ``python -m bench.waiting_links``.
"""

from __future__ import annotations

import statistics
import time
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


def main(n: int = 3000, per_page: int = 30, reps: int = 7) -> dict[str, Any]:
    settings = {
        "FOCUSED_STRATEGY": "bfs",
        "FOCUSED_WEB": "real",
        "FOCUSED_SEEDS": "http://127.0.0.1:9/",
    }
    crawler = get_crawler(FocusedSpider, settings)
    spider = FocusedSpider.from_crawler(crawler, topic="chemistry")
    crawler.spider = spider
    priority = FocusedPriorityMiddleware.from_crawler(crawler)
    sched = FocusedScheduler.from_crawler(crawler)
    sched.open(spider)  # sends frontier_opened: the middleware gets drop_waiting
    check = priority.drop_waiting
    assert check is not None
    urls = [f"http://127.0.0.1:9/wiki/Page_{i}.html" for i in range(n)]
    for u in urls:  # waiting at depth 1
        sched.enqueue_request(Request(u, priority=-1, meta={"depth": 1}))
    mws: list[Any] = [
        DepthMiddleware.from_crawler(crawler),
        priority,
        UrlLengthMiddleware.from_crawler(crawler),
        RefererMiddleware.from_crawler(crawler),
    ]
    parent = Request("http://127.0.0.1:9/wiki/Chemistry.html", meta={"depth": 1})
    response = HtmlResponse(parent.url, body=b"<html></html>", request=parent)
    send = crawler.signals.send_catch_log
    reached = 0

    def page(batch: list[str], drop: bool) -> None:
        nonlocal reached
        priority.drop_waiting = check if drop else None
        out: Any = [r for u in batch if (r := spider._request(u, 0.3, response.url))]
        out.append(PageItem(url=response.url))
        for mw in mws:
            out = mw.process_spider_output(response, out)
        for o in out:
            if isinstance(o, Request):
                reached += 1
                send(signals.request_scheduled, request=o, spider=spider)
                if not sched.enqueue_request(o):
                    send(signals.request_dropped, request=o, spider=spider)

    batches = [urls[i : i + per_page] for i in range(0, n, per_page)]
    times: dict[str, list[float]] = {"request": [], "drop_waiting": []}
    filtered: dict[str, int] = {}
    for rep in range(reps + 1):
        for name in times:
            before, reached = sched.filtered, 0
            start = time.process_time()
            for b in batches:
                page(b, name == "drop_waiting")
            if rep:  # the first round warms up
                times[name].append(1e6 * (time.process_time() - start) / n)
            filtered[name] = sched.filtered - before
            filtered[name + "_reached_scheduler"] = reached
    spider.close_web(spider)
    assert len(sched.frontier) == n  # none promoted, none added
    out: dict[str, Any] = {
        f"{k}_us_per_link": round(statistics.median(v), 2) for k, v in times.items()
    }
    out["filtered_per_round"] = filtered
    return out


if __name__ == "__main__":
    print(main())
