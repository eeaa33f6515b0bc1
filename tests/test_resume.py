"""Resuming a ``JOBDIR`` crawl: a page store lost or replaced, and one crawl at a time.

Real crawls of the embedded sandbox in subprocesses (``scrapy crawl focused``, loopback
only), real SQLite. Nothing stored is ever lost, nothing is marked done that was not
stored: a resume whose output folder was removed (or whose ``pages.sqlite3`` is an older
copy) fetches again the pages the journal says were stored and the store does not hold,
each once. A second crawl of a ``JOBDIR`` in use stops with one line and harms nothing.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sqlite3
import subprocess
import time
from pathlib import Path

import pytest
from crawling import PROJECT, run_crawl, sandbox_crawl_command

from bench.soak import _key, duplicate_rows, stored_urls
from focused.output.store import PageStore

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


def error_lines(log: str) -> list[str]:
    return [line for line in log.splitlines() if line.startswith("focused: error:")]


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
def test_a_resume_into_another_output_folder_names_the_folder_its_crawl_stored_into(
    tmp_path, reference
):
    out, other, job = tmp_path / "out", tmp_path / "other", f"JOBDIR={tmp_path / 'job'}"
    run_crawl(out, *CRAWL, job, "CLOSESPIDER_ITEMCOUNT=30")
    n = len(stored_urls(out))
    second = run_crawl(other, *CRAWL, job)
    assert stored_urls(other) == reference  # every page stored in the new folder
    said = (
        f"the page store {other} was not there at the start (this JOBDIR's crawl stored"
        f" into {os.path.realpath(out)}): the {n} pages"
    )
    assert said in second.log, second.log[-3000:]


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


# --- one crawl at a time per JOBDIR -------------------------------------------------
def _wait_for(path: Path, text: str, proc: subprocess.Popen, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and proc.poll() is None:
        if path.exists() and text in path.read_text(errors="replace"):
            return
        time.sleep(0.1)
    raise AssertionError(f"{text!r} not in {path}:\n{path.read_text()[-3000:]}")


@pytest.mark.integration
def test_a_second_crawl_of_a_jobdir_in_use_stops_with_one_line(tmp_path):
    """README: one crawl at a time per JOBDIR, a second one stops with one line. The
    first goes on unharmed: its store, its journal, its stats and report are its own."""
    out, job = tmp_path / "out", tmp_path / "job"
    settings = (*CRAWL, f"JOBDIR={job}", "CLOSESPIDER_ITEMCOUNT=40", "DOWNLOAD_DELAY=0.25")
    log = tmp_path / "first.log"
    with open(log, "w") as fh:
        first = subprocess.Popen(
            sandbox_crawl_command(out, *settings), cwd=PROJECT, stdout=fh, stderr=fh
        )
    try:
        _wait_for(log, "Crawled (200)", first)
        second = run_crawl(out, *settings, check=False)
        assert first.poll() is None, "the first crawl ended before the second started"
    finally:
        first.wait(timeout=240)
    assert second.returncode == 2, second.log[-3000:]
    (line,) = error_lines(second.log)
    assert f"JOBDIR '{job}' is in use by another crawl (pid {first.pid}, started " in line
    assert "Traceback" not in second.log
    assert "Spider opened" not in second.log  # stopped before Scrapy started

    first_log = log.read_text()
    assert first.returncode == 0, first_log[-3000:]
    assert "Traceback" not in first_log
    stats = json.loads((out / "stats.json").read_text())
    assert stats["finish_reason"] == "closespider_itemcount"  # the first crawl's
    assert stats["focused/stored"] == len(stored_urls(out)) >= 40
    with PageStore(out) as store:
        assert store.check(verify=True) == []
    resumed = run_crawl(out, *CRAWL, f"JOBDIR={job}", "CLOSESPIDER_ITEMCOUNT=5")
    assert "0 lost" in resumed.log
    assert not set(fetched(first_log)) & set(fetched(resumed.log))


@pytest.mark.integration
def test_a_jobdir_whose_journal_another_program_locks_stops_with_one_line(tmp_path):
    out, job = tmp_path / "out", tmp_path / "job"
    run_crawl(out, *CRAWL, f"JOBDIR={job}", "CLOSESPIDER_ITEMCOUNT=10")
    holder = sqlite3.connect(job / "frontier.sqlite3", isolation_level=None)
    try:
        holder.execute("BEGIN EXCLUSIVE")  # another program's write lock
        refused = run_crawl(out, *CRAWL, f"JOBDIR={job}", check=False)
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert refused.returncode == 2, refused.log[-3000:]
    (line,) = error_lines(refused.log)
    assert f"JOBDIR '{job}': another program holds the write lock of {job}" in line
    assert "Traceback" not in refused.log and "Spider opened" not in refused.log
    resumed = run_crawl(out, *CRAWL, f"JOBDIR={job}", "CLOSESPIDER_ITEMCOUNT=10")
    assert "focused: resuming crawl" in resumed.log


# --- every end of a fetched page reaches the journal -------------------------------------
#: the pages of the site below that are not HTML pages of the topic
_ENDS: dict[str, tuple[int, dict[str, str], bytes]] = {
    "/robots.txt": (200, {"Content-Type": "text/plain"}, b"User-agent: *\nAllow: /\n"),
    "/api.json": (200, {"Content-Type": "application/json"}, b'{"chemistry": "acid"}'),
    "/page.jsonld": (200, {"Content-Type": "application/ld+json"}, b'{"name": "chemistry"}'),
    "/moved": (302, {}, b""),  # no Location: Scrapy ignores the response
    "/nothing": (204, {}, b""),  # No Content
    "/blank.html": (200, {"Content-Type": "text/html"}, b" \r\n\t "),
}


def _ends_site(path: str) -> tuple[int, dict[str, str], bytes]:
    chem = "chemistry acid molecule reaction catalyst element " * 20
    if path in _ENDS:
        return _ENDS[path]
    links = ["/a.html", "/drop-1.html", "/drop-2.html", "/api.json", "/page.jsonld", "/moved"]
    links += ["/nothing", "/blank.html"]
    anchors = "".join(f'<a href="{u}">chemistry {u}</a> ' for u in links) if path == "/" else ""
    page = f"<html><title>chemistry {path}</title><body>{chem} {anchors}</body></html>"
    return 200, {}, page.encode()


def test_pages_that_end_without_a_stored_item_are_journaled_done_once(tmp_path: Path) -> None:
    """JSON pages (a spider error with a traceback), a 302 without Location (ignored by
    Scrapy), a 204 and an empty page (stored as pages of nothing) and pages a user's
    pipeline before the store drops: each is journaled done
    (counted), the close line says 0 in flight and is true, and a resume fetches none of
    them again. They stayed in flight for ever, fetched again by every resume."""
    from tests.loopback import LoopbackServer

    server = LoopbackServer("127.0.0.1", _ends_site)
    job = tmp_path / "job"
    pipelines = {
        "tests.dropping_pipeline.DropSome": 100,
        "focused.pipelines.PageStorePipeline": 300,
        "focused.pipelines.MetricsPipeline": 800,
    }
    settings = [
        "FOCUSED_WEB=real",
        f"FOCUSED_SEEDS={server.url}/",
        "FOCUSED_STRATEGY=bfs",
        f"ITEM_PIPELINES={json.dumps(pipelines)}",
        f"JOBDIR={job}",
    ]
    try:
        first = run_crawl(tmp_path / "out", *settings)
        fetched = len(server.log)
        second = run_crawl(tmp_path / "out", *settings, check=False)
        again = server.log[fetched:]
    finally:
        server.close()
    assert "Spider error" not in first.log
    con = sqlite3.connect(job / "frontier.sqlite3")
    states = {u.rsplit("/", 1)[1]: s for u, s in con.execute("SELECT url, state FROM urls")}
    con.close()
    assert states == dict.fromkeys(
        ["", "a.html", "drop-1.html", "drop-2.html", "api.json", "page.jsonld", "moved"]
        + ["nothing", "blank.html"],
        2,
    )
    assert "(0 waiting, 0 in flight)" in first.log
    con = sqlite3.connect(tmp_path / "out" / "pages.sqlite3")
    stored = {u.rsplit("/", 1)[1] for (u,) in con.execute("SELECT url FROM pages")}
    con.close()
    assert not stored & {"nothing", "blank.html", "api.json", "moved"}, stored
    assert "a.html" in stored
    for name, n in [
        ("focused/skipped/not_markup", 2),
        ("focused/skipped/empty", 2),
        ("focused/pages/dropped", 2),
        ("focused/pages/no_item", 1),
    ]:
        assert f"'{name}': {n}," in first.log, name
    assert [p for p in again if p != "/robots.txt"] == []
    assert second.returncode == 0
