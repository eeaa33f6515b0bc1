"""A ``LOG_FILE`` or a feed on a disk that is full, or fills up during the crawl (a real
tmpfs; skipped where mounting is not permitted)."""

from __future__ import annotations

import contextlib
import logging
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from crawling import PROJECT, interrupted_crawl, run_crawl, sandbox_crawl_command

from bench.soak import SmallDisk, stored_urls
from focused.output.store import PageStore


@pytest.fixture
def disk(tmp_path: Path) -> Iterator[SmallDisk]:
    try:
        small = SmallDisk(tmp_path / "disk", size="1m")
    except PermissionError as exc:
        pytest.skip(str(exc))
    yield small
    small.unmount()


@pytest.mark.integration
def test_a_log_file_on_a_full_disk_is_refused_in_one_line(disk, tmp_path):
    """Opening the log file worked, its first line did not: a "--- Logging error ---"
    traceback per line, then Scrapy's close of the handler raised (an ``OSError``
    traceback, exit 1, nothing crawled). Now one line before anything starts, exit 2."""
    disk.fill(leave_kb=0)
    log = disk.path / "crawl.log"
    crawl = run_crawl(tmp_path / "out", "FOCUSED_SANDBOX_PAGES=60", f"LOG_FILE={log}", check=False)
    assert crawl.returncode == 2, crawl.log[-3000:]
    assert crawl.log.strip().splitlines() == [
        f"focused: error: LOG_FILE '{log}' cannot be written: its disk is full"
        " (No space left on device)"
    ]
    assert not (tmp_path / "out").exists()


@pytest.mark.integration
def test_a_log_file_whose_disk_fills_during_the_crawl(disk, tmp_path):
    """The disk of the log file fills once the spider has opened: Python's handler printed
    a "--- Logging error ---" traceback on stderr for every later line (hundreds), and
    the rest of the log was lost without a word. Now one line says so, the log goes on
    on stderr, and the crawl stores every page as before."""
    log = disk.path / "crawl.log"
    out = tmp_path / "out"
    cmd = sandbox_crawl_command(
        out,
        "FOCUSED_SANDBOX_PAGES=100",
        "FOCUSED_STRATEGY=bfs",
        "CONCURRENT_REQUESTS=1",
        "DOWNLOAD_DELAY=0.02",
        "LOG_LEVEL=DEBUG",
        f"LOG_FILE={log}",
    )
    returncode, stderr = interrupted_crawl(
        cmd,
        lambda: b"Spider opened" in (log.read_bytes() if log.exists() else b""),
        lambda: disk.fill(leave_kb=0),
    )
    assert returncode == 0, stderr[-3000:]
    assert "Logging error" not in stderr and "Traceback" not in stderr, stderr[-3000:]
    said = [line for line in stderr.splitlines() if line.startswith("focused: cannot write")]
    assert said == [
        f"focused: cannot write the log file {log}: No space left on device; the crawl goes"
        " on and logs to stderr instead"
    ]
    assert "Spider closed (finished)" in stderr  # the rest of the log
    assert "'finish_reason': 'finished'" in stderr


@pytest.mark.integration
def test_a_feed_whose_disk_fills_stops_the_crawl_in_one_line(disk, tmp_path):
    """``-o items.jsonl`` on a disk that fills during the crawl: Scrapy's feed exporter
    raised for every later item (an ERROR line and a traceback each, two more at the
    close) and the crawl ran on to its end, its feed cut short. Now its first failed
    write stops the crawl as a page store that cannot write does: one line, exit 1, the
    pages stored so far whole."""
    feed = disk.path / "items.jsonl"
    out = tmp_path / "out"
    cmd = sandbox_crawl_command(
        out,
        "FOCUSED_SANDBOX_PAGES=300",
        "FOCUSED_STRATEGY=bfs",
        "CONCURRENT_REQUESTS=1",
        "DOWNLOAD_DELAY=0.02",
    )
    returncode, stderr = interrupted_crawl(
        [*cmd, "-o", str(feed)],
        lambda: len(stored_urls(out) if (out / "pages.sqlite3").exists() else ()) >= 5,
        lambda: disk.fill(leave_kb=0),
    )
    assert returncode == 1, stderr[-3000:]
    assert "Traceback" not in stderr and "Error caught on signal handler" not in stderr
    errors = [line for line in stderr.splitlines() if "] ERROR: focused: error:" in line]
    assert len(errors) == 1, errors
    assert errors[0].endswith(
        f"focused: error: cannot write the feed in {feed}: [Errno 28] No space left on device;"
        " the crawl stopped, resume with the same command once there is room"
    )
    assert "Spider closed (store_failed)" in stderr
    assert 5 <= len(stored_urls(out)) < 250  # stopped early; a whole crawl stores ~295
    with PageStore(out) as store:
        assert store.check(verify=True) == []


def test_once_the_log_file_failed_a_last_line_is_printed_once(disk, capfd):
    """After the guard sent the log to stderr, the crawl command's last line
    (``focused.cli.say``: printed, then written through the log file's handler) would be
    on stderr twice: now once."""
    from scrapy.utils import log as scrapy_log

    from focused import cli

    handler = logging.FileHandler(disk.path / "x.log")
    handler.setFormatter(logging.Formatter("LOG %(message)s"))
    disk.fill(leave_kb=0)
    logger = logging.getLogger("tests.test_log_disk")
    old = scrapy_log._scrapy_root_handler
    scrapy_log._scrapy_root_handler = handler
    logger.addHandler(handler)
    try:
        cli.guard_log_file()
        logger.warning("first line")
        logger.warning("second line")
        cli.say("focused: error: the last line")
    finally:
        logger.removeHandler(handler)
        scrapy_log._scrapy_root_handler = old
        handler.close()
    err = capfd.readouterr().err.splitlines()
    assert err[0].startswith(f"focused: cannot write the log file {disk.path / 'x.log'}:")
    assert err[1:] == ["LOG first line", "LOG second line", "focused: error: the last line"]


def test_a_log_file_and_a_stderr_that_both_fail_lose_the_log_quietly(disk, monkeypatch):
    """The log's disk full and stderr failing too (``2> /dev/full``, a closed pipe): the
    log is dropped, no error reaches the code that logs and nothing loops."""
    from scrapy.utils import log as scrapy_log

    from focused import cli

    handler = logging.FileHandler(disk.path / "x.log")
    disk.fill(leave_kb=0)
    full = open("/dev/full", "w", buffering=1)  # noqa: SIM115 - closed below
    monkeypatch.setattr("sys.stderr", full)
    logger = logging.getLogger("tests.test_log_disk.both")
    old = scrapy_log._scrapy_root_handler
    scrapy_log._scrapy_root_handler = handler
    logger.addHandler(handler)
    try:
        cli.guard_log_file()
        for n in range(3):
            logger.warning("line %d", n)
        assert handler.stream.name == os.devnull
    finally:
        logger.removeHandler(handler)
        scrapy_log._scrapy_root_handler = old
        handler.close()
        monkeypatch.undo()
        with contextlib.suppress(OSError):
            full.close()


def test_the_last_line_with_stderr_unwritable_is_no_crash() -> None:
    """``say`` (the line a command stops with) raised ``OSError`` when stderr could not
    be written (``2> /dev/full``): the command ended with a traceback's status 1."""
    with open("/dev/full", "w") as full:
        done = subprocess.run(
            [sys.executable, "-c", "from focused.cli import say; say('focused: error: x')"],
            cwd=PROJECT,
            stderr=full,
            stdout=subprocess.PIPE,
            timeout=60,
        )
    assert done.returncode == 0
