"""A real crawl of the sandbox through Scrapy: order, storage and metrics (issue 2)."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlsplit

import pytest
from crawling import CHEMISTRY, SANDBOX_PAGES, SANDBOX_SEED, run_crawl

from focused.output.store import PageStore, read_body
from focused.web.sandbox import generate_site

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def site():
    return generate_site(seed=SANDBOX_SEED, pages=SANDBOX_PAGES)


@pytest.fixture(scope="module")
def genetic_crawl(tmp_path_factory):
    out = tmp_path_factory.mktemp("genetic")
    return run_crawl(out, "FOCUSED_STRATEGY=genetic", "CONCURRENT_REQUESTS=1")


def test_m_value_order_reaches_the_tunnel_hidden_clusters(genetic_crawl, site):
    tunnel = site.tunnel_targets(CHEMISTRY)
    assert tunnel, "the sandbox must have targets reachable only through irrelevant pages"
    order = genetic_crawl.paths_in_order()
    found = tunnel & set(order)
    # Every tunnel-hidden target is reached (side channels keep the irrelevant links) ...
    assert found == tunnel
    # ... and the relevant main channels come first: the first tenth of the crawl is
    # almost all chemistry, far above the site's share of chemistry pages.
    targets = site.targets(CHEMISTRY)
    head = order[: len(order) // 10]
    share_head = sum(p in targets for p in head) / len(head)
    share_site = len(targets) / len(site.labels)
    assert share_head > 0.8 > 2 * share_site


def test_every_item_is_stored_once_with_its_html(genetic_crawl, site):
    rows = genetic_crawl.rows()
    urls = [r["url"] for r in rows]
    assert len(urls) == len(set(urls))
    summary = genetic_crawl.summary
    assert summary["pages"] == len(rows) > 0
    store = PageStore(genetic_crawl.out)
    store.open()
    try:
        assert store.check() == []
    finally:
        store.close()
    for row in rows[:50]:
        html = read_body(
            genetic_crawl.out, row["file_path"], row["record_offset"], row["record_length"]
        )
        path = row["url"].split("/", 3)[3]
        assert html == site.pages["/" + path]
    # File names come from the content hash, never from the URL path.
    assert all("chemistry" not in Path(r["file_path"]).name for r in rows)


def test_the_store_writer_thread_stores_the_same_pages_in_the_same_order(tmp_path, genetic_crawl):
    threaded = run_crawl(
        tmp_path, "FOCUSED_STRATEGY=genetic", "CONCURRENT_REQUESTS=1", "FOCUSED_STORE_THREAD=True"
    )

    def rows(crawl):  # each sandbox has its own port: compare paths
        return [
            (urlsplit(r["url"]).path, urlsplit(r["parent_url"]).path, r["title"])
            + (r["page_relevance"], r["depth"], r["content_hash"])
            for r in crawl.rows()
        ]

    expected = rows(genetic_crawl)
    assert rows(threaded) == expected
    assert threaded.summary["pages"] == genetic_crawl.summary["pages"] == len(expected)
    with PageStore(threaded.out).open() as store:
        assert store.check(verify=True) == [] and store.repaired == []


def test_batched_commits_store_the_same_pages_in_the_same_order(tmp_path, genetic_crawl):
    """Batches larger than the crawl: only the time bound (and the close) commits, and
    every item waits for its commit; the crawl ends, with the same rows."""
    batched = run_crawl(
        tmp_path,
        "FOCUSED_STRATEGY=genetic",
        "CONCURRENT_REQUESTS=1",
        "FOCUSED_STORE_COMMIT_EVERY=100000",
        "FOCUSED_STORE_COMMIT_SECONDS=0.05",
    )

    def rows(crawl):
        return [(urlsplit(r["url"]).path, r["content_hash"]) for r in crawl.rows()]

    assert rows(batched) == rows(genetic_crawl)
    assert batched.summary["pages"] == genetic_crawl.summary["pages"]
    with PageStore(batched.out).open() as store:
        assert store.check(verify=True) == [] and store.repaired == []


def test_reported_recall_equals_recall_from_the_database(genetic_crawl, site):
    rows = genetic_crawl.rows()
    targets = site.targets(CHEMISTRY)
    stored_paths = {r["url"].split("/", 3)[3] for r in rows}
    found = sum(("/" + p) in targets for p in stored_paths)
    summary = genetic_crawl.summary
    assert summary["targets"] == len(targets)
    assert summary["targets_found"] == found
    assert summary["recall"] == pytest.approx(found / len(targets))
    assert summary["precision"] == pytest.approx(found / len(rows))


def test_a_stopped_sandbox_crawl_resumes_on_the_same_urls(tmp_path, genetic_crawl):
    # The embedded sandbox gets a new free port each run; with JOBDIR the resumed run
    # serves it on the first run's port, so the frontier's URLs still resolve.
    settings = ("FOCUSED_STRATEGY=genetic", "CONCURRENT_REQUESTS=1", f"JOBDIR={tmp_path / 'job'}")
    first = run_crawl(tmp_path / "out", *settings, "CLOSESPIDER_ITEMCOUNT=60")
    stopped_at = len(first.rows())
    assert 60 <= stopped_at < 100
    second = run_crawl(tmp_path / "out", *settings)
    paths = second.paths_in_order()
    assert len(paths) == len(set(paths))  # no page stored twice
    assert len({r["url"].split("/")[2] for r in second.rows()}) == 1  # one host:port
    assert set(paths) == set(genetic_crawl.paths_in_order())
