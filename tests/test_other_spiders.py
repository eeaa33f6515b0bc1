"""Spiders other than the focused one run in the project (``scrapy fetch``, ``scrapy
shell``, ``scrapy runspider``): the focused-only components step aside (focused/scope.py)
and leave the last focused crawl's output folder alone.

Each command runs for real in a subprocess from the project root, against a loopback
server on 127.0.0.1 (allowed by ``FOCUSED_ALLOWED_NETWORKS``: ``fetch`` and ``shell``
name their URL outside any spider seed list, which the address filter reads).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from loopback import PROJECT, Answer, LoopbackServer
from scrapy import Spider
from scrapy.exceptions import NotConfigured
from scrapy.utils.test import get_crawler

from focused.extensions import CrawlOutputExtension
from focused.middlewares import FocusedPriorityMiddleware
from focused.pipelines import MetricsPipeline, PageStorePipeline
from focused.spiders.focused import FocusedSpider

PAGE = b"<html><head><title>Plain page</title></head><body><a href='/b'>b</a></body></html>"


def answer(path: str) -> Answer:
    if path == "/robots.txt":
        return 404, {"Content-Type": "text/plain"}, b""
    if path in ("/", "/b"):
        return 200, {}, PAGE.replace(b"Plain page", f"Plain page {path}".encode())
    return 404, {}, b"no such page"


@pytest.fixture
def server() -> Iterator[LoopbackServer]:
    web = LoopbackServer("127.0.0.1", answer)
    yield web
    web.close()


def scrapy(out: Path, *args: str, cwd: Path = PROJECT) -> subprocess.CompletedProcess[str]:
    """``scrapy ARGS`` in the project, its output folder ``out``, loopback allowed."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("SCRAPY_")}
    env["PYTHONPATH"] = str(PROJECT)
    settings = {"FOCUSED_OUTPUT_DIR": str(out), "FOCUSED_ALLOWED_NETWORKS": "127.0.0.0/8"}
    return subprocess.run(
        [sys.executable, "-m", "scrapy", *args]
        + [a for k, v in settings.items() for a in ("-s", f"{k}={v}")],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def clean(proc: subprocess.CompletedProcess[str], out: Path) -> None:
    """Exit 0, no traceback, and nothing written to the focused output folder."""
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    assert not out.exists(), sorted(p.name for p in out.iterdir())


def test_scrapy_fetch_prints_the_page(server: LoopbackServer, tmp_path: Path) -> None:
    out = tmp_path / "out"
    proc = scrapy(out, "fetch", "--nolog", f"{server.url}/")
    clean(proc, out)
    assert "<title>Plain page /</title>" in proc.stdout


def test_scrapy_shell_evaluates_code_on_the_response(
    server: LoopbackServer, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    # the project's scheduler: the shell hijacks the request's callback after it handed
    # the request to the engine, so the scheduler must hand back that very request
    proc = scrapy(
        out,
        "shell",
        "--nolog",
        "-c",
        "(response.status, response.css('title::text').get())",
        f"{server.url}/",
    )
    clean(proc, out)
    assert proc.stdout.strip() == "(200, 'Plain page /')"


PLAIN_SPIDER = """
import scrapy


class Plain(scrapy.Spider):
    name = "plain"

    def __init__(self, url="", *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.start_urls = [url]

    def parse(self, response):
        yield {"url": response.url, "title": response.css("title::text").get()}
        yield from response.follow_all(css="a", callback=self.parse)
"""


def test_scrapy_runspider_of_a_plain_spider_in_the_project(
    server: LoopbackServer, tmp_path: Path
) -> None:
    spider = tmp_path / "plain.py"
    spider.write_text(PLAIN_SPIDER, encoding="utf-8")
    feed = tmp_path / "items.jsonl"
    out = tmp_path / "out"
    proc = scrapy(
        out,
        "runspider",
        str(spider),
        "-a",
        f"url={server.url}/",
        "-O",
        str(feed),
        "-s",
        "CLOSESPIDER_PAGECOUNT=10",
    )
    clean(proc, out)
    items = [json.loads(line) for line in feed.read_text(encoding="utf-8").splitlines()]
    # the items as the spider made them: not stored (no file_path, content_hash added)
    assert sorted(items, key=lambda i: i["url"]) == [
        {"url": f"{server.url}/", "title": "Plain page /"},
        {"url": f"{server.url}/b", "title": "Plain page /b"},
    ]


@pytest.mark.parametrize("path", ["focused/spiders/focused.py", "./focused/spiders/focused.py"])
def test_scrapy_runspider_of_the_focused_spider_says_to_crawl_it(tmp_path: Path, path: str) -> None:
    """Scrapy imports the file as a module named after it, ``focused``: the project's
    package, with no spider in it ("No spider found in file", which sent the user
    looking for a broken spider)."""
    out = tmp_path / "out"
    proc = scrapy(out, "runspider", path, "-a", "topic=chemistry")
    assert proc.returncode == 2, proc.stderr[-3000:]
    assert (
        proc.stderr.strip()
        .splitlines()[-1]
        .endswith(  # "scrapy: error: ..."
            f": error: {path} is the project's focused spider: run it with"
            " scrapy crawl focused -a topic=NAME (in the project folder)"
        )
    )
    assert "Traceback" not in proc.stderr and not out.exists()


@pytest.mark.parametrize(
    "component",
    [FocusedPriorityMiddleware, PageStorePipeline, MetricsPipeline, CrawlOutputExtension],
)
def test_focused_components_are_not_configured_for_another_spider(
    component: type, tmp_path: Path
) -> None:
    crawler = get_crawler(Spider, {"FOCUSED_OUTPUT_DIR": str(tmp_path)})
    crawler.spider = Spider(name="other")
    with pytest.raises(NotConfigured):
        component.from_crawler(crawler)
    # the focused spider gets every one of them (its web: a closed port on loopback)
    settings = {
        "FOCUSED_OUTPUT_DIR": str(tmp_path),
        "FOCUSED_WEB": "real",
        "FOCUSED_SEEDS": "http://127.0.0.1:9/",
    }
    crawler = get_crawler(FocusedSpider, settings)
    crawler.spider = FocusedSpider.from_crawler(crawler, topic="chemistry")
    assert isinstance(component.from_crawler(crawler), component)
