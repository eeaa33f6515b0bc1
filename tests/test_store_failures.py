"""Nothing stored is ever lost or half-written: a full disk, a failed SQLite commit, a
journal that cannot be written, a database another program has locked.

The full-disk crawl runs on a real 2 MB tmpfs (``mount -t tmpfs``; skipped where mounting
is not permitted); the SQLite failures are real ``SQLITE_FULL`` errors, made with
``PRAGMA max_page_count`` on the store's or the journal's own connection.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
import threading
import time
from pathlib import Path

import pytest
from crawling import interrupted_crawl, run_crawl, sandbox_crawl_command
from scrapy import signals as scrapy_signals
from scrapy.exceptions import DropItem
from test_scheduler import _open, _open_with_pipelines, _req, _respond

from bench.soak import SmallDisk, _key, journal_states, stored_urls
from focused.frontier.journal import DONE, IN_FLIGHT, WAITING
from focused.items import PageItem
from focused.output.atomic import write_text
from focused.output.store import PageStore
from focused.stop import STORE_FAILED_STAT

PAGES = 150  # sandbox size
CRAWL = (
    f"FOCUSED_SANDBOX_PAGES={PAGES}",
    "FOCUSED_STRATEGY=bfs",  # every reachable page: the stored set is well defined
)


@pytest.fixture
def disk(tmp_path: Path):
    try:
        small = SmallDisk(tmp_path / "disk", size="2m")
    except PermissionError as exc:
        pytest.skip(str(exc))
    yield small
    small.unmount()


@pytest.fixture(scope="module")
def reference(tmp_path_factory) -> set[str]:
    out = tmp_path_factory.mktemp("reference") / "out"
    run_crawl(out, *CRAWL, f"JOBDIR={out}/job")
    urls = stored_urls(out)
    assert len(urls) > PAGES // 2
    return urls


def _error_lines(log: str) -> list[str]:
    return [line for line in log.splitlines() if "] ERROR: focused: error:" in line]


# --- a full disk, for real --------------------------------------------------------
@pytest.mark.integration
def test_a_full_disk_stops_the_crawl_and_a_resume_stores_every_page(disk, reference):
    out = disk.path / "out"
    job = disk.path / "job"
    disk.fill(leave_kb=400)
    first = run_crawl(out, *CRAWL, f"JOBDIR={job}", check=False)
    assert first.returncode == 1, first.log[-3000:]
    (line,) = _error_lines(first.log)
    assert f"cannot store pages in {out}" in line or f"write the frontier journal in {job}" in line
    assert "the crawl stopped, resume with the same command once there is room" in line
    assert "'finish_reason': 'store_failed'" in first.log
    assert "Traceback" not in first.log, first.log[-5000:]
    assert list(disk.path.rglob("*.tmp")) == []  # no temporary file left
    for name in ("metrics.csv", "summary.json", "curve.png"):  # absent or whole
        assert not (out / name).exists() or (out / name).stat().st_size > 0, name
    if (out / "summary.json").exists():
        json.loads((out / "summary.json").read_text())
    stored = stored_urls(out)
    assert 0 < len(stored) < len(reference)
    states = journal_states(job)
    done = {url for url, state in states.items() if state == DONE}
    assert done <= stored | (set(states) - reference)  # no unstored page journaled done
    assert len([s for s in states.values() if s in (WAITING, IN_FLIGHT)]) > 0

    disk.grow("64m")
    disk.remove_filler()
    second = run_crawl(out, *CRAWL, f"JOBDIR={job}")
    assert ", 0 lost" in second.log
    assert stored_urls(out) >= stored  # nothing stored was lost
    assert stored_urls(out) == reference  # every page not stored was fetched again
    with PageStore(out) as store:
        assert store.check(verify=True) == []
    states = journal_states(job)
    assert not [u for u, s in states.items() if s in (WAITING, IN_FLIGHT)]


def _crawl_and_remove(out: Path, job: Path, victim: Path) -> str:
    """Crawl into ``out`` with ``JOBDIR=job``, remove ``victim`` (``rm -rf``) once 5 pages
    are stored, and return the crawl's log; it must have stopped with exit status 1."""
    settings = [*CRAWL, f"JOBDIR={job}", "CONCURRENT_REQUESTS=1", "DOWNLOAD_DELAY=0.02"]
    returncode, log = interrupted_crawl(
        sandbox_crawl_command(out, *settings),
        lambda: len(stored_urls(out)) >= 5,
        lambda: shutil.rmtree(victim),
    )
    assert returncode == 1, log[-3000:]
    return log


@pytest.mark.integration
def test_an_output_folder_removed_during_the_crawl_stops_it_and_a_resume_stores_every_page(
    tmp_path, reference
):
    """``rm -rf`` of the output folder while the crawl runs: SQLite and the segment
    writer went on writing into the unlinked files, and the crawl ended "stored 196
    pages", exit 0, with not one of them on disk. Now the next commit sees that
    ``pages.sqlite3`` is not the file the store opened: one line, exit 1; the resume
    fetches again every page the journal says was stored and the store does not hold."""
    out = tmp_path / "out"
    job = tmp_path / "job"
    log = _crawl_and_remove(out, job, out)
    (line,) = _error_lines(log)
    assert line.endswith(
        f"focused: error: cannot store pages in {out}: {out / 'pages.sqlite3'} was removed or"
        " replaced during the crawl, and the pages stored in it with it; the crawl stopped,"
        " resume with the same command once the problem is fixed"
    )
    assert "Traceback" not in log and "'finish_reason': 'store_failed'" in log
    second = run_crawl(out, *CRAWL, f"JOBDIR={job}")
    assert "are fetched again" in second.log
    assert stored_urls(out) == reference
    with PageStore(out) as store:
        assert store.check(verify=True) == []


@pytest.mark.integration
def test_a_jobdir_removed_during_the_crawl_stops_it_and_the_advice_completes_it(
    tmp_path, reference
):
    """``rm -rf`` of ``JOBDIR`` while the crawl runs: the frontier journal went on into
    the unlinked file, the crawl ended as if it could be resumed (exit 0; stopped early,
    its frontier was lost). Now the next journal commit sees it: one line, exit 1, that
    says how to go on; done as it says, the crawl ends with every page stored once."""
    out = tmp_path / "out"
    job = tmp_path / "job"
    log = _crawl_and_remove(out, job, job)
    (line,) = _error_lines(log)
    assert line.endswith(
        f"focused: error: cannot write the frontier journal in {job}:"
        f" {job / 'frontier.sqlite3'} was removed or replaced during the crawl; the crawl"
        " stopped, resume with the same command plus -s FOCUSED_CONTINUE=True (the JOBDIR"
        " is gone, so the frontier starts again from the seeds; no stored page is stored"
        " twice)"
    )
    assert "Traceback" not in log
    stored = stored_urls(out)
    assert 5 <= len(stored) < len(reference)
    run_crawl(out, *CRAWL, f"JOBDIR={job}", "FOCUSED_CONTINUE=True")
    assert stored_urls(out) == reference
    with PageStore(out) as store:
        assert store.check(verify=True) == []
        assert len(store.urls()) == len(reference)  # none twice


def test_atomic_writes_leave_the_old_file_on_a_full_disk(disk):
    target = disk.path / "metrics.csv"
    write_text(target, "old\n")
    disk.fill(leave_kb=8)
    with pytest.raises(OSError, match="No space left"):
        write_text(target, "x" * 200_000)
    assert target.read_text() == "old\n"
    assert [p.name for p in disk.path.iterdir() if p.name != "filler"] == ["metrics.csv"]


def test_a_failed_page_file_leaves_no_temporary_file(disk):
    with PageStore(disk.path / "out") as store:
        store.add({"url": "http://h/a"}, b"a" * 1000)
        disk.fill(leave_kb=4)
        with pytest.raises(OSError):
            store.add({"url": "http://h/b"}, bytes(range(256)) * 4000)  # does not compress
        store.abort()
        assert list((disk.path / "out").rglob("*.tmp")) == []
        assert store.urls() == ["http://h/a"]


def test_leftover_temporary_files_are_removed_when_the_store_opens(tmp_path):
    folder = tmp_path / "html" / "ab" / "cd"
    folder.mkdir(parents=True)
    (folder / ".abcd.1234.tmp").write_bytes(b"half")
    (folder / "left.tmp").write_bytes(b"half")
    with PageStore(tmp_path) as store:
        assert sorted(store.repaired) == ["html/ab/cd/.abcd.1234.tmp", "html/ab/cd/left.tmp"]
        assert store.check() == []


# --- SQLite and journal failures, with the real scheduler and store --------------
def _page(crawler, pipes, response) -> str:
    """The page's item through the pipelines, with the signal Scrapy sends after it."""
    item = PageItem(url=response.url, title="t", body=response.url.encode() * 50)
    try:
        for pipe in pipes:
            item = pipe.process_item(item)
    except DropItem as exc:
        crawler.signals.send_catch_log(
            scrapy_signals.item_dropped,
            item=item,
            response=response,
            exception=exc,
            spider=crawler.spider,
        )
        return "dropped"
    crawler.signals.send_catch_log(
        scrapy_signals.item_scraped, item=item, response=response, spider=crawler.spider
    )
    return "stored"


def _full(conn: sqlite3.Connection) -> None:
    """No new database page for this connection: the next that needs one fails with
    ``SQLITE_FULL`` ("database or disk is full"), as on a full disk."""
    (pages,) = conn.execute("PRAGMA page_count").fetchone()
    conn.execute(f"PRAGMA max_page_count = {pages}")


@pytest.mark.parametrize("failing", ["store", "journal"])
def test_a_failed_commit_journals_nothing_done_and_the_resume_fetches_it(tmp_path, failing):
    sched, crawler, pipes, journaled, reader = _open_with_pipelines(
        tmp_path, {"focused.pipelines.PageStorePipeline": 300}
    )
    (store_pipe,) = pipes
    urls = [f"http://127.0.0.1:1/p/{i}.htm" for i in range(40)]
    for url in urls:
        sched.enqueue_request(_req(url))
    sched._commit(force=True)
    outcome = {}
    for i in range(len(urls)):
        if i == 3:
            _full(store_pipe.store.conn if failing == "store" else sched.journal._db)
        response = _respond(crawler, sched.next_request())
        for k in range(5):  # its links, queued before its item (the spider yields them first)
            sched.enqueue_request(_req(f"{response.url[:-4]}-{k}.htm"))
        outcome[_key(response.url)] = _page(crawler, pipes, response)
    line = crawler.stats.get_value(STORE_FAILED_STAT)
    what = "store pages" if failing == "store" else "write the frontier journal"
    assert line.startswith(f"focused: error: cannot {what} in ") and "is full" in line
    stored = stored_urls(tmp_path / "out")
    assert {u for u, o in outcome.items() if o == "stored"} == stored
    assert 3 <= len(stored) < len(urls)
    for pipe in pipes:
        pipe.close_spider()
    reader.close()
    sched.close("store_failed")
    states = journal_states(tmp_path / "job")
    assert {u for u, s in states.items() if s == DONE} <= stored  # done only when stored
    # the resume: every page not stored comes back, none that is
    resumed, _ = _open(
        {"JOBDIR": str(tmp_path / "job"), "FOCUSED_OUTPUT_DIR": str(tmp_path / "out")}
    )
    again = []
    while (request := resumed.next_request()) is not None:
        again.append(request.url)
    resumed.close("finished")
    again_keys = {_key(u) for u in again}
    assert len(again) == len(again_keys) and not again_keys & stored
    assert {_key(u) for u in urls} - stored <= again_keys  # every page not stored
    for page in stored:  # and the links of every stored page
        assert {f"{page[:-4]}-{k}.htm" for k in range(5)} <= again_keys


# --- a database another program has locked ----------------------------------------
class Holder(threading.Thread):
    """Another program's connection to ``pages.sqlite3`` holding a read transaction or the
    write lock (``BEGIN IMMEDIATE``) for ``seconds``, or until :attr:`released` is set
    (the crawl has ended: holding on would only make the test wait).

    The write lock is taken once the crawl has stored its first page (so the crawl is
    under way and meets the lock on a page, whatever its start-up time)."""

    def __init__(self, db: Path, kind: str, seconds: float) -> None:
        super().__init__(daemon=True)
        self.db, self.kind, self.seconds = db, kind, seconds
        self.holding = threading.Event()
        self.ready = threading.Event()  # the holder runs (for a writer: waits for a row)
        self.released = threading.Event()  # the crawl is over: let go before ``seconds``

    def _first_row(self, conn: sqlite3.Connection, timeout: float = 120.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if conn.execute("SELECT COUNT(*) FROM pages").fetchone()[0]:
                return
            time.sleep(0.02)

    def run(self) -> None:
        conn = sqlite3.connect(self.db, isolation_level=None)
        self.ready.set()
        if self.kind == "write":
            self._first_row(conn)
            conn.execute("BEGIN IMMEDIATE")
        else:
            conn.execute("BEGIN")
            conn.execute("SELECT COUNT(*) FROM pages").fetchone()  # a read snapshot
        self.holding.set()
        self.released.wait(self.seconds)
        conn.execute("COMMIT")
        conn.close()


def _locked_crawl(out: Path, kind: str, seconds: float, *settings: str):
    PageStore(out).open().close()  # the store exists: the other program opened it
    holder = Holder(out / "pages.sqlite3", kind, seconds)
    holder.start()
    assert (holder.holding if kind == "read" else holder.ready).wait(5)
    started = time.monotonic()
    try:
        crawl = run_crawl(out, *CRAWL, f"JOBDIR={out}/job", *settings, check=False)
    finally:
        holder.released.set()  # the crawl has ended: holding on would change nothing
    holder.join()
    return crawl, time.monotonic() - started


@pytest.mark.integration
def test_a_reader_never_blocks_the_crawl(tmp_path, reference):
    crawl, _ = _locked_crawl(tmp_path / "out", "read", 20.0)
    assert crawl.returncode == 0, crawl.log[-3000:]
    assert "write lock" not in crawl.log  # never waited
    assert stored_urls(tmp_path / "out") == reference


@pytest.mark.integration
def test_a_writer_holding_the_lock_makes_the_crawl_wait_not_lose(tmp_path, reference):
    crawl, elapsed = _locked_crawl(tmp_path / "out", "write", 4.0)
    assert crawl.returncode == 0, crawl.log[-3000:]
    assert "Traceback" not in crawl.log
    assert "another program holds the write lock" in crawl.log
    assert "is free again after" in crawl.log
    assert stored_urls(tmp_path / "out") == reference
    assert elapsed < 60  # it waited once, not 30 s per page


@pytest.mark.integration
def test_a_writer_holding_the_lock_too_long_stops_the_crawl_cleanly(tmp_path, reference):
    out = tmp_path / "out"
    crawl, _ = _locked_crawl(out, "write", 6.0, "FOCUSED_STORE_LOCK_TIMEOUT=2")
    assert crawl.returncode == 1, crawl.log[-3000:]
    (line,) = _error_lines(crawl.log)
    assert f"cannot store pages in {out}: database is locked" in line
    assert "once the other program has released the database" in line
    assert "Traceback" not in crawl.log
    resumed = run_crawl(out, *CRAWL, f"JOBDIR={out}/job")
    assert ", 0 lost" in resumed.log
    assert stored_urls(out) == reference
