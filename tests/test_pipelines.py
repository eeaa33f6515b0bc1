"""Store and metrics pipelines fed with real PageItems, real SQLite and real files.

(The lead's integration tests run them inside real ``scrapy crawl`` processes.)
"""

from __future__ import annotations

import csv
import hashlib
import json
import logging
import queue
import sqlite3
import warnings
from pathlib import Path
from typing import Any

import pytest
from scrapy import Spider
from scrapy.exceptions import DropItem
from scrapy.utils.test import get_crawler
from twisted.internet.task import Clock

from focused.items import PageItem
from focused.output.store import Location, PageStore, read_body
from focused.pipelines import MetricsPipeline, PageStorePipeline, Pending
from focused.signals import frontier_checkpoint, page_store_opened, pages_stored

TARGETS = frozenset({"http://h/wiki/A.html", "http://h/wiki/AT&T.html", "http://h/wiki/C.html"})


def page(name: str, relevant: bool, **extra: object) -> PageItem:
    url = f"http://h/wiki/{name}.html"
    return PageItem(
        url=url,
        title=name,
        page_relevance=3.0 if relevant else 0.5,
        relevant=relevant,
        depth=1,
        parent_url="http://h/wiki/Seed.html",
        fetched_at=1700000000.0,
        status=200,
        encoding="utf-8",
        strategy="genetic",
        body=f"<html><title>{name}</title><p>{'x' * 300}</p></html>".encode(),
        **extra,  # type: ignore[arg-type]
    )


def db_rows(out: Path) -> list[tuple]:
    conn = sqlite3.connect(out / "pages.sqlite3")
    try:
        return conn.execute(
            "SELECT url, title, relevant, is_target, content_hash, file_path FROM pages ORDER BY id"
        ).fetchall()
    finally:
        conn.close()


def test_store_pipeline_writes_rows_and_files(tmp_path: Path) -> None:
    pipe = PageStorePipeline(tmp_path, commit_every=1)
    pipe.open_spider()
    items = [page("A", True, is_target=True), page("B", False)]
    bodies = [i.body for i in items]
    for item in items:
        assert pipe.process_item(item) is item
        assert item.body == b""  # dropped after storing
    # committed at once: another connection sees both rows while the crawl runs
    rows = db_rows(tmp_path)
    assert [r[:4] for r in rows] == [
        ("http://h/wiki/A.html", "A", 1, 1),
        ("http://h/wiki/B.html", "B", 0, None),
    ]
    for item, body, row in zip(items, bodies, rows, strict=True):
        digest = hashlib.sha256(body).hexdigest()
        assert item.content_hash == digest == row[4]
        assert item.file_path == row[5] and item.file_path.startswith("segments/")
        where = (item.record_offset, item.record_length)
        assert read_body(tmp_path, item.file_path, *where) == body
    again = page("A", False)  # the same URL once more (a FOCUSED_CONTINUE crawl)
    with pytest.raises(DropItem, match="stored already"):  # no new item
        pipe.process_item(again)
    assert again.body == b"" and again.file_path == items[0].file_path
    # a dict item works too
    as_dict = {"url": "http://h/wiki/D.html", "relevant": True, "body": b"<p>d</p>"}
    pipe.process_item(as_dict)
    assert "body" not in as_dict and as_dict["file_path"].endswith(".warc.gz")  # no bytes left
    assert pipe.process_item({"other": 1}) == {"other": 1}  # not a page: passed on
    pipe.close_spider()
    assert pipe.store is not None
    assert (pipe.store.stored, pipe.store.duplicates) == (3, 1)
    assert len(db_rows(tmp_path)) == 3


def test_metrics_pipeline_summary_csv_plot_and_log(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    pipe = MetricsPipeline(tmp_path, log_every=2, targets=TARGETS, strategy="genetic")
    pipe.open_spider()
    caplog.set_level(logging.INFO, logger="focused.pipelines")
    for item in [
        page("A", True),  # target (from the set)
        page("B", True),
        PageItem(url="http://h/wiki/AT%26T.html", relevant=False),  # target, other spelling
        page("E", False, is_target=True),  # the item says so
        page("A", True),  # seen: not counted again
        {"url": "http://h/wiki/F.html", "relevant": False},
    ]:
        pipe.process_item(item)
    pipe.close_spider()
    # pages A B AT&T E F = 5; targets found A, AT&T, E = 3 of 3; relevant A, B = 2
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["pages"] == 5 and summary["relevant"] == 2
    assert summary["targets"] == 3 and summary["targets_found"] == 3
    assert summary["precision"] == pytest.approx(3 / 5)
    assert summary["recall"] == pytest.approx(1.0)
    # recall after each page: 1/3, 1/3, 2/3, 1, 1 -> mean 10/15
    assert summary["auc_recall"] == pytest.approx(2 / 3)
    assert summary["strategy"] == "genetic"
    with (tmp_path / "metrics.csv").open(newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert [r["pages"] for r in rows] == ["1", "2", "3", "4", "5"]
    assert [float(r["recall"]) for r in rows] == pytest.approx([1 / 3, 1 / 3, 2 / 3, 1, 1], 1e-5)
    assert (tmp_path / "curve.png").read_bytes()[:4] == b"\x89PNG"
    messages = [r.getMessage() for r in caplog.records]
    assert "focused: 2 pages, precision 0.500, recall 0.333 (1/3 targets)" in messages
    assert "focused: 4 pages, precision 0.750, recall 1.000 (3/3 targets)" in messages


def test_metrics_without_targets_use_relevant_pages(tmp_path: Path) -> None:
    pipe = MetricsPipeline(tmp_path, log_every=0)
    pipe.open_spider()
    for item in (page("A", True), page("B", False), page("C", True), page("D", True)):
        pipe.process_item(item)
    pipe.close_spider()
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["recall"] is None and summary["targets"] is None  # unknown, not 0 of 0
    assert summary["precision"] == pytest.approx(0.75)


def test_metrics_without_the_report_draw_no_curve(tmp_path: Path) -> None:
    """``FOCUSED_REPORT=False``: the numbers are written, no curve.png is drawn."""
    pipe = MetricsPipeline(tmp_path, log_every=0, draw=False)
    pipe.open_spider()
    for item in (page("A", True), page("B", False)):
        pipe.process_item(item)
    pipe.close_spider()
    assert json.loads((tmp_path / "summary.json").read_text())["pages"] == 2
    assert (tmp_path / "metrics.csv").is_file() and not (tmp_path / "curve.png").exists()


class TargetSpider(Spider):
    name = "targets"
    targets = TARGETS
    focused_crawl = True  # the project's pipelines serve it (focused.scope)


def test_from_crawler_checkpoint_before_commit_stats_and_resume(tmp_path: Path) -> None:
    settings = {
        "FOCUSED_OUTPUT_DIR": str(tmp_path),
        "FOCUSED_METRICS_LOG_EVERY": 100,
        "FOCUSED_STRATEGY": "bfs",
        "FOCUSED_STORE_THREAD": False,  # no reactor here (the default; threaded: below)
        "ITEM_PIPELINES": {
            "focused.pipelines.PageStorePipeline": 300,
            "focused.pipelines.MetricsPipeline": 800,
        },
    }
    crawler = get_crawler(TargetSpider, settings)
    crawler._apply_settings()
    crawler.spider = crawler._create_spider()
    from scrapy.pipelines import ItemPipelineManager

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no deprecated signature (Scrapy 2.19)
        manager = ItemPipelineManager.from_crawler(crawler)
    store_pipe, metrics_pipe = manager.middlewares
    assert isinstance(store_pipe, PageStorePipeline) and isinstance(metrics_pipe, MetricsPipeline)

    committed_at_checkpoint: list[int] = []

    def on_checkpoint() -> None:  # what the scheduler sees when it commits its journal
        conn = sqlite3.connect(tmp_path / "pages.sqlite3")
        committed_at_checkpoint.append(conn.execute("SELECT COUNT(*) FROM pages").fetchone()[0])
        conn.close()

    crawler.signals.connect(on_checkpoint, signal=frontier_checkpoint)
    opened: list[bool] = []
    told: list[tuple[list[str], int]] = []

    def on_opened() -> None:
        opened.append(True)

    def on_stored(urls: list[str]) -> None:  # what the scheduler journals as done
        conn = sqlite3.connect(tmp_path / "pages.sqlite3")
        told.append((urls, conn.execute("SELECT COUNT(*) FROM pages").fetchone()[0]))
        conn.close()

    crawler.signals.connect(on_opened, signal=page_store_opened)
    crawler.signals.connect(on_stored, signal=pages_stored)
    store_pipe.open_spider()
    assert opened == [True]
    metrics_pipe.open_spider()
    for item in (page("A", True), page("B", False)):
        metrics_pipe.process_item(store_pipe.process_item(item))
    # a URL stored already (a FOCUSED_CONTINUE crawl fetched it again): no new item
    with pytest.raises(DropItem, match="A.html is stored already: not a new page"):
        store_pipe.process_item(page("A", True))
    assert committed_at_checkpoint == [0, 1]  # sent before each page's commit
    a, b = "http://h/wiki/A.html", "http://h/wiki/B.html"
    # after each commit; the second A was stored already: told at once
    assert told == [([a], 1), ([b], 2), ([a], 2)]
    stats = crawler.stats
    assert stats.get_value("focused/stored") == 2
    assert stats.get_value("focused/duplicates") == 1
    assert stats.get_value("focused/pages") == 2
    assert stats.get_value("focused/targets") == 3  # spider.targets
    assert stats.get_value("focused/targets_found") == 1
    assert stats.get_value("focused/precision") == pytest.approx(0.5)
    assert stats.get_value("focused/recall") == pytest.approx(1 / 3, 1e-5)
    assert stats.get_value("focused/relevant") == 1
    metrics_pipe.close_spider()
    store_pipe.close_spider()

    # resume (JOBDIR set): the curve continues from the stored pages
    crawler2 = get_crawler(TargetSpider, {**settings, "JOBDIR": str(tmp_path / "job")})
    crawler2._apply_settings()
    crawler2.spider = crawler2._create_spider()
    resumed = MetricsPipeline.from_crawler(crawler2)
    resumed.open_spider()
    assert resumed.curve.pages == 2 and resumed.curve.targets_found == 1
    resumed.process_item(page("B", False))  # fetched again: not a new page
    resumed.process_item(page("C", True))
    resumed.close_spider()
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert (summary["pages"], summary["targets_found"], summary["strategy"]) == (3, 2, "bfs")


class Handoff:
    """A ``call_from_thread`` that queues what the writer thread hands back; the test
    runs the calls (as the reactor would, in order) when it chooses."""

    def __init__(self) -> None:
        self.calls: queue.Queue = queue.Queue()

    def __call__(self, func, *args) -> None:  # noqa: ANN001
        self.calls.put((func, args))

    def run(self, n: int) -> None:
        for _ in range(n):
            func, args = self.calls.get(timeout=60)
            func(*args)
        assert self.calls.empty()


def test_threaded_store_row_after_file_in_item_order(tmp_path: Path) -> None:
    settings = {
        "FOCUSED_OUTPUT_DIR": str(tmp_path),
        "FOCUSED_STORE_GZIP_LEVEL": 9,
        "FOCUSED_STORE_THREAD": True,
    }
    crawler = get_crawler(TargetSpider, settings)
    crawler._apply_settings()
    pipe = PageStorePipeline.from_crawler(crawler)
    assert pipe.threaded and pipe.gzip_level == 9  # from the settings
    handoff = Handoff()
    pipe.call_from_thread = handoff
    committed_at_checkpoint: list[int] = []

    def on_checkpoint() -> None:
        conn = sqlite3.connect(tmp_path / "pages.sqlite3")
        committed_at_checkpoint.append(conn.execute("SELECT COUNT(*) FROM pages").fetchone()[0])
        conn.close()

    crawler.signals.connect(on_checkpoint, signal=frontier_checkpoint)
    told: list[list[str]] = []

    def on_stored(urls: list[str]) -> None:
        told.append([u.rsplit("/", 1)[-1] for u in urls])

    crawler.signals.connect(on_stored, signal=pages_stored)
    pipe.open_spider()
    a, b, a_again, c = page("A", True), page("B", False), page("A", False), page("C", True)
    c.body = b.body  # the same content as B: one file for both
    bodies = {"A": a.body, "B": b.body}
    out: list[object] = []
    failed: list[object] = []
    for item in (a, b, a_again, c):
        pending = pipe.process_item(item)
        assert isinstance(pending, Pending) and item.body == b""
        pending.deferred.addCallbacks(out.append, failed.append)
    # the files may be written by now, but no row is in and no item has left
    assert db_rows(tmp_path) == [] and out == [] and a.file_path == ""
    handoff.run(4)  # every page comes back, in order (the second A writes no file)
    assert out == [a, b, c]  # the second A is no new item: dropped
    assert [f.type for f in failed] == [DropItem]
    rows = db_rows(tmp_path)
    assert [(r[0], r[1]) for r in rows] == [(f"http://h/wiki/{n}.html", n) for n in "ABC"]
    assert committed_at_checkpoint == [0, 1, 2]  # the journal is committed before each row
    assert told == [["A.html"], ["B.html"], ["A.html"], ["C.html"]]  # in item order
    assert (a_again.file_path, a_again.record_offset) == (a.file_path, a.record_offset)
    assert c.content_hash == b.content_hash  # same body, a record of its own
    for item, name in ((a, "A"), (b, "B")):
        digest = hashlib.sha256(bodies[name]).hexdigest()
        assert item.content_hash == digest
        where = (item.record_offset, item.record_length)
        assert read_body(tmp_path, item.file_path, *where) == bodies[name]
    stats = crawler.stats
    assert (stats.get_value("focused/stored"), stats.get_value("focused/duplicates")) == (3, 1)

    # a file that cannot be written: the store stops (one line, the crawl is told to stop);
    # that page and every later one are dropped, no row, nothing told as stored
    assert pipe.store is not None
    write_body = pipe.store.write_body

    def broken(body: bytes, digest: str | None = None, record: Any = None) -> Location:
        if body == b"<bad>":
            raise OSError("disk full")
        return write_body(body, digest, record)

    pipe.store.write_body = broken  # type: ignore[method-assign]
    bad, good = page("Bad", False), page("Good", False)
    bad.body, good_body = b"<bad>", good.body
    for item in (bad, good):
        pipe.process_item(item).deferred.addCallbacks(out.append, failed.append)
    handoff.run(2)
    assert len(failed) == 3 and all(f.check(DropItem) for f in failed)  # A again too
    assert isinstance(pipe.failed, OSError) and out[-1] is c
    assert crawler.stats.get_value("focused/store_failed").startswith(
        f"focused: error: cannot store pages in {tmp_path}: disk full; the crawl stopped"
    )
    assert [r[1] for r in db_rows(tmp_path)] == ["A", "B", "C"]
    assert told[-1] == ["C.html"]
    with pytest.raises(DropItem):
        pipe.process_item(page("Later", True))
    assert pipe.close_spider() is None  # nothing left in flight
    with PageStore(tmp_path).open() as store:  # Good's record, written before it was dropped
        assert store.check() == [] and store.repaired == [] and store.truncated > 0
        assert good_body not in b"".join(store.body(u) or b"" for u in store.urls())


def test_a_page_stored_before_is_told_with_the_commit_that_makes_it_durable(
    tmp_path: Path,
) -> None:
    """With batched commits, a URL found in the open transaction is told with its batch."""
    crawler = get_crawler(TargetSpider, {"FOCUSED_OUTPUT_DIR": str(tmp_path)})
    pipe = PageStorePipeline(tmp_path, commit_every=2, signals=crawler.signals)
    pipe.call_later = Clock().callLater  # the time bound never comes here
    told: list[list[str]] = []

    def on_stored(urls: list[str]) -> None:
        told.append([u.rsplit("/", 1)[-1] for u in urls])

    crawler.signals.connect(on_stored, signal=pages_stored)
    pipe.open_spider()
    pipe.process_item(page("A", True))
    with pytest.raises(DropItem):  # in the open transaction: not durable yet; no new item
        pipe.process_item(page("A", True))
    assert told == []
    pipe.process_item(page("B", True))  # commits the batch
    assert told == [["A.html", "B.html", "A.html"]]
    pipe.close_spider()
    assert told[1:] == []  # nothing left to commit


class Batched:
    """A page store pipeline with batched commits on Twisted's own clock (the time bound
    without a running reactor): ``told`` gathers the page names of ``pages_stored``,
    ``out`` and ``failed`` the items that went on and the failures."""

    def __init__(
        self, tmp_path: Path, commit_every: int, commit_seconds: float = 1.0, held: int = 2_500_000
    ) -> None:
        crawler = get_crawler(TargetSpider, {"FOCUSED_OUTPUT_DIR": str(tmp_path)})
        self.pipe = PageStorePipeline(
            tmp_path,
            commit_every=commit_every,
            commit_seconds=commit_seconds,
            held_bytes_max=held,
            signals=crawler.signals,
            stats=crawler.stats,
            crawler=crawler,
        )
        self.clock = Clock()
        self.pipe.call_later = self.clock.callLater
        self.told: list[str] = []
        self.out: list = []
        self.failed: list = []
        crawler.signals.connect(self.on_stored, signal=pages_stored)  # held by self
        self.pipe.open_spider()

    def on_stored(self, urls: list[str]) -> None:
        self.told.extend(u.rsplit("/", 1)[-1] for u in urls)

    def follow(self, item: object) -> None:
        """Hand ``item`` to the pipeline; it must wait (a ``Pending``)."""
        result = self.pipe.process_item(item)
        assert isinstance(result, Pending)
        result.deferred.addCallbacks(self.out.append, self.failed.append)


def test_with_batched_commits_an_item_goes_on_only_once_its_row_is_committed(
    tmp_path: Path,
) -> None:
    batch = Batched(tmp_path, commit_every=3)
    a, b, c = page("A", True), page("B", False), page("C", True)
    batch.follow(a)
    batch.follow(b)
    # in the open transaction: not durable, not told, and the items wait
    assert batch.out == [] and batch.told == [] and db_rows(tmp_path) == []
    assert batch.pipe.process_item(c) is c  # its row commits the batch: it goes on at once
    assert (
        batch.out == [a, b] and batch.failed == [] and batch.told == ["A.html", "B.html", "C.html"]
    )
    assert [r[1] for r in db_rows(tmp_path)] == ["A", "B", "C"]
    assert not batch.clock.getDelayedCalls()  # the commit took the time bound with it
    batch.pipe.close_spider()


def test_a_batch_commits_at_its_time_bound(tmp_path: Path) -> None:
    batch = Batched(tmp_path, commit_every=100, commit_seconds=0.5)
    batch.follow(page("A", True))
    batch.clock.advance(0.3)
    batch.follow(page("B", True))
    batch.clock.advance(0.15)  # 0.45 s after the batch's first row
    assert batch.out == [] and batch.told == []
    batch.clock.advance(0.1)
    assert [i.title for i in batch.out] == ["A", "B"] and batch.told == ["A.html", "B.html"]
    assert [r[1] for r in db_rows(tmp_path)] == ["A", "B"]
    batch.follow(page("C", True))  # a new batch, a new bound
    batch.clock.advance(0.49)
    assert len(batch.out) == 2
    batch.clock.advance(0.02)
    assert len(batch.out) == 3 and batch.failed == [] and batch.told[-1] == "C.html"
    batch.pipe.close_spider()


def test_a_failed_batch_commit_drops_its_waiting_items_and_tells_nothing(
    tmp_path: Path,
) -> None:
    batch = Batched(tmp_path, commit_every=100, commit_seconds=0.5)
    batch.follow(page("A", True))
    batch.follow(page("B", True))
    assert batch.pipe.store is not None

    def full_disk() -> None:
        raise sqlite3.OperationalError("database or disk is full")

    batch.pipe.store._commit = full_disk  # type: ignore[method-assign]
    batch.clock.advance(0.5)
    assert (
        batch.out == [] and len(batch.failed) == 2 and all(f.check(DropItem) for f in batch.failed)
    )
    assert batch.told == [] and db_rows(tmp_path) == []
    assert batch.pipe.failed is not None and batch.pipe.crawler.stats.get_value(
        "focused/store_failed"
    )
    with pytest.raises(DropItem):
        batch.pipe.process_item(page("C", True))
    batch.pipe.close_spider()


def test_a_batch_commits_early_when_its_items_hold_too_many_response_bytes(
    tmp_path: Path,
) -> None:
    """Scrapy stops downloading while its scraper holds SCRAPER_SLOT_MAX_ACTIVE_SIZE of
    responses, waiting items included: the batch must not wait for pages that cannot
    come. Each response counts at least 1024 bytes, as in Scrapy's scraper."""
    crawler = get_crawler(TargetSpider, {"SCRAPER_SLOT_MAX_ACTIVE_SIZE": 5000})
    assert PageStorePipeline.from_crawler(crawler).held_bytes_max == 2500
    batch = Batched(tmp_path, commit_every=100, held=2048)
    batch.follow(page("A", True))
    # its time bound, and the next look at whether the crawl goes on without the batch
    assert batch.out == [] and len(batch.clock.getDelayedCalls()) == 2
    batch.follow(page("B", True))  # 2 x 1024: commit now
    assert [i.title for i in batch.out] == ["A", "B"] and batch.told == ["A.html", "B.html"]
    assert batch.clock.getDelayedCalls() == [] and batch.failed == []
    batch.pipe.close_spider()


def test_a_page_stored_in_an_earlier_batch_goes_on_at_once(tmp_path: Path) -> None:
    batch = Batched(tmp_path, commit_every=100, commit_seconds=0.5)
    batch.follow(page("A", True))
    batch.clock.advance(0.5)  # A's batch committed
    batch.follow(page("B", True))  # a new batch is open
    with pytest.raises(DropItem):  # durable already: told at once, no new item
        batch.pipe.process_item(page("A", False))
    assert batch.told == ["A.html", "A.html"]
    with pytest.raises(DropItem):  # B's row is not committed: told with its batch
        batch.pipe.process_item(page("B", False))
    assert batch.told == ["A.html", "A.html"]
    batch.clock.advance(0.5)
    assert batch.told[2:] == ["B.html", "B.html"] and [i.title for i in batch.out] == ["A", "B"]
    assert batch.failed == []
    batch.pipe.close_spider()
