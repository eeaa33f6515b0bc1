"""Micro-benchmark: what a link to a page already fetched costs on its way to the
scheduler, against :meth:`focused.scheduler.FocusedScheduler.drop_done`.

The old path: the spider's ``scrapy.Request``, Scrapy's ``DepthMiddleware``, the
priority middleware, ``UrlLengthMiddleware`` and ``RefererMiddleware`` chained as Scrapy
runs a page's output, the engine's ``request_scheduled`` signal, the scheduler's
filter and ``request_dropped``. The new one: ``drop_done`` and no request. A real
spider and scheduler (3,000 done URLs), no network. ``python -m bench.done_links``.
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

from focused.frontier.journal import DONE
from focused.items import PageItem
from focused.middlewares import FocusedPriorityMiddleware
from focused.scheduler import FocusedScheduler
from focused.spiders.focused import FocusedSpider


def main(n: int = 3000, per_page: int = 30, reps: int = 7) -> dict[str, float]:
    settings = {
        "FOCUSED_STRATEGY": "bfs",
        "FOCUSED_WEB": "real",
        "FOCUSED_SEEDS": "http://127.0.0.1:9/",
    }
    crawler = get_crawler(FocusedSpider, settings)
    spider = FocusedSpider.from_crawler(crawler, topic="chemistry")
    crawler.spider = spider
    sched = FocusedScheduler.from_crawler(crawler)
    sched.open(spider)
    urls = [f"http://127.0.0.1:9/wiki/Page_{i}.html" for i in range(n)]
    for u in urls:
        sched.enqueue_request(Request(u))
    while (r := sched.next_request()) is not None:
        sched._finish(sched._fingerprint(r), DONE)
    mws: list[Any] = [
        DepthMiddleware.from_crawler(crawler),
        FocusedPriorityMiddleware.from_crawler(crawler),
        UrlLengthMiddleware.from_crawler(crawler),
        RefererMiddleware.from_crawler(crawler),
    ]
    parent = Request("http://127.0.0.1:9/wiki/Chemistry.html", meta={"depth": 1})
    response = HtmlResponse(parent.url, body=b"<html></html>", request=parent)
    send = crawler.signals.send_catch_log
    check = sched.drop_done

    def page(batch: list[str], drop: bool) -> None:
        spider.drop_done = check if drop else None
        out: Any = [r for u in batch if (r := spider._request(u, 0.3, response.url))]
        out.append(PageItem(url=response.url))
        for mw in mws:
            out = mw.process_spider_output(response, out)
        for o in out:
            if isinstance(o, Request):
                send(signals.request_scheduled, request=o, spider=spider)
                if not sched.enqueue_request(o):
                    send(signals.request_dropped, request=o, spider=spider)

    batches = [urls[i : i + per_page] for i in range(0, n, per_page)]
    times: dict[str, list[float]] = {"request": [], "drop_done": []}
    for rep in range(reps + 1):
        for name in times:
            start = time.process_time()
            for b in batches:
                page(b, name == "drop_done")
            if rep:  # the first round warms up
                times[name].append(1e6 * (time.process_time() - start) / n)
    spider.close_web(spider)
    return {f"{k}_us_per_link": round(statistics.median(v), 2) for k, v in times.items()}


if __name__ == "__main__":
    print(main())
