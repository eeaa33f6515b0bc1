"""Scrapy's feed exports of a real sandbox crawl: every format Scrapy ships, read back.

One crawl writes a feed per format through ``FEEDS`` (JSON, JSON lines, CSV, XML), one
more writes JSON lines with ``-O`` (the command-line way). Each feed is read back with
the standard library (``json``, ``csv``, ``xml.etree``) and must hold exactly the pages
the page store holds: the same URLs, with the store's ``file_path`` and
``content_hash``, and no raw bytes.
"""

from __future__ import annotations

import csv
import hashlib
import json
import subprocess
import xml.etree.ElementTree as ET
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from bench.command import crawl_command
from bench.scale import free_port
from focused.output.store import read_body
from tests.crawling import PROJECT, SANDBOX_PAGES, SANDBOX_SEED, Crawl, run_crawl

PAGES = 30  # CLOSESPIDER_PAGECOUNT: a few in flight at the close come on top
FORMATS = {"json": "json", "jsonlines": "jsonl", "csv": "csv", "xml": "xml"}


def read_json(path: Path) -> list[dict[str, Any]]:
    return json.loads(path.read_text(encoding="utf-8"))


def read_jsonlines(path: Path) -> list[dict[str, Any]]:
    lines = path.read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def read_csv(path: Path) -> list[dict[str, Any]]:
    with path.open(newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def read_xml(path: Path) -> list[dict[str, Any]]:
    root = ET.parse(path).getroot()
    assert root.tag == "items"
    return [{field.tag: field.text or "" for field in item} for item in root.iter("item")]


READERS: dict[str, Callable[[Path], list[dict[str, Any]]]] = {
    "json": read_json,
    "jsonlines": read_jsonlines,
    "csv": read_csv,
    "xml": read_xml,
}


def assert_feed_matches_store(items: list[dict[str, Any]], crawl: Crawl) -> None:
    """The feed holds the stored pages, once each, with the store's path and hash."""
    rows = {r["url"]: r for r in crawl.rows()}
    assert len(rows) >= PAGES
    urls = [item["url"] for item in items]
    assert len(urls) == len(set(urls))
    assert set(urls) == set(rows)
    for item in items:
        row = rows[item["url"]]
        assert item["file_path"] == row["file_path"] and item["file_path"].endswith(".warc.gz")
        assert int(item["record_offset"]) == row["record_offset"]
        assert item["content_hash"] == row["content_hash"]
        assert "body" not in item  # the raw bytes went to the store only
        assert item["title"] == row["title"]
        assert float(item["page_relevance"]) == pytest.approx(row["page_relevance"])
    # the path leads to the page, byte for byte
    first = items[0]
    raw = read_body(
        crawl.out, first["file_path"], int(first["record_offset"]), int(first["record_length"])
    )
    assert hashlib.sha256(raw).hexdigest() == first["content_hash"]
    assert any(item["excerpt"] for item in items) and any(item["text"] for item in items)


def sandbox_settings() -> dict[str, object]:
    return {
        "FOCUSED_WEB": "sandbox",
        "FOCUSED_SANDBOX_SEED": SANDBOX_SEED,
        "FOCUSED_SANDBOX_PAGES": SANDBOX_PAGES,
        "AUTOTHROTTLE_ENABLED": False,
        "FOCUSED_REPORT": False,
        "LOG_LEVEL": "INFO",
        "CLOSESPIDER_PAGECOUNT": PAGES,
    }


@pytest.fixture(scope="module")
def feeds_crawl(tmp_path_factory: pytest.TempPathFactory) -> tuple[Crawl, dict[str, Path]]:
    """One crawl with a feed in every format, set with ``FEEDS``."""
    root = tmp_path_factory.mktemp("feeds")
    paths = {fmt: root / f"items.{ext}" for fmt, ext in FORMATS.items()}
    feeds = json.dumps({str(path): {"format": fmt} for fmt, path in paths.items()})
    settings = [f"{k}={v}" for k, v in sandbox_settings().items()]
    crawl = run_crawl(root / "out", *settings, f"FEEDS={feeds}")
    return crawl, paths


@pytest.mark.parametrize("fmt", sorted(FORMATS))
def test_feeds_setting_exports_every_stored_page(
    fmt: str, feeds_crawl: tuple[Crawl, dict[str, Path]]
) -> None:
    crawl, paths = feeds_crawl
    assert "ERROR" not in crawl.log, crawl.log[-3000:]
    assert f"Stored {fmt} feed" in crawl.log
    assert_feed_matches_store(READERS[fmt](paths[fmt]), crawl)


def test_dash_o_writes_the_feed_and_exits_0(tmp_path: Path) -> None:
    feed = tmp_path / "items.jsonl"
    cmd = crawl_command(
        "chemistry",
        output_dir=tmp_path / "out",
        settings=sandbox_settings(),
        extra_args=["-O", str(feed)],
    )
    proc = subprocess.run(cmd, cwd=PROJECT, capture_output=True, text=True, timeout=240)
    crawl = Crawl(tmp_path / "out", proc.returncode, proc.stderr + proc.stdout)
    assert proc.returncode == 0, crawl.log[-3000:]
    assert "ERROR" not in crawl.log, crawl.log[-3000:]
    assert_feed_matches_store(read_jsonlines(feed), crawl)


# --- the exit status when items or feeds fail ----------------------------------------
FAILURE_LINE = "focused: error: every item failed in the pipelines/exporters ("


def crawl_with(tmp_path: Path, *extra_args: str, **settings: object) -> Crawl:
    cmd = crawl_command(
        "chemistry",
        output_dir=tmp_path / "out",
        settings={**sandbox_settings(), "CLOSESPIDER_PAGECOUNT": 10, **settings},
        extra_args=extra_args,
    )
    proc = subprocess.run(cmd, cwd=PROJECT, capture_output=True, text=True, timeout=240)
    return Crawl(tmp_path / "out", proc.returncode, proc.stderr + proc.stdout)


def error_lines(crawl: Crawl) -> list[str]:
    return [line for line in crawl.log.splitlines() if line.startswith("focused: error:")]


def test_a_pipeline_that_fails_on_every_item_fails_the_crawl(tmp_path: Path) -> None:
    pipelines = {
        "focused.pipelines.PageStorePipeline": 300,
        "focused.pipelines.MetricsPipeline": 800,
        "tests.failing_pipeline.FailingPipeline": 900,
    }
    crawl = crawl_with(tmp_path, ITEM_PIPELINES=pipelines)
    assert crawl.returncode == 1, crawl.log[-3000:]
    assert "this pipeline fails on every item" in crawl.log
    [line] = error_lines(crawl)
    assert line.startswith(FAILURE_LINE) and line.endswith(" errors); see the log")
    errors = int(line[len(FAILURE_LINE) :].split()[0])
    assert errors >= 10 and errors == len(crawl.rows())  # one per page, each stored first


def test_a_feed_that_fails_on_every_item_stops_the_crawl(tmp_path: Path) -> None:
    """A feed that opened but cannot take an item (an unwritable feed folder is refused
    before the crawl: ``test_cli_errors.py``): its first failed write stops the crawl in
    one line, as a full disk under the feed does (``test_log_disk.py``); it was an ERROR
    line and a traceback per item, the crawl running on to its end."""
    exporters = {"failing": "tests.failing_exporter.FailingExporter"}
    feed = f"{tmp_path / 'items.jsonl'}:failing"
    crawl = crawl_with(tmp_path, "-O", feed, FEED_EXPORTERS=exporters)
    assert crawl.returncode == 1, crawl.log[-3000:]
    [line] = [x for x in crawl.log.splitlines() if "] ERROR: focused: error:" in x]
    assert f"cannot write the feed in {tmp_path / 'items.jsonl'}" in line
    assert "this exporter fails on every item; the crawl stopped" in line
    assert "Traceback" not in crawl.log and error_lines(crawl) == []
    assert "Spider closed (store_failed)" in crawl.log
    assert len(crawl.rows()) >= 1  # the pages themselves are stored


@pytest.mark.parametrize("exporter", ["LateFailingExporter", "CloseFailingExporter"])
def test_a_failed_feed_leaves_every_other_feed_whole(tmp_path: Path, exporter: str) -> None:
    """Three feeds, one of which fails: mid-crawl (its disk full after two items) or at
    its last write as the crawl closes. Before, a feed that failed mid-crawl left the
    other feeds unfinished (a JSON feed without its closing ``]``, an XML one without
    ``</items>``, no item after the failure), the line named every feed; one that failed
    at the close was a "Task exception was never retrieved" traceback and exit status 0.
    Now the other feeds are whole, with every stored page, and one line names the
    failed feed; exit status 1."""
    good = {"json": tmp_path / "good.json", "xml": tmp_path / "good.xml"}
    bad = tmp_path / "bad.jsonl"
    exporters = {"failing": f"tests.failing_exporter.{exporter}"}
    feeds = ["-o", str(good["json"]), "-o", str(good["xml"]), "-o", f"{bad}:failing"]
    crawl = crawl_with(tmp_path, *feeds, FEED_EXPORTERS=exporters)
    assert crawl.returncode == 1, crawl.log[-3000:]
    assert "Traceback" not in crawl.log and "Task exception" not in crawl.log
    [line] = [x for x in crawl.log.splitlines() if "ERROR: focused: error:" in x]
    assert f"the feed in {bad}: [Errno 28] No space left on device" in line
    assert "good." not in line
    assert error_lines(crawl) == []  # no second line from the crawl command
    stored = {row["url"] for row in crawl.rows()}
    assert len(stored) >= 3  # more than the two items the late failing feed took
    for fmt, path in good.items():
        urls = [item["url"] for item in READERS[fmt](path)]
        assert sorted(urls) == sorted(stored), fmt


def test_an_item_one_feed_refuses_is_lost_in_that_feed_alone(tmp_path: Path) -> None:
    """Two feeds, one of which refuses one item with an exception that is no
    ``OSError`` (a ``TypeError``: a field its encoder cannot serialise; a
    ``UnicodeEncodeError`` under ``FEED_EXPORT_ENCODING=latin-1`` is the same). Before,
    the exporter was left with that one feed: the other took no further item and was
    never finished (a JSON feed without its closing ``]``). Now the item is lost in the
    refusing feed alone, logged as Scrapy logs it, and both feeds are finished."""
    good = tmp_path / "good.json"
    bad = tmp_path / "bad.jsonl"
    exporters = {"oneitem": "tests.failing_exporter.OneItemFailingExporter"}
    crawl = crawl_with(tmp_path, "-o", str(good), "-o", f"{bad}:oneitem", FEED_EXPORTERS=exporters)
    assert crawl.returncode == 0, crawl.log[-3000:]
    assert crawl.log.count("Error caught on signal handler") == 1, crawl.log[-3000:]
    assert "Object of type object is not JSON serializable" in crawl.log
    stored = {row["url"] for row in crawl.rows()}
    assert len(stored) >= 3
    assert sorted(item["url"] for item in read_json(good)) == sorted(stored)
    in_bad = [item["url"] for item in read_jsonlines(bad)]
    assert len(in_bad) == len(stored) - 1 and set(in_bad) < stored


def test_a_batch_whose_next_batch_cannot_start_is_finished_whole(tmp_path: Path) -> None:
    """A batched JSON feed (two items a file) whose third file cannot be made: the crawl
    stops in one line, and the two full batches are finished (their closing ``]``),
    not cut short as the failed feed's files are."""
    template = tmp_path / "batch-%(batch_id)d.json"
    feeds = {str(template): {"format": "json", "batch_item_count": 2}}
    storages = {"": "tests.failing_exporter.ThirdBatchFailingStorage"}
    crawl = crawl_with(tmp_path, FEEDS=json.dumps(feeds), FEED_STORAGES=storages)
    assert crawl.returncode == 1, crawl.log[-3000:]
    assert "Traceback" not in crawl.log
    stored = {row["url"] for row in crawl.rows()}
    batches = [read_json(tmp_path / f"batch-{n}.json") for n in (1, 2)]
    assert [len(batch) for batch in batches] == [2, 2]
    assert {item["url"] for batch in batches for item in batch} <= stored
    assert not (tmp_path / "batch-3.json").exists()
    [line] = [x for x in crawl.log.splitlines() if "ERROR: focused: error:" in x]
    assert f"cannot start the next batch of the feed in {template}" in line


def test_a_feed_that_cannot_be_stored_fails_the_crawl(tmp_path: Path) -> None:
    """The items are exported (to a temporary file) but storing the feed fails at the
    close: an FTP server that is not there (``feedexport/failed_count/FTPFeedStorage``)."""
    crawl = crawl_with(tmp_path, "-o", f"ftp://u:p@127.0.0.1:{free_port()}/items.jsonl")
    assert crawl.returncode == 1, crawl.log[-3000:]
    assert "feedexport/failed_count/FTPFeedStorage" in crawl.log
    [line] = error_lines(crawl)
    assert line == "focused: error: a feed could not be written or stored (1 failures); see the log"
