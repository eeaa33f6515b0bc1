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

from scrapy.http import Request

from bench.link_path import LinkPath
from focused.frontier.journal import DONE


def main(n: int = 3000, per_page: int = 30, reps: int = 7) -> dict[str, float]:
    path = LinkPath()
    spider, sched = path.spider, path.sched
    urls = [f"http://127.0.0.1:9/wiki/Page_{i}.html" for i in range(n)]
    for u in urls:
        sched.enqueue_request(Request(u))
    while (r := sched.next_request()) is not None:
        sched._finish(sched._fingerprint(r), DONE)
    check = sched.drop_done

    def page(batch: list[str], drop: bool) -> None:
        spider.drop_done = check if drop else None
        path.page(batch)

    batches = [urls[i : i + per_page] for i in range(0, n, per_page)]
    times: dict[str, list[float]] = {"request": [], "drop_done": []}
    for rep in range(reps + 1):
        for name in times:
            start = time.process_time()
            for b in batches:
                page(b, name == "drop_done")
            if rep:  # the first round warms up
                times[name].append(1e6 * (time.process_time() - start) / n)
    path.close()
    return {f"{k}_us_per_link": round(statistics.median(v), 2) for k, v in times.items()}


if __name__ == "__main__":
    print(main())
