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

from scrapy.http import Request

from bench.link_path import LinkPath


def main(n: int = 3000, per_page: int = 30, reps: int = 7) -> dict[str, Any]:
    path = LinkPath()
    sched, priority = path.sched, path.priority
    check = priority.drop_waiting
    assert check is not None
    urls = [f"http://127.0.0.1:9/wiki/Page_{i}.html" for i in range(n)]
    for u in urls:  # waiting at depth 1
        sched.enqueue_request(Request(u, priority=-1, meta={"depth": 1}))
    reached = 0

    def page(batch: list[str], drop: bool) -> None:
        nonlocal reached
        priority.drop_waiting = check if drop else None
        reached += path.page(batch)

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
    path.close()
    assert len(sched.frontier) == n  # none promoted, none added
    out: dict[str, Any] = {
        f"{k}_us_per_link": round(statistics.median(v), 2) for k, v in times.items()
    }
    out["filtered_per_round"] = filtered
    return out


if __name__ == "__main__":
    print(main())
