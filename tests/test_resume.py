"""Resuming a ``JOBDIR`` crawl whose page store was lost or replaced.

Real crawls of the embedded sandbox in subprocesses (``scrapy crawl focused``, loopback
only), real SQLite. Nothing stored is ever lost, nothing is marked done that was not
stored: a resume whose output folder was removed (or whose ``pages.sqlite3`` is an older
copy) fetches again the pages the journal says were stored and the store does not hold,
each once.
"""

from __future__ import annotations

import re
import shutil

import pytest
from crawling import run_crawl

from bench.soak import _key, duplicate_rows, stored_urls

PAGES = 150  # sandbox size
CRAWL = (
    f"FOCUSED_SANDBOX_PAGES={PAGES}",
    "FOCUSED_STRATEGY=bfs",  # every reachable page: the stored set is well defined
    "CONCURRENT_REQUESTS=4",
    "LOG_LEVEL=DEBUG",  # Scrapy's "Crawled (200) <GET ...>" lines: what was fetched
)
CRAWLED = re.compile(r"Crawled \(\d+\) <GET (\S+)>")


def fetched(log: str) -> list[str]:
    """The pages a run fetched (paths), in order, robots.txt left out."""
    return [_key(u) for u in CRAWLED.findall(log) if not u.endswith("/robots.txt")]


@pytest.fixture(scope="module")
def reference(tmp_path_factory) -> set[str]:
    """The pages an uninterrupted crawl stores."""
    out = tmp_path_factory.mktemp("reference") / "out"
    run_crawl(out, *CRAWL, f"JOBDIR={out.parent / 'job'}")
    urls = stored_urls(out)
    assert len(urls) > PAGES // 2
    return urls


# --- the page store lost or replaced ---------------------------------------------
@pytest.mark.integration
def test_a_resume_whose_output_folder_was_removed_stores_every_page_again(tmp_path, reference):
    out, job = tmp_path / "out", f"JOBDIR={tmp_path / 'job'}"
    run_crawl(out, *CRAWL, job, "CLOSESPIDER_ITEMCOUNT=30")
    before = stored_urls(out)
    assert 30 <= len(before) < len(reference)
    shutil.rmtree(out)

    second = run_crawl(out, *CRAWL, job)
    assert stored_urls(out) == reference  # every page stored again, once
    assert duplicate_rows(out) == 0
    again = fetched(second.log)
    assert len(again) == len(set(again))  # no page fetched twice
    assert before <= set(again)  # every lost page fetched again
    n = len(before)
    assert f"the page store {out} was not there at the start (removed?): the {n} pages" in (
        second.log
    )
    assert f"'focused/store/missing_requeued': {n}," in second.log


@pytest.mark.integration
def test_a_resume_with_an_older_copy_of_the_store_gets_the_missing_pages_back(tmp_path, reference):
    out, job = tmp_path / "out", f"JOBDIR={tmp_path / 'job'}"
    backup = tmp_path / "backup"
    backup.mkdir()
    run_crawl(out, *CRAWL, job, "CLOSESPIDER_ITEMCOUNT=20")
    old = stored_urls(out)
    for f in out.glob("pages.sqlite3*"):
        shutil.copy2(f, backup / f.name)
    run_crawl(out, *CRAWL, job, "CLOSESPIDER_ITEMCOUNT=30")
    newer = stored_urls(out) - old
    assert len(newer) >= 30
    for f in out.glob("pages.sqlite3*"):  # the older copy put back in its place
        f.unlink()
    for f in backup.iterdir():
        shutil.copy2(f, out / f.name)

    third = run_crawl(out, *CRAWL, job)
    assert stored_urls(out) == reference
    assert duplicate_rows(out) == 0
    again = fetched(third.log)
    assert len(again) == len(set(again))
    assert newer <= set(again)  # fetched again...
    assert not old & set(again)  # ... and only those: the older copy's pages are not
    assert (
        f"{len(newer)} pages the journal in {tmp_path / 'job'} says were stored are not in"
        f" {out / 'pages.sqlite3'}" in third.log
    )
