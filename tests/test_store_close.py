"""A crawl with batched commits closes without waiting for its batch's time bound.

Every crawl here has ``FOCUSED_STORE_COMMIT_SECONDS=3600`` and batches larger than the
crawl, so only the close can commit them: each used to wait the hour before "stored"
(Scrapy waits for every item in progress, the ones waiting for the batch included,
before it closes the pipelines). That each crawl ends within its subprocess's two minutes
at all shows the batch committed when the spider closed; no time is measured. Then every
page that went through the pipelines is in the store.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import time
from pathlib import Path

from crawling import PROJECT, SANDBOX_SEED, run_crawl

from bench.command import crawl_command

#: batches no crawl here fills, and a time bound no crawl here reaches
BATCHED = ("FOCUSED_STORE_COMMIT_EVERY=100000", "FOCUSED_STORE_COMMIT_SECONDS=3600")


def stored(out: Path) -> int:
    conn = sqlite3.connect(f"{(out / 'pages.sqlite3').as_uri()}?mode=ro", uri=True)
    try:
        return conn.execute("SELECT COUNT(*) FROM pages").fetchone()[0]
    finally:
        conn.close()


def check_all_stored(out: Path, reason: str) -> dict:
    stats = json.loads((out / "stats.json").read_text(encoding="utf-8"))
    assert stats["finish_reason"] == reason
    pages = stats["item_scraped_count"]
    assert pages > 0 and stats["focused/stored"] == pages == stored(out)
    return stats


def test_reaching_closespider_pagecount_commits_the_open_batch(tmp_path: Path) -> None:
    out = tmp_path / "out"
    crawl = run_crawl(
        out, "FOCUSED_SANDBOX_PAGES=60", "CLOSESPIDER_PAGECOUNT=10", *BATCHED, timeout=120
    )
    check_all_stored(out, "closespider_pagecount")
    # the batch is committed after the close began, before the pipelines closed
    closing = crawl.log.index("Closing spider (closespider_pagecount)")
    assert closing < crawl.log.index("focused: stored ") < crawl.log.index("Spider closed")


def test_the_end_of_a_crawl_commits_the_open_batch(tmp_path: Path) -> None:
    """The last pages' items wait for the batch, nothing else is under way: the batch
    commits, and the crawl finishes (the engine finishes only once they went on)."""
    out = tmp_path / "out"
    run_crawl(out, "FOCUSED_SANDBOX_PAGES=60", *BATCHED, timeout=120)
    stats = check_all_stored(out, "finished")
    assert stats["focused/queue/waiting"] == 0  # the whole site: nothing left to fetch


def test_ctrl_c_commits_the_open_batch(tmp_path: Path) -> None:
    out = tmp_path / "out"
    settings = {
        "FOCUSED_WEB": "sandbox",
        "FOCUSED_SANDBOX_SEED": SANDBOX_SEED,
        "FOCUSED_SANDBOX_PAGES": 600,
        "AUTOTHROTTLE_ENABLED": False,
        "FOCUSED_REPORT": False,
        "DOWNLOAD_DELAY": 0.2,  # 600 pages take minutes: the crawl is under way at the Ctrl-C
        "LOG_LEVEL": "DEBUG",  # a line per page crawled
    }
    extra = [a for s in BATCHED for a in ("-s", s)]
    cmd = crawl_command("chemistry", output_dir=out, settings=settings, extra_args=extra)
    log = tmp_path / "crawl.log"
    with open(log, "wb") as fh:
        proc = subprocess.Popen(cmd, cwd=PROJECT, stdout=fh, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 60
        while log.read_bytes().count(b"Crawled (200)") < 5 and time.monotonic() < deadline:
            assert proc.poll() is None, log.read_text()[-3000:]
            time.sleep(0.05)
        os.kill(proc.pid, signal.SIGINT)  # the crawl this test started, by its pid
        assert proc.wait(timeout=120) == 0, log.read_text()[-3000:]
    finally:
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait()
    text = log.read_text()
    assert "Traceback" not in text, text[-3000:]
    check_all_stored(out, "shutdown")
    assert text.index("Closing spider (shutdown)") < text.index("focused: stored ")
