"""Two Redis schedulers on one shared frontier: a ``dont_filter`` request for a URL that
another worker is fetching is queued as a copy of its own, and does not take the URL
from that worker (a real ``redis-server`` on a free loopback port)."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from scrapy import Request, Spider
from scrapy.utils.test import get_crawler

from bench.scale import RedisServer
from focused.distributed.scheduler import RedisScheduler
from focused.scheduler import COPY_META


class CopySpider(Spider):
    name = "copies"

    def parse(self, response):  # pragma: no cover - never called here
        return []


@pytest.fixture(scope="module")
def redis_url() -> Iterator[str]:
    if shutil.which("redis-server") is None:
        message = "redis-server is not installed (apt-get install redis-server)"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    with RedisServer() as server:
        yield server.url


def worker(redis_url: str, tmp_path: Path, name: str) -> Any:
    crawler = get_crawler(
        CopySpider,
        {
            "FOCUSED_FRONTIER": "redis",
            "REDIS_URL": redis_url,
            "FOCUSED_REDIS_KEY": f"copies:{tmp_path.name}",
            "FOCUSED_OUTPUT_DIR": str(tmp_path / name),
            "FOCUSED_STRATEGY": "bfs",
        },
    )
    crawler.spider = CopySpider.from_crawler(crawler)
    scheduler = RedisScheduler.from_crawler(crawler)
    scheduler.open(crawler.spider)
    return scheduler


def test_a_dont_filter_request_for_a_url_in_flight_elsewhere_is_a_copy(
    redis_url: str, tmp_path: Path
) -> None:
    a, b = worker(redis_url, tmp_path, "a"), worker(redis_url, tmp_path, "b")
    url = "http://127.0.0.1:1/p/1.htm"
    assert a.enqueue_request(Request(url))
    picked = a.next_request()
    assert picked.url == url and COPY_META not in picked.meta
    assert b.enqueue_request(Request(url, dont_filter=True, cb_kwargs={"again": 1}))
    assert b.queues()["in_flight"] == 1  # a's URL is still a's
    copy = b.next_request()
    assert copy.url == url and copy.cb_kwargs == {"again": 1}
    copy_fp, copy_url = copy.meta[COPY_META]
    assert copy_url == url and copy_fp in b.in_flight
    assert copy_fp != a._fingerprint(picked) and a._fingerprint(picked) in a.in_flight
    assert b.queues() == {"waiting": 0, "in_flight": 2, "done": 0, "error": 0}
    a.close("finished")
    b.close("finished")
