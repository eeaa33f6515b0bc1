"""Near-duplicates recorded as other URLs of a stored page (aliases): a copy of an
article fetched before the article itself must not cost the article its URL in the
collection (search, export, recall), and the body is stored once."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pytest

from focused.frontier.journal import store_holds, stored_urls
from focused.output.export import export
from focused.output.metrics import HarvestCurve
from focused.output.search import search
from focused.output.store import PageStore, StoreReader, check_store, stored_aliases
from focused.web.neardup import NearDuplicates, key_of, later_is_main
from tests.crawling import run_crawl
from tests.loopback import QuickHTTPServer, serve_in_thread

ARTICLE = (
    "An acid is a molecule or ion capable of donating a proton. Acids react with bases"
    " to form a salt and water; strong acids such as hydrochloric acid dissociate fully"
    " in water, weak acids only in part. The pH of an acidic solution is below seven. "
)


# --- the index: who owns a fingerprint -------------------------------------------------
def test_the_index_answers_with_the_owner_of_the_first_copy() -> None:
    index = NearDuplicates()
    paragraphs = [f"{n}. {ARTICLE}" for n in range(7)]
    key = key_of(paragraphs, "Acid")
    assert key is not None
    assert index.owner_of(key) == (False, None)
    index.add(*key, owner=("http://127.0.0.3/copy", ""))
    again = key_of([*paragraphs, "A footnote."], "Acid")
    assert again is not None
    assert index.owner_of(again) == (True, ("http://127.0.0.3/copy", ""))
    assert index.set_owner(again, ("http://127.0.0.2/acid", ""))
    assert index.owner_of(key) == (True, ("http://127.0.0.2/acid", ""))
    assert key_of(["short"], "Acid") is None  # a short page is never checked


def test_the_canonical_url_decides_which_copy_is_the_main_one() -> None:
    first, later = "http://127.0.0.3/copy", "http://127.0.0.2/acid"
    assert not later_is_main(first, "", later)  # no claim: the first stays
    assert later_is_main(first, later, later)  # the first copy names the later one
    assert not later_is_main(first, first, later)  # the first claims itself: it stays
    # the first names a third URL (another form of its own): the later one gets nothing
    assert not later_is_main(first, "https://127.0.0.3/copy", later)


# --- the store -------------------------------------------------------------------------
def page(url: str, **more: object) -> dict[str, object]:
    return {"url": url, "title": "Acid", "status": 200, "fetched_at": 1.0, **more}


def test_an_alias_is_a_row_that_reads_back_its_page(tmp_path: Path) -> None:
    body = b"<html><title>Acid</title><body>" + ARTICLE.encode() + b"</body></html>"
    with PageStore(tmp_path) as store:
        assert store.add(page("http://127.0.0.3/copy", is_target=False), body)
        assert store.add_alias(page("http://127.0.0.2/acid", is_target=True), "nowhere") is None
        assert store.add_alias(
            page("http://127.0.0.2/acid", is_target=True), "http://127.0.0.3/copy"
        )
        # an alias of an alias is one of the same page; a URL held already is refused
        assert store.add_alias(page("http://127.0.0.4/m"), "http://127.0.0.2/acid")
        assert store.add_alias(page("http://127.0.0.4/m"), "http://127.0.0.3/copy") is False
        assert not store.add(page("http://127.0.0.2/acid"), b"other bytes")  # held: no body
        assert store.count() == 1
        assert store.has("http://127.0.0.2/acid")
        assert store.body("http://127.0.0.2/acid") == body
        assert [a["url"] for a in store.aliases()] == [
            "http://127.0.0.2/acid",
            "http://127.0.0.4/m",
        ]
    with StoreReader(tmp_path) as reader:
        assert reader.body("http://127.0.0.4/m") == body
    assert check_store(tmp_path).problems == []
    assert [(a["url"], a["is_target"]) for a in stored_aliases(tmp_path)] == [
        ("http://127.0.0.2/acid", True),
        ("http://127.0.0.4/m", None),
    ]
    db = tmp_path / "pages.sqlite3"
    assert stored_urls(db, ["http://127.0.0.2/acid", "http://127.0.0.9/x"]) == {
        "http://127.0.0.2/acid"
    }
    assert store_holds(db, [(1, "http://127.0.0.4/m"), (2, "http://127.0.0.9/x")]) == [1]


def test_the_canonical_alias_becomes_the_main_url(tmp_path: Path) -> None:
    with PageStore(tmp_path) as store:
        store.add(
            page("http://127.0.0.3/copy", is_target=False, depth=1, parent_url="http://s/"),
            b"<p>x</p>",
        )
        assert store.add_alias(
            page(
                "http://127.0.0.2/acid",
                is_target=True,
                depth=4,
                parent_url="http://127.0.0.3/copy",
                fetched_at=7.0,
                status=203,
            ),
            "http://127.0.0.3/copy",
            main=True,
        )
        assert store.urls() == ["http://127.0.0.2/acid"]
        row = store.get("http://127.0.0.2/acid")
        # the row's fetch facts are its URL's, the alias row's the first copy's
        assert row is not None
        assert (
            row["is_target"],
            row["depth"],
            row["parent_url"],
            row["fetched_at"],
            row["status"],
        ) == (True, 4, "http://127.0.0.3/copy", 7.0, 203)
        (alias,) = store.aliases()
        assert (
            alias["url"],
            alias["is_target"],
            alias["depth"],
            alias["parent_url"],
            alias["found_at"],
            alias["status"],
        ) == ("http://127.0.0.3/copy", 0, 1, "http://s/", 1.0, 200)
        assert store.body("http://127.0.0.3/copy") == b"<p>x</p>"
    assert check_store(tmp_path).problems == []


def test_an_alias_rolled_back_with_its_transaction_is_not_stored(tmp_path: Path) -> None:
    store = PageStore(tmp_path, commit_every=10).open()
    store.add(page("http://127.0.0.3/copy"), b"<p>x</p>")
    store.add_alias(page("http://127.0.0.2/acid"), "http://127.0.0.3/copy")
    assert store.abort() == ["http://127.0.0.3/copy", "http://127.0.0.2/acid"]
    assert (store.stored, store.aliased) == (0, 0)
    store.close()
    with PageStore(tmp_path) as again:
        assert not again.has("http://127.0.0.2/acid") and again.count() == 0


def test_repair_removes_the_aliases_of_a_page_whose_record_was_lost(tmp_path: Path) -> None:
    with PageStore(tmp_path) as store:
        store.add(page("http://127.0.0.3/copy"), b"<p>x</p>" * 100)
        store.add_alias(page("http://127.0.0.2/acid"), "http://127.0.0.3/copy")
        segment = tmp_path / store.lookup("http://127.0.0.3/copy")[1]  # type: ignore[index]
    with segment.open("r+b") as fh:  # a power cut took the record, SQLite kept its commit
        fh.truncate(10)
    with PageStore(tmp_path) as store:
        assert sorted(store.lost) == ["http://127.0.0.2/acid", "http://127.0.0.3/copy"]
        assert not store.has("http://127.0.0.2/acid")
    assert check_store(tmp_path).problems == []


def test_an_alias_that_comes_before_its_pages_row_waits_for_it(tmp_path: Path) -> None:
    """The page's item is still on its way (a writer thread, a locked database) when its
    near-duplicate is found: the alias is written once the page's row is in."""
    from focused.pipelines import PageStorePipeline

    pipe = PageStorePipeline(tmp_path)
    pipe.open_spider()
    store = pipe.store
    assert store is not None
    assert pipe._on_aliased(page("http://127.0.0.2/acid"), of="http://127.0.0.3/copy")
    assert store.aliases() == []
    pipe.process_item({"url": "http://127.0.0.3/copy", "title": "Acid", "body": b"<p>x</p>"})
    assert [a["url"] for a in store.aliases()] == ["http://127.0.0.2/acid"]
    pipe.close_spider()
    assert check_store(tmp_path).problems == []


def test_the_curve_counts_an_alias_found_but_no_page_more() -> None:
    targets = frozenset({"http://127.0.0.2/acid"})
    curve = HarvestCurve(targets)
    curve.add("http://127.0.0.3/copy", True)
    assert curve.recall == 0.0
    assert curve.add_alias("http://127.0.0.2/acid", of="http://127.0.0.3/copy")
    assert not curve.add_alias("http://127.0.0.2/acid")
    assert (curve.pages, curve.recall, curve.precision) == (1, 1.0, 1.0)
    assert [p.targets_found for p in curve.iter_points()] == [1]


def test_precision_counts_a_stored_page_once_however_many_of_its_urls_are_targets() -> None:
    """Two target URLs recorded as aliases of one stored page (and a page whose own URL
    is a target with a target alias): each page is one target page, not two."""
    a, b, c = "http://127.0.0.2/a", "http://127.0.0.2/b", "http://127.0.0.4/c"
    curve = HarvestCurve(frozenset({a, b, c, "http://127.0.0.2/d"}))
    curve.add("http://127.0.0.3/copy", True, False)
    curve.add_alias(a, of="http://127.0.0.3/copy")
    curve.add_alias(b, of=a)  # an alias of the alias: the same page
    curve.add("http://127.0.0.3/other", False, False)
    curve.add(c, True)
    curve.add_alias("http://127.0.0.2/d", of=c)
    assert (curve.pages, curve.targets_found, curve.recall) == (3, 4, 1.0)
    assert curve.precision == 2 / 3
    assert [p.precision for p in curve.iter_points()] == [1.0, 0.5, 2 / 3]
    assert [p.targets_found for p in curve.iter_points()] == [2, 2, 4]


# --- a crawl: the copy on 127.0.0.3 is fetched before the original on 127.0.0.2 -------
def article(title: str, links: list[tuple[str, str]], canonical: str = "") -> bytes:
    items = "".join(f'<li><a href="{h}">{a}</a></li>' for h, a in links)
    head = f'<link rel="canonical" href="{canonical}">' if canonical else ""
    return (
        f"<html><head><title>{title}</title>{head}</head><body><div id='content'>"
        f"<h1>{title}</h1><p>{ARTICLE * 3}</p><ul>{items}</ul></div></body></html>"
    ).encode()


class Host:
    """One loopback host (``127.0.0.N``) serving ``pages`` by path."""

    def __init__(self, address: str, pages: dict[str, bytes]) -> None:
        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802
                body = pages.get(self.path)
                self.send_response(200 if body else 404)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(body or b"")))
                self.end_headers()
                self.wfile.write(body or b"")

            def log_message(self, format: str, *args: object) -> None:  # noqa: A002
                pass

        self.httpd = QuickHTTPServer((address, 0), Handler)
        self.httpd.daemon_threads = True
        self.base = f"http://{address}:{self.httpd.server_address[1]}"
        serve_in_thread(self.httpd)

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def crawl_copy_first(
    tmp_path: Path, *extra: str, canonical: bool, runs: int = 1
) -> tuple[Path, str, str, list[str]]:
    """Crawl a scraper's copy of the article on 127.0.0.3 (the seed) that links the
    original on 127.0.0.2; the original is the target. ``runs`` times (with ``extra``
    settings, a ``JOBDIR``: a resume), the servers up throughout. Output folder, copy,
    original, and the logs of the runs."""
    original_pages: dict[str, bytes] = {}
    copy_pages: dict[str, bytes] = {}
    original_host = Host("127.0.0.2", original_pages)
    copy_host = Host("127.0.0.3", copy_pages)
    original = f"{original_host.base}/wiki/Acid"
    copy = f"{copy_host.base}/mirror/Acid"
    original_pages["/wiki/Acid"] = article(
        "Acid", [("/wiki/Base", "Base")], canonical=original if canonical else ""
    )
    original_pages["/wiki/Base"] = (
        b"<html><head><title>Base</title></head><body><p>"
        + b"A base accepts protons from an acid. " * 10
        + b"</p></body></html>"
    )
    copy_pages["/mirror/Acid"] = article(
        "Acid", [(original, "Source: the acid article")], canonical=original if canonical else ""
    )
    labels = tmp_path / "labels.tsv"
    labels.write_text(f"{original}\tsubject.Science.Chemistry\n", encoding="utf-8")
    out = tmp_path / "out"
    logs = []
    try:
        for _ in range(runs):
            crawl = run_crawl(
                out,
                "FOCUSED_WEB=real",
                f"FOCUSED_SEEDS={copy}",
                f"FOCUSED_LABELS={labels}",
                "FOCUSED_TARGET_CATEGORY=subject.Science.Chemistry",
                "FOCUSED_ALLOWED_DOMAINS=127.0.0.2,127.0.0.3",
                "FOCUSED_STRATEGY=best_first",
                "CONCURRENT_REQUESTS=1",
                "ROBOTSTXT_OBEY=False",
                "CLOSESPIDER_PAGECOUNT=20",
                *extra,
                timeout=120,
            )
            logs.append(crawl.log)
    finally:
        original_host.close()
        copy_host.close()
    return out, copy, original, logs


@pytest.mark.integration
def test_a_copy_fetched_first_does_not_take_the_originals_url(tmp_path: Path) -> None:
    out, copy, original, _ = crawl_copy_first(tmp_path, canonical=False)
    con = sqlite3.connect(out / "pages.sqlite3")
    try:
        urls = [u for (u,) in con.execute("SELECT url FROM pages ORDER BY id")]
        aliases = con.execute("SELECT url, page_id FROM aliases").fetchall()
        copy_id = con.execute("SELECT id FROM pages WHERE url = ?", (copy,)).fetchone()[0]
    finally:
        con.close()
    assert copy in urls and original not in urls  # the body is stored once
    assert aliases == [(original, copy_id)]
    stats = json.loads((out / "stats.json").read_text())
    assert stats["focused/pages/near_duplicates"] == 1
    summary = json.loads((out / "summary.json").read_text())
    assert (summary["targets"], summary["targets_found"], summary["recall"]) == (1, 1, 1.0)
    # the user finds the original's URL: search, export, get
    (hit,) = [h for h in search(out, "acid proton") if h.url == copy]
    assert hit.aliases == (original,)
    export(out, "jsonl", tmp_path / "pages.jsonl")
    rows = [json.loads(line) for line in (tmp_path / "pages.jsonl").read_text().splitlines()]
    assert [r["aliases"] for r in rows if r["url"] == copy] == [[original]]
    export(out, "warc", tmp_path / "pages.warc")
    from warcio.archiveiterator import ArchiveIterator

    with (tmp_path / "pages.warc").open("rb") as fh:
        records = [
            (r.rec_type, r.rec_headers.get_header("WARC-Target-URI")) for r in ArchiveIterator(fh)
        ]
    assert ("revisit", original) in records
    assert sum(1 for kind, _ in records if kind == "response") == len(urls)
    with StoreReader(out) as reader:
        assert reader.body(original) == reader.body(copy)
    assert check_store(out).problems == []


@pytest.mark.integration
def test_the_originals_canonical_url_becomes_the_stored_pages_url(tmp_path: Path) -> None:
    out, copy, original, _ = crawl_copy_first(tmp_path, canonical=True)
    con = sqlite3.connect(out / "pages.sqlite3")
    try:
        urls = [u for (u,) in con.execute("SELECT url FROM pages ORDER BY id")]
        aliases = [u for (u,) in con.execute("SELECT url FROM aliases")]
    finally:
        con.close()
    assert original in urls and copy not in urls
    assert aliases == [copy]
    summary = json.loads((out / "summary.json").read_text())
    assert (summary["targets_found"], summary["recall"]) == (1, 1.0)
    assert check_store(out).problems == []


@pytest.mark.integration
def test_a_noindex_copy_fetched_first_does_not_suppress_the_article(tmp_path: Path) -> None:
    """A print copy marked ``noindex`` (MediaWiki's) is not stored: it is the copy of
    nothing, so the article fetched after it is stored, not skipped as its duplicate."""
    pages: dict[str, bytes] = {}
    host = Host("127.0.0.2", pages)
    article_url = f"{host.base}/wiki/Acid"
    print_copy = article("Acid", [(article_url, "Article")]).replace(
        b"</title>", b'</title><meta name="robots" content="noindex,follow">'
    )
    pages["/wiki/Acid?printable=yes"] = print_copy
    pages["/wiki/Acid"] = article("Acid", [])
    out = tmp_path / "out"
    try:
        run_crawl(
            out,
            "FOCUSED_WEB=real",
            f"FOCUSED_SEEDS={article_url}?printable=yes",
            "FOCUSED_STRATEGY=best_first",
            "CONCURRENT_REQUESTS=1",
            "ROBOTSTXT_OBEY=False",
            "CLOSESPIDER_PAGECOUNT=20",
            timeout=120,
        )
    finally:
        host.close()
    con = sqlite3.connect(out / "pages.sqlite3")
    try:
        urls = [u for (u,) in con.execute("SELECT url FROM pages")]
    finally:
        con.close()
    assert urls == [article_url]


@pytest.mark.integration
def test_a_resume_does_not_fetch_and_store_an_alias_again(tmp_path: Path) -> None:
    """The journal marks the original done as stored when its alias commits; a resume
    of the ``JOBDIR`` finds its URL held by the store (as an alias), so it is not
    fetched again and stored as a second body."""
    out, copy, original, logs = crawl_copy_first(
        tmp_path, f"JOBDIR={tmp_path / 'job'}", canonical=False, runs=2
    )
    assert "focused/store/missing_requeued" not in logs[1]
    con = sqlite3.connect(out / "pages.sqlite3")
    try:
        urls = [u for (u,) in con.execute("SELECT url FROM pages")]
        aliases = [u for (u,) in con.execute("SELECT url FROM aliases")]
    finally:
        con.close()
    assert urls == [copy] and aliases == [original]


@pytest.mark.integration
@pytest.mark.skipif(
    shutil.which("redis-server") is None and not os.environ.get("CI"),
    reason="redis-server is not installed (apt-get install redis-server)",
)
def test_a_worker_of_a_distributed_crawl_records_the_alias_and_marks_it_done(
    tmp_path: Path,
) -> None:
    """The shared Redis frontier: the worker writes the alias into the shared store and
    the original is done in Redis once it commits (nothing left in flight)."""
    import redis

    from bench.scale import RedisServer

    with RedisServer() as server:
        out, copy, original, _ = crawl_copy_first(
            tmp_path,
            "FOCUSED_FRONTIER=redis",
            f"REDIS_URL={server.url}",
            "FOCUSED_REDIS_KEY=aliases",
            canonical=False,
        )
        client = redis.Redis.from_url(server.url)
        inflight = client.keys("*inflight")
        stats = client.keys("*:stats")
        assert inflight or stats, client.keys("*")
        # nothing left in flight: the original's "done" reached Redis once its alias
        # committed (the copy and the original: 2 done)
        assert all(client.zcard(k) == 0 for k in inflight)
        assert sum(int(client.hget(k, "done") or 0) for k in stats) == 2
    con = sqlite3.connect(out / "pages.sqlite3")
    try:
        urls = [u for (u,) in con.execute("SELECT url FROM pages")]
        aliases = [u for (u,) in con.execute("SELECT url FROM aliases")]
    finally:
        con.close()
    assert copy in urls and original not in urls and aliases == [original]


@pytest.mark.integration
def test_a_copier_fetched_later_naming_itself_canonical_stays_an_alias(
    tmp_path: Path,
) -> None:
    """The real page is fetched first, without ``rel=canonical``; a copier's page fetched
    after it names itself canonical. The copier's claim about itself is not believed: the
    real URL stays the stored page's URL, the copier's an alias."""
    real_pages: dict[str, bytes] = {}
    copier_pages: dict[str, bytes] = {}
    real_host = Host("127.0.0.2", real_pages)
    copier_host = Host("127.0.0.3", copier_pages)
    real = f"{real_host.base}/wiki/Acid"
    copier = f"{copier_host.base}/stolen/Acid"
    real_pages["/wiki/Acid"] = article("Acid", [(copier, "a mirror")])
    copier_pages["/stolen/Acid"] = article("Acid", [], canonical=copier)
    out = tmp_path / "out"
    try:
        run_crawl(
            out,
            "FOCUSED_WEB=real",
            f"FOCUSED_SEEDS={real}",
            "FOCUSED_ALLOWED_DOMAINS=127.0.0.2,127.0.0.3",
            "FOCUSED_STRATEGY=best_first",
            "CONCURRENT_REQUESTS=1",
            "ROBOTSTXT_OBEY=False",
            "CLOSESPIDER_PAGECOUNT=20",
            timeout=120,
        )
    finally:
        real_host.close()
        copier_host.close()
    con = sqlite3.connect(out / "pages.sqlite3")
    try:
        urls = [u for (u,) in con.execute("SELECT url FROM pages")]
        aliases = [u for (u,) in con.execute("SELECT url FROM aliases")]
    finally:
        con.close()
    assert urls == [real] and aliases == [copier]


def test_a_batch_of_aliases_alone_commits_by_its_time_bound(tmp_path: Path) -> None:
    """With batched commits, an alias added after its page's batch committed opens a
    transaction of its own (no item waits for it): it commits by the batch's time bound,
    so its URL is told stored (journaled done) and the write lock is free again."""
    from scrapy.utils.test import get_crawler
    from twisted.internet.task import Clock

    from focused.pipelines import PageStorePipeline
    from focused.signals import pages_stored
    from focused.spiders.focused import FocusedSpider

    crawler = get_crawler(FocusedSpider, {"FOCUSED_OUTPUT_DIR": str(tmp_path)})
    pipe = PageStorePipeline(tmp_path, commit_every=10, commit_seconds=1.0, signals=crawler.signals)
    clock = Clock()
    pipe.call_later = clock.callLater
    told: list[str] = []
    crawler.signals.connect(lambda urls: told.extend(urls), signal=pages_stored, weak=False)
    pipe.open_spider()
    pipe.process_item({"url": "http://127.0.0.3/copy", "title": "Acid", "body": b"<p>x</p>"})
    clock.advance(1.0)
    assert told == ["http://127.0.0.3/copy"]
    assert pipe._on_aliased(page("http://127.0.0.2/acid"), of="http://127.0.0.3/copy")
    clock.advance(1.0)
    assert told == ["http://127.0.0.3/copy", "http://127.0.0.2/acid"]
    other = sqlite3.connect(tmp_path / "pages.sqlite3", timeout=0)
    try:
        other.execute("BEGIN IMMEDIATE")  # the write lock is free: nothing left open
        other.execute("ROLLBACK")
        assert other.execute("SELECT url FROM aliases").fetchall() == [("http://127.0.0.2/acid",)]
    finally:
        other.close()
    pipe.close_spider()


@pytest.mark.integration
def test_a_crawl_with_batched_commits_records_the_alias(tmp_path: Path) -> None:
    out, copy, original, _ = crawl_copy_first(
        tmp_path,
        "FOCUSED_STORE_COMMIT_EVERY=50",
        "FOCUSED_STORE_COMMIT_SECONDS=0.5",
        canonical=False,
    )
    con = sqlite3.connect(out / "pages.sqlite3")
    try:
        aliases = [u for (u,) in con.execute("SELECT url FROM aliases")]
    finally:
        con.close()
    assert aliases == [original]
    assert check_store(out).problems == []


def test_a_url_held_as_an_alias_gets_no_page_row(tmp_path: Path) -> None:
    """A page whose body was written (a writer thread, another worker) for a URL that
    became an alias meanwhile: its row is refused, the URL stays an alias only."""
    with PageStore(tmp_path) as store:
        store.add(page("http://127.0.0.3/copy"), b"<p>x</p>")
        store.add_alias(page("http://127.0.0.2/acid"), "http://127.0.0.3/copy")
        written = store.write_body(b"<p>another body</p>")
        record = page("http://127.0.0.2/acid")
        assert store.add_written(record, written) is False
        assert store.count() == 1
        assert record["file_path"] == store.lookup("http://127.0.0.3/copy")[1]  # type: ignore[index]
    with PageStore(tmp_path) as store:  # the refused body's bytes, past the end, go
        assert store.urls() == ["http://127.0.0.3/copy"]
    assert check_store(tmp_path).problems == []


def test_two_workers_adding_the_same_alias_do_not_collide(tmp_path: Path) -> None:
    """Worker A commits an alias between worker B's look at the URL and B's write: B
    finds it held (the checks run inside B's write transaction), and no error stops B."""
    copy, original = "http://127.0.0.3/copy", "http://127.0.0.2/acid"
    with PageStore(tmp_path, sole=False) as setup:
        setup.add(page(copy), b"<p>x</p>")
    a = PageStore(tmp_path, commit_every=10, sole=False).open()
    b = PageStore(tmp_path, commit_every=10, sole=False).open()
    try:
        assert a.add_alias(page(original), copy)  # in A's open transaction

        def a_commits_first(statement: str) -> None:
            if statement.startswith("BEGIN") and a.pending:
                a.flush()  # A commits just before B takes the write lock

        b._db.set_trace_callback(a_commits_first)
        assert b.add_alias(page(original), copy) is False
        b._db.set_trace_callback(None)
        assert b.add_alias(page("http://127.0.0.4/m", is_target=True), copy, main=True)
    finally:
        a.close()
        b.close()
    with PageStore(tmp_path) as store:
        assert store.urls() == ["http://127.0.0.4/m"]
        assert sorted(x["url"] for x in store.aliases()) == [original, copy]
    assert check_store(tmp_path).problems == []


# --- the hot path and the failure path ------------------------------------------------
def test_a_url_not_stored_costs_one_statement(tmp_path: Path) -> None:
    """``lookup``, ``has`` and ``page_id`` run one statement a URL, found or not (the
    alias part runs inside it, only when no page row has the URL)."""
    with PageStore(tmp_path) as store:
        store.add(page("http://127.0.0.3/copy"), b"<p>x</p>")
        store.add_alias(page("http://127.0.0.2/acid"), "http://127.0.0.3/copy")
        statements: list[str] = []
        store._db.set_trace_callback(statements.append)
        try:
            assert store.lookup("http://127.0.0.9/none") is None
            assert not store.has("http://127.0.0.9/none")
            assert store.page_id("http://127.0.0.9/none") is None
            assert len(statements) == 3
            assert store.has("http://127.0.0.2/acid")
            assert store.lookup("http://127.0.0.2/acid") == store.lookup("http://127.0.0.3/copy")
        finally:
            store._db.set_trace_callback(None)


def test_an_alias_waiting_for_the_lock_when_the_store_stops_leaves_no_unhandled_error(
    tmp_path: Path,
) -> None:
    """Another program holds the write lock past the lock timeout while an alias waits:
    the store stops (said once), and the alias's wait ends with no "Unhandled error in
    Deferred" (its URL stays in flight)."""
    import gc

    from twisted.internet.task import Clock
    from twisted.logger import globalLogPublisher

    from focused.pipelines import PageStorePipeline

    pipe = PageStorePipeline(tmp_path, lock_timeout=0.0)
    clock = Clock()
    pipe.call_later = clock.callLater
    pipe.open_spider()
    pipe.process_item({"url": "http://127.0.0.3/copy", "title": "Acid", "body": b"<p>x</p>"})
    other = sqlite3.connect(tmp_path / "pages.sqlite3", isolation_level=None)
    errors: list[str] = []

    def observe(event: dict[str, object]) -> None:
        if event.get("isError") or "failure" in event:
            errors.append(str(event.get("log_format") or event.get("failure")))

    globalLogPublisher.addObserver(observe)
    try:
        other.execute("BEGIN IMMEDIATE")
        assert pipe._on_aliased(page("http://127.0.0.2/acid"), of="http://127.0.0.3/copy")
        clock.advance(1.0)  # the retry meets the lock past its timeout: the store stops
        assert pipe.failed is not None
        other.execute("ROLLBACK")
        gc.collect()
    finally:
        globalLogPublisher.removeObserver(observe)
        other.close()
    assert not [e for e in errors if "Unhandled" in e], errors
    with PageStore(tmp_path) as store:
        assert not store.has("http://127.0.0.2/acid")


def test_near_duplicates_waiting_for_their_page_are_bounded(tmp_path: Path) -> None:
    """Near-duplicates of pages whose rows never come (their items dropped before the
    store) are held up to ``max_orphans``: the oldest are let go, not recorded."""
    from focused.pipelines import PageStorePipeline

    pipe = PageStorePipeline(tmp_path)
    pipe.max_orphans = 2
    pipe.open_spider()
    for n in range(3):
        assert pipe._on_aliased(page(f"http://127.0.0.2/{n}"), of=f"http://127.0.0.3/{n}")
    assert sum(len(v) for v in pipe._orphans.values()) == 2
    for n in range(3):
        pipe.process_item({"url": f"http://127.0.0.3/{n}", "title": "Acid", "body": b"<p/>"})
    store = pipe.store
    assert store is not None
    assert [a["url"] for a in store.aliases()] == ["http://127.0.0.2/1", "http://127.0.0.2/2"]
    pipe.close_spider()


@pytest.mark.parametrize(
    ("head", "body", "expected"),
    [
        ('<link rel="canonical" href="/wiki/Acid">', "", "http://127.0.0.2/wiki/Acid"),
        ('<LINK REL="Canonical" HREF="/wiki/Acid">', "", "http://127.0.0.2/wiki/Acid"),
        ('<link rel="alternate CANONICAL" href="/a">', "", "http://127.0.0.2/a"),
        ("<title>Acid</title>", "the canonical form of an acid", ""),  # in the text only
        ("<title>Acid</title>", "", ""),
    ],
)
def test_the_canonical_link_is_read_from_the_head(head: str, body: str, expected: str) -> None:
    from scrapy.http import HtmlResponse

    from focused.spiders.focused import FocusedSpider

    html = f"<html><head>{head}</head><body><p>{body}</p></body></html>".encode()
    response = HtmlResponse("http://127.0.0.2/mirror/Acid", body=html, encoding="utf-8")
    assert FocusedSpider._canonical(None, response) == expected  # type: ignore[arg-type]
