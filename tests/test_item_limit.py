"""``CLOSESPIDER_ITEMCOUNT`` with batched page-store commits (``FOCUSED_STORE_COMMIT_EVERY``
above 1): the crawl stores about as many pages past the limit as with a commit per page
(Scrapy's own overshoot: what was under way when it closed the spider), and nothing stored
is lost or marked done without being stored (real sandbox crawls with a ``JOBDIR``)."""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path

import pytest

from bench.soak import _key, duplicate_rows, stored_urls
from focused.output.store import PageStore
from tests.crawling import run_crawl

pytestmark = pytest.mark.integration

LIMIT = 50
CONCURRENCY = 8
CRAWL = (
    "FOCUSED_SANDBOX_PAGES=200",
    f"CONCURRENT_REQUESTS={CONCURRENCY}",
    "FOCUSED_STORE_COMMIT_EVERY=1000",
    "FOCUSED_STORE_COMMIT_SECONDS=30",  # a batch would wait up to 30 s for its commit
    "LOG_LEVEL=DEBUG",  # Scrapy's "Crawled (200) <GET ...>" lines: what was fetched
)
CRAWLED = re.compile(r"Crawled \(\d+\) <GET (\S+)>")


def _fetched(log: str) -> list[str]:
    return [_key(u) for u in CRAWLED.findall(log) if not u.endswith("/robots.txt")]


def _journal_done(job: Path) -> tuple[set[str], set[str]]:
    """Paths of the journal's done URLs: those it marked stored, and all of them."""
    con = sqlite3.connect(f"{(job / 'frontier.sqlite3').resolve().as_uri()}?mode=ro", uri=True)
    try:
        rows = con.execute("SELECT url, stored FROM urls WHERE state=2").fetchall()
    finally:
        con.close()
    return {_key(u) for u, s in rows if s}, {_key(u) for u, _ in rows}


def test_item_limit_with_batched_commits_stops_near_the_limit_and_keeps_every_page(
    tmp_path: Path,
) -> None:
    out, job = tmp_path / "out", tmp_path / "job"
    first = run_crawl(out, *CRAWL, f"JOBDIR={job}", f"CLOSESPIDER_ITEMCOUNT={LIMIT}")
    assert "'finish_reason': 'closespider_itemcount'" in first.log
    stored = stored_urls(out)
    # Scrapy's own overshoot: the requests in flight (and scraped) when it closed the
    # spider; a batch that waited for its 30 s stored the whole sandbox
    assert LIMIT <= len(stored) <= LIMIT + 2 * CONCURRENCY, len(stored)
    assert f"'item_scraped_count': {len(stored)}," in first.log  # every stored item went on
    with PageStore(out) as store:
        assert store.check(verify=True) == []
    marked, done = _journal_done(job)
    assert marked <= stored  # nothing marked stored that is not
    assert stored <= done  # every stored page is done: a resume does not fetch it again

    second = run_crawl(out, *CRAWL, f"JOBDIR={job}")
    assert "'finish_reason': 'finished'" in second.log
    again = _fetched(second.log)
    assert not stored & set(again), sorted(stored & set(again))[:5]  # none fetched twice
    assert stored <= stored_urls(out)  # nothing stored was lost
    assert duplicate_rows(out) == 0
