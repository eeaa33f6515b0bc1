"""What a crawl may do to an output folder and a ``JOBDIR`` that already hold a crawl.

Real ``scrapy crawl focused`` (and ``scrapy parse``) subprocesses on the embedded
sandbox (127.0.0.1): nothing stored is rewritten by a run that stores nothing, a
frontier or a folder of stored pages is never taken over silently, and each refusal is
one line with exit status 2.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from focused.output.record import stored_count
from tests.crawling import PROJECT, SANDBOX_PAGES, SANDBOX_SEED

pytestmark = pytest.mark.integration

OUTPUTS = ("crawl.json", "metrics.csv", "summary.json", "stats.json", "report.html")


def command(out: Path, *settings: str, topic: str = "chemistry", verb: str = "crawl") -> list[str]:
    cmd = [sys.executable, "-m", "scrapy", verb]
    cmd += ["focused"] if verb == "crawl" else ["--spider=focused"]
    cmd += ["-a", f"topic={topic}"]
    for setting in (
        "FOCUSED_WEB=sandbox",
        f"FOCUSED_SANDBOX_SEED={SANDBOX_SEED}",
        f"FOCUSED_SANDBOX_PAGES={SANDBOX_PAGES}",
        f"FOCUSED_OUTPUT_DIR={out}",
        "AUTOTHROTTLE_ENABLED=False",
        "LOG_LEVEL=INFO",
        *settings,
    ):
        cmd += ["-s", setting]
    return cmd


def env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("SCRAPY_")}


def run(
    out: Path, *settings: str, topic: str = "chemistry", verb: str = "crawl", args: tuple = ()
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*command(out, *settings, topic=topic, verb=verb), *args],
        cwd=PROJECT,
        env=env(),
        capture_output=True,
        text=True,
        timeout=180,
    )


def crawled(out: Path, *settings: str, **kwargs: str) -> subprocess.CompletedProcess[str]:
    result = run(out, "CLOSESPIDER_PAGECOUNT=12", *settings, **kwargs)  # type: ignore[arg-type]
    assert result.returncode == 0, result.stderr[-3000:]
    assert "Traceback" not in result.stderr, result.stderr[-3000:]
    assert stored_count(out) > 0
    return result


def refusal(result: subprocess.CompletedProcess[str]) -> str:
    """The one ``focused: error:`` line of a run refused before the spider opened."""
    assert result.returncode == 2, result.stderr[-3000:]
    lines = [x for x in result.stderr.splitlines() if x.startswith("focused: error:")]
    assert len(lines) == 1, result.stderr[-3000:]
    assert "Traceback" not in result.stderr
    assert "Spider opened" not in result.stderr
    return lines[0]


@pytest.fixture(scope="module")
def finished(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """A finished crawl (no JOBDIR) and its log, made once for the module: a test that
    starts from such a folder works on its own copy of it (:func:`copy_of`)."""
    out = tmp_path_factory.mktemp("finished") / "crawl"
    return out, crawled(out).stderr


def copy_of(finished: tuple[Path, str], tmp_path: Path) -> Path:
    """This test's copy of the :func:`finished` crawl's folder (the files as they are)."""
    return Path(shutil.copytree(finished[0], tmp_path / "crawl"))


def snapshot(out: Path) -> dict[str, bytes]:
    return {name: (out / name).read_bytes() for name in OUTPUTS}


def wait_until(condition: Callable[[], bool], timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.1)


def wait_for(log: Path, text: str) -> None:
    wait_until(lambda: text in log.read_text())


# --- 1. a run that stores nothing leaves a folder of stored pages as it was -------------
def test_scrapy_parse_into_a_finished_crawl_leaves_its_outputs(
    tmp_path: Path, finished: tuple[Path, str]
) -> None:
    out, first_log = copy_of(finished, tmp_path), finished[1]
    assert "is not in ITEM_PIPELINES" not in first_log
    before, pages = snapshot(out), stored_count(out)
    assert json.loads(before["summary.json"])["pages"] > 0

    parsed = run(out, verb="parse", topic="physics", args=("http://127.0.0.1:1/",))
    assert "Traceback" not in parsed.stderr, parsed.stderr[-3000:]
    assert "Spider opened" in parsed.stderr  # it did run, pipelines and extensions too
    assert snapshot(out) == before
    assert stored_count(out) == pages


def test_a_first_crawl_that_stores_nothing_still_writes_its_summary(tmp_path: Path) -> None:
    out = tmp_path / "crawl"  # a real-web crawl whose one seed answers nothing
    crawl = run(out, "FOCUSED_WEB=real", "FOCUSED_SEEDS=http://127.0.0.1:1/")
    assert "Traceback" not in crawl.stderr, crawl.stderr[-3000:]
    assert json.loads((out / "summary.json").read_text())["pages"] == 0
    assert (out / "crawl.json").is_file() and (out / "stats.json").is_file()


def test_scrapy_parse_makes_no_output_folder(tmp_path: Path) -> None:
    out = tmp_path / "crawl"  # scrapy parse stores nothing: no folder, summary or port
    parsed = run(out, verb="parse", args=("http://127.0.0.1:1/",))
    assert "Traceback" not in parsed.stderr, parsed.stderr[-3000:]
    assert "Spider opened" in parsed.stderr
    assert not out.exists()


# --- 2. a JOBDIR belongs to one topic, strategy and web -------------------------------
def test_a_jobdir_is_not_carried_on_by_another_crawl(tmp_path: Path) -> None:
    job = tmp_path / "job"
    crawled(tmp_path / "chem", f"JOBDIR={job}")
    journal = (job / "frontier.sqlite3").stat().st_mtime_ns
    for topic, setting in (
        ("physics", "FOCUSED_STRATEGY=annealing"),
        ("chemistry", "FOCUSED_STRATEGY=bfs"),
        ("chemistry", "FOCUSED_WEB=real"),
    ):
        other = tmp_path / f"other-{topic}"
        line = refusal(run(other, f"JOBDIR={job}", setting, topic=topic))
        assert line == (
            f"focused: error: JOBDIR {job} holds the frontier of a crawl of topic chemistry"
            " with strategy annealing on the sandbox web; resume it with those, or use"
            " another JOBDIR for this crawl"
        )
        assert stored_count(other) == 0
    # the same topic, strategy and web, but another sandbox: its URLs are other pages
    bigger = tmp_path / "bigger"
    line = refusal(run(bigger, f"JOBDIR={job}", f"FOCUSED_SANDBOX_PAGES={SANDBOX_PAGES + 100}"))
    assert line == (
        f"focused: error: JOBDIR {job} holds the frontier of a crawl of another sandbox"
        f" (FOCUSED_SANDBOX_MODE=normal, FOCUSED_SANDBOX_PAGES={SANDBOX_PAGES},"
        f" FOCUSED_SANDBOX_SEED={SANDBOX_SEED}); resume it with those settings, or use"
        " another JOBDIR for this crawl"
    )
    assert stored_count(bigger) == 0
    assert (job / "frontier.sqlite3").stat().st_mtime_ns == journal
    # the same crawl resumes
    resumed = run(tmp_path / "chem", f"JOBDIR={job}", "CLOSESPIDER_PAGECOUNT=3")
    assert resumed.returncode == 0, resumed.stderr[-3000:]


# --- 3. one crawl per output folder -----------------------------------------------------
def test_a_second_crawl_into_a_folder_of_pages_is_refused(
    tmp_path: Path, finished: tuple[Path, str]
) -> None:
    out = copy_of(finished, tmp_path)
    pages, before = stored_count(out), snapshot(out)
    for extra in ((), (f"JOBDIR={tmp_path / 'fresh'}",)):
        line = refusal(run(out, "CLOSESPIDER_PAGECOUNT=12", *extra))
        assert f"{out} already holds {pages} pages of an earlier crawl" in line
        for way_out in ("JOBDIR", "FOCUSED_CONTINUE=True", "another FOCUSED_OUTPUT_DIR"):
            assert way_out in line
        assert stored_count(out) == pages and snapshot(out) == before
    # FOCUSED_CONTINUE adds to it, as before, on the sandbox's first port: the pages it
    # fetches again have the URLs they were stored under, and none is stored twice
    more = run(out, "CLOSESPIDER_PAGECOUNT=30", "FOCUSED_CONTINUE=True")
    assert more.returncode == 0, more.stderr[-3000:]
    assert stored_count(out) > pages
    with sqlite3.connect(out / "pages.sqlite3") as db:
        urls = [url for (url,) in db.execute("SELECT url FROM pages")]
    assert len({urlsplit(url).port for url in urls}) == 1, sorted(urls)[:5]
    assert len({urlsplit(url).path for url in urls}) == len(urls) == stored_count(out)


def test_a_continued_crawl_counts_and_exports_only_its_new_pages(
    tmp_path: Path, finished: tuple[Path, str]
) -> None:
    """``FOCUSED_CONTINUE`` has no journal of what was done, so it fetches the stored
    pages again (for their links). They were items again: ``CLOSESPIDER_ITEMCOUNT=10``
    on a folder of pages stopped the crawl on those, with no page added, and the feed
    got them a second time. Now a stored page is no new item: the crawl adds its ten."""
    out = copy_of(finished, tmp_path)
    pages = stored_count(out)
    with sqlite3.connect(out / "pages.sqlite3") as db:
        before = {url for (url,) in db.execute("SELECT url FROM pages")}
    feed = tmp_path / "new.jsonl"
    more = run(out, "CLOSESPIDER_ITEMCOUNT=10", "FOCUSED_CONTINUE=True", args=("-o", str(feed)))
    assert more.returncode == 0, more.stderr[-3000:]
    assert stored_count(out) >= pages + 10
    exported = [json.loads(line)["url"] for line in feed.read_text().splitlines()]
    assert len(exported) >= 10 and not set(exported) & before
    assert "'focused/duplicates': 0" not in more.stderr  # the stored pages were met again


def test_two_crawls_into_one_folder_at_once(tmp_path: Path) -> None:
    out = tmp_path / "crawl"
    first = subprocess.Popen(
        command(out, f"JOBDIR={tmp_path / 'job'}", "DOWNLOAD_DELAY=1"),
        cwd=PROJECT,
        env=env(),
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        text=True,
    )
    assert first.stderr is not None
    try:
        for line in first.stderr:
            if "Spider opened" in line:
                break
        # FOCUSED_CONTINUE would let it add to stored pages, not share an open store
        line = refusal(run(out, "CLOSESPIDER_PAGECOUNT=5", "FOCUSED_CONTINUE=True"))
        assert line == (
            f"focused: error: another crawl (or program) has the page store in {out} open;"
            " choose another FOCUSED_OUTPUT_DIR (the folder is the other crawl's: once it"
            " has finished, only a crawl of its topic and strategy adds to it, with"
            " -s FOCUSED_CONTINUE=True)"
        )
        assert first.poll() is None  # the first crawl goes on
    finally:
        first.send_signal(signal.SIGINT)
        first.communicate(timeout=60)
    assert first.returncode == 0


def test_two_crawls_started_at_the_same_instant(tmp_path: Path) -> None:
    """Both start before either has opened its store (so both pass the command's check):
    the page store lets one write, the other stops with one line and writes nothing
    there, not even its record (the folder says which crawl it holds).

    Two processes started one after the other need not overlap (on a loaded machine the
    first may store pages, or end, before the second has checked the folder, which then
    refuses it before it opens a store): the crawls meet after the command's checks and
    again once each has tried to open its store (:mod:`tests.store_barrier`)."""
    out = tmp_path / "crawl"
    pipelines = {
        "focused.pipelines.PageStorePipeline": 300,
        "focused.pipelines.MetricsPipeline": 800,
        "tests.store_barrier.StoreBarrierPipeline": 900,
    }
    barrier = (
        f"ITEM_PIPELINES={json.dumps(pipelines)}",
        f"TEST_BARRIER_DIR={tmp_path / 'barrier'}",
        "TEST_BARRIER_PARTIES=2",
    )
    procs = {
        topic: subprocess.Popen(
            command(out, "CLOSESPIDER_PAGECOUNT=15", *barrier, topic=topic),
            cwd=PROJECT,
            env=env(),
            stderr=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            text=True,
        )
        for topic in ("chemistry", "physics")
    }
    logs = {topic: proc.communicate(timeout=180)[1] for topic, proc in procs.items()}
    codes = {topic: proc.returncode for topic, proc in procs.items()}
    assert sorted(codes.values())[0] == 0, logs
    (winner,) = [t for t, c in codes.items() if c == 0]
    (loser,) = [t for t in codes if t != winner]
    errors = [x for x in logs[loser].splitlines() if "ERROR: focused: error:" in x]
    assert len(errors) == 1, logs[loser][-3000:]
    assert "another crawl" in errors[0] and codes[loser] in (1, 2)
    # not "resume with the same command": it would be refused, the folder holds pages
    assert errors[0].endswith(
        "; choose another FOCUSED_OUTPUT_DIR (the folder is the other crawl's: once it has"
        " finished, only a crawl of its topic and strategy adds to it, with"
        " -s FOCUSED_CONTINUE=True)"
    ), errors[0]
    assert "Traceback" not in logs[loser]
    assert json.loads((out / "crawl.json").read_text())["topic"] == winner
    assert len(list((out / "segments").iterdir())) == 1  # one writer's segment
    assert stored_count(out) >= 15


# --- 4. a second Ctrl-C stops the crawl at once -----------------------------------------
def started(out: Path, log_path: Path, *settings: str) -> subprocess.Popen[bytes]:
    """A crawl in the background, its log in ``log_path``."""
    with log_path.open("w") as log_file:
        return subprocess.Popen(
            command(out, *settings),
            cwd=PROJECT,
            env=env(),
            stderr=log_file,
            stdout=subprocess.DEVNULL,
        )


def first_ctrl_c(proc: subprocess.Popen[bytes], out: Path, log_path: Path) -> None:
    """A Ctrl-C once the crawl has stored a few pages; back once Scrapy has taken it
    (its second Ctrl-C handler is installed then)."""
    wait_for(log_path, "Spider opened")
    wait_until(lambda: stored_count(out) >= 5)
    proc.send_signal(signal.SIGINT)
    wait_for(log_path, "Received SIGINT, shutting down gracefully")


def ended(proc: subprocess.Popen[bytes], timeout: float) -> None:
    try:
        proc.wait(timeout=timeout)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def stopped_at_once(log: str, out: Path, job: Path | None) -> None:
    """The one line of a crawl a second Ctrl-C stopped, and no traceback."""
    said = [x for x in log.splitlines() if x.startswith("focused: ")]
    way_on = "resume with the same command" if job else "without JOBDIR the crawl cannot resume"
    assert said == [
        f"focused: stopped at once by a second Ctrl-C; the {stored_count(out)} pages stored"
        f" in {out} are kept whole (the metrics, curve or report may be missing or stale);"
        f" {way_on}"
    ], log[-3000:]
    assert "Traceback" not in log, log[-3000:]


def store_is_whole(out: Path) -> None:
    """The store's own check passes (every row's record there and hashing to its
    content hash) once what the stop left past the last commit is cut off, as the next
    open would (no stored page is removed for it), and no temporary file of an atomic
    write is left."""
    cmd = [sys.executable, "-m", "focused.output.store", "check", "--repair", "--verify"]
    checked = subprocess.run(
        [*cmd, "--dir", str(out)],
        cwd=PROJECT,
        env=env(),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "focused: the store is consistent" in checked.stdout
    assert "repaired: removed row" not in checked.stdout, checked.stdout
    assert [p.name for p in out.rglob("*.tmp")] == []
    for name in ("summary.json", "stats.json", "settings.json", "crawl.json"):
        if (out / name).exists():
            json.loads((out / name).read_text())


def test_a_second_ctrl_c_while_closing_says_what_is_stored(tmp_path: Path) -> None:
    out, job = tmp_path / "crawl", tmp_path / "job"
    pipelines = {
        "focused.pipelines.PageStorePipeline": 300,
        "focused.pipelines.MetricsPipeline": 800,
        "tests.slow_close_pipeline.SlowClosePipeline": 900,
    }
    log_path = tmp_path / "crawl.log"
    proc = started(
        out,
        log_path,
        f"JOBDIR={job}",
        f"ITEM_PIPELINES={json.dumps(pipelines)}",
        "DOWNLOAD_DELAY=0.05",
    )
    try:
        first_ctrl_c(proc, out, log_path)
        wait_for(log_path, "focused: stored ")  # the page store has closed; the slow one not
        proc.send_signal(signal.SIGINT)
    finally:
        ended(proc, timeout=25)  # well before the slow close's 30 s
    log = log_path.read_text()
    assert proc.returncode == 130, log[-3000:]
    assert stored_count(out) > 0
    stopped_at_once(log, out, job)
    store_is_whole(out)


def test_a_second_ctrl_c_while_crawling_stops_at_once_and_resumes(tmp_path: Path) -> None:
    out, job = tmp_path / "crawl", tmp_path / "job"
    log_path = tmp_path / "crawl.log"
    proc = started(out, log_path, f"JOBDIR={job}", "DOWNLOAD_DELAY=0.05")
    try:
        first_ctrl_c(proc, out, log_path)  # downloads and items still in progress
        proc.send_signal(signal.SIGINT)
    finally:
        ended(proc, timeout=60)
    log = log_path.read_text()
    assert proc.returncode == 130, log[-3000:]
    stopped_at_once(log, out, job)
    store_is_whole(out)
    pages = stored_count(out)
    # the same command goes on: no page stored twice, the store whole
    resumed = run(out, f"JOBDIR={job}", "CLOSESPIDER_PAGECOUNT=10")
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert "Traceback" not in resumed.stderr, resumed.stderr[-3000:]
    assert stored_count(out) > pages
    store_is_whole(out)


def test_a_second_sigterm_exits_143(tmp_path: Path) -> None:
    # what a service manager sends; the shell's status for it is 128 + 15
    out, log_path = tmp_path / "crawl", tmp_path / "crawl.log"
    proc = started(out, log_path, "DOWNLOAD_DELAY=0.05")
    try:
        wait_for(log_path, "Spider opened")
        wait_until(lambda: stored_count(out) >= 5)
        proc.send_signal(signal.SIGTERM)
        wait_for(log_path, "Received SIGTERM, shutting down gracefully")
        proc.send_signal(signal.SIGTERM)
    finally:
        ended(proc, timeout=60)
    log = log_path.read_text()
    assert proc.returncode == 143, log[-3000:]
    said = [x for x in log.splitlines() if x.startswith("focused: ")]
    assert len(said) == 1 and said[0].startswith("focused: stopped at once by a second SIGTERM;")
    assert "Traceback" not in log, log[-3000:]
    store_is_whole(out)


@pytest.mark.parametrize(("child", "target"), [("curve", "curve.png"), ("report", "report.html")])
def test_a_second_ctrl_c_while_a_child_draws_interrupts_it(
    tmp_path: Path, child: str, target: str
) -> None:
    """The child drawing the curve (or the report) would go on for 60 s: the second
    Ctrl-C interrupts it, its half-written file is not left behind, and no other child
    starts."""
    out, pidfile = tmp_path / "crawl", tmp_path / "child.pid"
    pipelines = {
        "focused.pipelines.PageStorePipeline": 300,
        "focused.pipelines.MetricsPipeline": 800,
        "tests.slow_child.SlowChildPipeline": 900,
    }
    log_path = tmp_path / "crawl.log"
    proc = started(
        out,
        log_path,
        f"ITEM_PIPELINES={json.dumps(pipelines)}",
        f"TEST_SLOW_CHILD={child}",
        f"TEST_CHILD_PIDFILE={pidfile}",
        "DOWNLOAD_DELAY=0.05",
    )
    try:
        first_ctrl_c(proc, out, log_path)
        wait_until(pidfile.exists)  # the child is writing its file
        proc.send_signal(signal.SIGINT)
    finally:
        ended(proc, timeout=30)  # well before the child's 60 s
    log = log_path.read_text()
    assert proc.returncode == 130, log[-3000:]
    stopped_at_once(log, out, None)
    with pytest.raises(ProcessLookupError):
        os.kill(int(pidfile.read_text()), 0)  # the child is gone too
    assert not (out / target).exists()
    assert not (out / "report.html").exists()  # not drawn after an interrupted curve
    store_is_whole(out)
    assert (out / "metrics.csv").is_file()  # written before the curve is drawn


def test_a_second_ctrl_c_after_spider_closed_is_ignored(tmp_path: Path) -> None:
    """From the "Spider closed" line on, every output is written: a Ctrl-C more changes
    nothing, whether the process is still stopping Scrapy or already exiting."""
    out = tmp_path / "crawl"
    log_path = tmp_path / "crawl.log"
    proc = started(out, log_path, "DOWNLOAD_DELAY=0.05")
    try:
        first_ctrl_c(proc, out, log_path)
        wait_for(log_path, "Spider closed")
        proc.send_signal(signal.SIGINT)
    finally:
        ended(proc, timeout=60)
    log = log_path.read_text()
    assert proc.returncode == 0, log[-3000:]
    assert [x for x in log.splitlines() if x.startswith("focused: ")] == []
    assert "Traceback" not in log, log[-3000:]
    assert "twice, forcing unclean shutdown" not in log
    assert (out / "report.html").is_file() and (out / "curve.png").is_file()
    store_is_whole(out)


# --- 5. the sandbox's port taken --------------------------------------------------------
def test_a_sandbox_port_in_use_is_one_line(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        line = refusal(run(tmp_path / "crawl", f"FOCUSED_SANDBOX_PORT={port}"))
    assert f"cannot serve the sandbox on port {port}" in line
    assert "choose another -s FOCUSED_SANDBOX_PORT" in line


def test_resuming_when_the_sandbox_port_is_taken_is_one_line(tmp_path: Path) -> None:
    out, job = tmp_path / "crawl", tmp_path / "job"
    crawled(out, f"JOBDIR={job}")
    port = int((job / "sandbox.port").read_text())
    with socket.socket() as taken:
        taken.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        taken.bind(("127.0.0.1", port))
        taken.listen()
        line = refusal(run(out, f"JOBDIR={job}", "CLOSESPIDER_PAGECOUNT=3"))
    assert f"cannot serve the sandbox on port {port}" in line
    assert "stop what listens there, then resume" in line


def test_continuing_when_the_sandbox_port_is_taken_is_one_line(
    tmp_path: Path, finished: tuple[Path, str]
) -> None:
    out = copy_of(finished, tmp_path)
    port = int((out / "sandbox.port").read_text())
    with socket.socket() as taken:
        taken.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        taken.bind(("127.0.0.1", port))
        taken.listen()
        line = refusal(run(out, "FOCUSED_CONTINUE=True", "CLOSESPIDER_PAGECOUNT=3"))
    assert f"cannot serve the sandbox on port {port}" in line
    assert "the pages in FOCUSED_OUTPUT_DIR were crawled on that port" in line


# --- 6. no page store -------------------------------------------------------------------
def test_a_crawl_without_the_page_store_warns_once(tmp_path: Path) -> None:
    pipelines = json.dumps({"focused.pipelines.MetricsPipeline": 800})
    result = run(tmp_path / "crawl", "CLOSESPIDER_PAGECOUNT=5", f"ITEM_PIPELINES={pipelines}")
    assert result.returncode == 0, result.stderr[-3000:]
    warnings = [x for x in result.stderr.splitlines() if "is not in ITEM_PIPELINES" in x]
    assert len(warnings) == 1 and " WARNING: " in warnings[0], result.stderr[-3000:]
    assert "focused.pipelines.PageStorePipeline" in warnings[0]


def test_a_crawl_without_the_strategy_or_the_report_warns(tmp_path: Path) -> None:
    # a user's whole dict replaces the project's: the priority middleware and the
    # output extension are gone, so the strategy scores nothing and no report is made
    middlewares = json.dumps({"scrapy.spidermiddlewares.referer.RefererMiddleware": None})
    extensions = json.dumps({"scrapy.extensions.telnet.TelnetConsole": None})
    result = run(
        tmp_path / "crawl",
        "CLOSESPIDER_PAGECOUNT=5",
        "FOCUSED_STRATEGY=bfs",
        f"SPIDER_MIDDLEWARES={middlewares}",
        f"EXTENSIONS={extensions}",
    )
    assert result.returncode == 0, result.stderr[-3000:]
    lines = result.stderr.splitlines()
    strategy = [x for x in lines if "is not in SPIDER_MIDDLEWARES" in x]
    report = [x for x in lines if "is not in EXTENSIONS" in x]
    assert len(strategy) == 1 and "the strategy bfs scores no link" in strategy[0], lines[-30:]
    assert "focused.middlewares.FocusedPriorityMiddleware" in strategy[0]
    assert len(report) == 1 and "report.html" in report[0], lines[-30:]
    assert not (tmp_path / "crawl" / "report.html").exists()
    assert not [x for x in lines if "is not in ITEM_PIPELINES" in x]


# --- 7. an empty FOCUSED_OUTPUT_DIR -----------------------------------------------------
def test_an_empty_output_dir_is_refused(tmp_path: Path) -> None:
    cmd = command(tmp_path, "FOCUSED_OUTPUT_DIR=")
    result = subprocess.run(
        cmd,
        cwd=tmp_path,
        env={**env(), "SCRAPY_SETTINGS_MODULE": "focused.settings", "PYTHONPATH": str(PROJECT)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    line = refusal(result)
    assert "FOCUSED_OUTPUT_DIR is empty" in line
    assert sorted(p.name for p in tmp_path.iterdir()) == []
