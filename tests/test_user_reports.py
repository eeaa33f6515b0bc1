"""A Scrapy user's report: what the crawler says when the topic, the network, the
output folder or a Ctrl-C is not what it expects.

Real ``scrapy crawl focused`` subprocesses. No packet leaves 127.0.0.0/8: "unreachable"
is a loopback port nobody listens on, "DNS fails" a name under ``.invalid`` (RFC 6761)
that the crawl's resolver (:mod:`tests.loopback_dns`) and the start-up probe
(:func:`focused.web.sites.unreachable_reason`) refuse without asking any DNS server.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from focused.web.sites import unreachable_reason
from tests.crawling import PROJECT, SANDBOX_PAGES, SANDBOX_SEED, Crawl
from tests.loopback import Listener

pytestmark = pytest.mark.integration

RESOLVER = "TWISTED_DNS_RESOLVER=tests.loopback_dns.LoopbackResolver"
NO_CATEGORY = """\
name = "astronomy"
seeds = ["http://127.0.0.1:{port}/"]

[keywords]
star = 3
planet = 2
telescope = 2
"""
INVALID = """\
name = "nowhere"
category = "subject.Science.Chemistry"
seeds = ["http://chemistry.invalid/", "http://physics.invalid/start"]
targets = ["http://chemistry.invalid/periodic-table"]

[keywords]
chemistry = 3
"""


def closed_port() -> int:
    """A loopback port nobody listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def scrapy_crawl(
    out: Path, *settings: str, topic: str = "chemistry", timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    """``scrapy crawl focused`` with the sandbox's test size and ``-s`` ``settings``; the
    plot and the HTML report are off (two child processes, ~1 s each, at the end of each
    crawl; no test here reads them): a test that does passes ``FOCUSED_REPORT=True``."""
    cmd = [sys.executable, "-m", "scrapy", "crawl", "focused", "-a", f"topic={topic}"]
    for setting in (
        f"FOCUSED_SANDBOX_SEED={SANDBOX_SEED}",
        f"FOCUSED_SANDBOX_PAGES={SANDBOX_PAGES}",
        f"FOCUSED_OUTPUT_DIR={out}",
        "AUTOTHROTTLE_ENABLED=False",
        "LOG_LEVEL=INFO",
        "FOCUSED_REPORT=False",
        RESOLVER,
        *settings,
    ):
        cmd += ["-s", setting]
    env = {k: v for k, v in os.environ.items() if not k.startswith("SCRAPY_")}
    return subprocess.run(
        cmd, cwd=PROJECT, env=env, capture_output=True, text=True, timeout=timeout
    )


def lines_with(text: str, needle: str) -> list[str]:
    return [line for line in text.splitlines() if needle in line]


def report(out: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "focused.output.report", str(out)],
        cwd=PROJECT,
        capture_output=True,
        text=True,
        timeout=60,
    )


# --- a topic the web has no labels for ---------------------------------------------
def test_a_topic_without_category_is_not_scored_against_chemistry(tmp_path: Path) -> None:
    topic = tmp_path / "astronomy.toml"
    topic.write_text(NO_CATEGORY.format(port=closed_port()), encoding="utf-8")
    out = tmp_path / "out"
    # the plot and the HTML report of a crawl without recall are drawn here and in the
    # next two tests: no other test draws them
    result = scrapy_crawl(
        out,
        "FOCUSED_WEB=sandbox",
        "FOCUSED_REPORT=True",
        "CLOSESPIDER_PAGECOUNT=15",
        topic=str(topic),
    )
    log = result.stderr
    assert result.returncode == 0, log[-3000:]
    assert "Traceback" not in log
    warning = lines_with(log, "no pages labelled for topic 'astronomy'")
    assert len(warning) == 1 and "WARNING" in warning[0], log[-3000:]
    assert "(no category)" in warning[0] and "recall is not measured" in warning[0]
    assert "0 known targets" in log  # not the 149 targets of chemistry
    summary = json.loads((out / "summary.json").read_text())
    assert summary["pages"] >= 15
    assert summary["recall"] is None and summary["targets"] is None
    assert summary["auc_recall"] is None
    assert (out / "curve.png").stat().st_size > 0 and (out / "report.html").stat().st_size > 0
    shown = report(out)
    assert shown.returncode == 0, shown.stderr
    assert "recall n/a" in shown.stdout and "targets)" not in shown.stdout


def test_a_category_the_sandbox_does_not_have_is_said_too(tmp_path: Path) -> None:
    topic = tmp_path / "astronomy.toml"
    text = NO_CATEGORY.format(port=closed_port())
    topic.write_text(text.replace("seeds", 'category = "subject.Astronomy"\nseeds'), "utf-8")
    out = tmp_path / "out"
    result = scrapy_crawl(
        out,
        "FOCUSED_WEB=sandbox",
        "FOCUSED_REPORT=True",
        "CLOSESPIDER_PAGECOUNT=5",
        topic=str(topic),
    )
    assert result.returncode == 0, result.stderr[-3000:]
    warning = lines_with(result.stderr, "no pages labelled for topic 'astronomy'")
    assert len(warning) == 1 and "category subject.Astronomy" in warning[0]
    assert json.loads((out / "summary.json").read_text())["recall"] is None


def test_a_real_web_topic_without_labels_or_targets_reports_no_recall(tmp_path: Path) -> None:
    """Real web (a loopback sandbox given as FOCUSED_SEEDS), a category, no labels file."""
    from focused.web.sandbox import SandboxServer, generate_site

    server = SandboxServer(generate_site(seed=SANDBOX_SEED, pages=SANDBOX_PAGES))
    base = server.start()
    try:
        topic = tmp_path / "astronomy.toml"
        text = NO_CATEGORY.format(port=closed_port())
        topic.write_text(text.replace("seeds", 'category = "subject.Astronomy"\nseeds'), "utf-8")
        out = tmp_path / "out"
        result = scrapy_crawl(
            out,
            "FOCUSED_WEB=real",
            f"FOCUSED_SEEDS={base}/",
            "FOCUSED_REPORT=True",
            "CLOSESPIDER_PAGECOUNT=5",
            topic=str(topic),
        )
    finally:
        server.stop()
    assert result.returncode == 0, result.stderr[-3000:]
    warning = lines_with(result.stderr, "no targets are known for topic 'astronomy'")
    assert len(warning) == 1 and "recall is not measured" in warning[0]
    assert json.loads((out / "summary.json").read_text())["targets"] is None


# --- no network --------------------------------------------------------------------
def test_names_under_invalid_fail_at_once_without_a_lookup() -> None:
    assert unreachable_reason("http://chemistry.invalid/x") == (
        "DNS lookup failed for chemistry.invalid"
    )
    port = closed_port()
    assert unreachable_reason(f"http://127.0.0.1:{port}/") == (
        f"127.0.0.1 does not answer on port {port}"
    )


def test_auto_says_why_it_crawls_the_sandbox(tmp_path: Path) -> None:
    port = closed_port()
    topic = tmp_path / "offline.toml"
    topic.write_text(
        NO_CATEGORY.format(port=port).replace(
            "seeds", 'category = "subject.Science.Chemistry"\nseeds'
        ),
        "utf-8",
    )
    out = tmp_path / "out"
    result = scrapy_crawl(out, "FOCUSED_WEB=auto", "CLOSESPIDER_PAGECOUNT=5", topic=str(topic))
    assert result.returncode == 0, result.stderr[-3000:]
    line = lines_with(result.stderr, "the real web is unreachable")
    assert len(line) == 1 and "WARNING" in line[0]
    assert f"127.0.0.1 does not answer on port {port}" in line[0]
    assert "crawling the sandbox web instead" in line[0]
    assert "on the sandbox web" in result.stderr


@pytest.mark.parametrize(
    ("address", "host", "setting", "why"),
    [
        (
            "127.0.0.2",
            "127.0.0.2",
            "FOCUSED_ALLOWED_DOMAINS=127.0.0.1",  # the sandbox's host, not the seed's
            "127.0.0.2 is not in FOCUSED_ALLOWED_DOMAINS",
        ),
        (
            "127.0.0.1",
            "localhost",  # resolves from /etc/hosts: no DNS query either way
            'FOCUSED_HOSTS={"elsewhere.test": "127.0.0.1"}',
            "localhost is not in FOCUSED_HOSTS, and with FOCUSED_HOSTS set no other name"
            " is looked up",
        ),
    ],
    ids=["allowed domains", "hosts"],
)
def test_auto_does_not_probe_a_seed_out_of_the_crawls_scope(
    tmp_path: Path, address: str, host: str, setting: str, why: str
) -> None:
    listener = Listener(address)  # counts the connections made to it
    try:
        topic = tmp_path / "scoped.toml"
        text = NO_CATEGORY.replace("127.0.0.1:{port}", f"{host}:{listener.port}")
        text = text.replace("seeds", 'category = "subject.Science.Chemistry"\nseeds')
        topic.write_text(text, encoding="utf-8")
        out = tmp_path / "out"
        result = scrapy_crawl(
            out, "FOCUSED_WEB=auto", "CLOSESPIDER_PAGECOUNT=5", setting, topic=str(topic)
        )
        connections = listener.connections()
    finally:
        listener.close()
    assert result.returncode == 0, result.stderr[-3000:]
    assert connections == 0
    line = lines_with(result.stderr, "the real web is not probed")
    assert len(line) == 1 and " INFO: " in line[0], result.stderr[-3000:]
    assert f"({why}); crawling the sandbox web instead" in line[0]
    assert "on the sandbox web" in result.stderr
    assert "the real web is unreachable" not in result.stderr


@pytest.mark.parametrize(
    ("setting", "why"),
    [
        ("DOWNLOAD_TIMEOUT=0.001", "did not answer in time"),
        ("DOWNLOAD_MAXSIZE=100", "sent more than DOWNLOAD_MAXSIZE"),
    ],
)
def test_a_sandbox_crawl_whose_settings_refuse_every_page_fails_in_one_line(
    tmp_path: Path, setting: str, why: str
) -> None:
    """Every download of the sandbox cut by a setting: nothing stored, one line naming
    the first failure and the settings to look at, exit status 1 (it was "finished",
    exit 0, with 0 pages)."""
    result = scrapy_crawl(tmp_path / "out", "FOCUSED_WEB=sandbox", setting)
    log = result.stderr
    assert result.returncode == 1, log[-3000:]
    errors = lines_with(log, "focused: error:")
    assert len(errors) == 1, log[-3000:]
    assert errors[0].startswith("focused: error: no page could be fetched from the sandbox web")
    assert why in errors[0] and "DOWNLOAD_TIMEOUT, DOWNLOAD_MAXSIZE" in errors[0]
    assert "Traceback" not in log


def test_a_new_sandbox_crawl_into_a_folder_of_pages_that_fetches_nothing_fails(
    tmp_path: Path,
) -> None:
    """Pages from an earlier crawl in the folder (``FOCUSED_CONTINUE``) do not hide a new
    crawl that fetched nothing: only a resume (``JOBDIR``) may end with nothing fetched."""
    out = tmp_path / "out"
    first = scrapy_crawl(out, "FOCUSED_WEB=sandbox", "CLOSESPIDER_ITEMCOUNT=3")
    assert first.returncode == 0, first.stderr[-3000:]
    again = scrapy_crawl(
        out, "FOCUSED_WEB=sandbox", "FOCUSED_CONTINUE=True", "DOWNLOAD_TIMEOUT=0.001"
    )
    assert again.returncode == 1, again.stderr[-3000:]
    errors = lines_with(again.stderr, "focused: error:")
    assert errors and "no page could be fetched from the sandbox web" in errors[0]


def test_a_resumed_sandbox_crawl_that_fetches_nothing_new_keeps_its_pages(
    tmp_path: Path,
) -> None:
    """The one exemption from the nothing-fetched line of the test above: a resume
    (``JOBDIR``) into the folder of the pages it stored, whose last pages all fail (the
    hostile sandbox's do on purpose; here every download is cut), fetched nothing new
    without error: exit status 0, its pages kept."""
    out, job = tmp_path / "out", tmp_path / "job"
    first = scrapy_crawl(out, "FOCUSED_WEB=sandbox", f"JOBDIR={job}", "CLOSESPIDER_ITEMCOUNT=3")
    assert first.returncode == 0, first.stderr[-3000:]
    stored = [dict(r) for r in Crawl(out, first.returncode, first.stderr).rows()]
    assert len(stored) >= 3
    again = scrapy_crawl(out, "FOCUSED_WEB=sandbox", f"JOBDIR={job}", "DOWNLOAD_TIMEOUT=0.001")
    assert again.returncode == 0, again.stderr[-3000:]
    assert "focused: error:" not in again.stderr
    stats = again.stderr.split("Dumping Scrapy stats:", 1)[1]
    assert "'focused/errors/" in stats and "item_scraped_count" not in stats  # all failed
    assert [dict(r) for r in Crawl(out, again.returncode, again.stderr).rows()] == stored
    # the failures of a run that no host answered are not journaled as errors: the
    # waiting links are still there for the next resume (they were all spent as errors)
    third = scrapy_crawl(out, "FOCUSED_WEB=sandbox", f"JOBDIR={job}", "CLOSESPIDER_ITEMCOUNT=3")
    assert third.returncode == 0, third.stderr[-3000:]
    later = [dict(r) for r in Crawl(out, third.returncode, third.stderr).rows()]
    assert len(later) >= len(stored) + 3, third.stderr[-3000:]


@pytest.mark.parametrize("obey_robots", [True, False])
def test_a_real_web_crawl_that_resolves_nothing_fails_in_one_line(
    tmp_path: Path, obey_robots: bool
) -> None:
    topic = tmp_path / "nowhere.toml"
    topic.write_text(INVALID, encoding="utf-8")
    out = tmp_path / "out"
    result = scrapy_crawl(
        out, "FOCUSED_WEB=real", f"ROBOTSTXT_OBEY={obey_robots}", topic=str(topic), timeout=90
    )
    log = result.stderr
    assert result.returncode == 1, log[-3000:]
    assert "Traceback" not in log and " ERROR: " not in log, log[-5000:]
    errors = lines_with(log, "focused: error:")
    assert len(errors) == 1, log[-3000:]
    assert errors[0].startswith("focused: error: no page could be fetched from the real web")
    assert "DNS lookup failed for " in errors[0] and ".invalid" in errors[0]
    assert "FOCUSED_WEB=sandbox" in errors[0]
    probe = lines_with(log, "the real web looks unreachable")
    assert len(probe) == 1 and "DNS lookup failed for chemistry.invalid" in probe[0]
    # one WARNING line per host (robots.txt) or per request, naming the failing host
    for host in ("chemistry.invalid", "physics.invalid"):
        said = [
            line
            for line in lines_with(log, "WARNING")
            if f"failed for {host}" in line and line not in probe
        ]
        assert len(said) == 1, (host, said, log[-3000:])
    stats = log.split("Dumping Scrapy stats:", 1)[1]
    assert "'focused/errors/dns': 2" in stats


def test_a_refused_connection_is_one_warning_line(tmp_path: Path) -> None:
    port = closed_port()
    out = tmp_path / "out"
    result = scrapy_crawl(
        out,
        "FOCUSED_WEB=real",
        f"FOCUSED_SEEDS=http://127.0.0.1:{port}/",
        "ROBOTSTXT_OBEY=False",
        "RETRY_TIMES=0",
    )
    log = result.stderr
    assert result.returncode == 1, log[-3000:]
    assert "Traceback" not in log and " ERROR: " not in log, log[-5000:]
    warning = [  # log lines, not the stats dump's focused/errors/first
        line
        for line in lines_with(log, "refused the connection")
        if " WARNING: " in line or line.startswith("focused: error:")
    ]
    assert len(warning) == 2, log[-3000:]  # the request's line, then the crawl's end
    assert "WARNING" in warning[0] and f"127.0.0.1:{port}" in warning[0]
    assert "focused: error: no page could be fetched" in warning[1]
    assert "'focused/errors/refused': 1" in log


# --- one output folder, one crawl --------------------------------------------------
def test_an_output_folder_holds_one_topic_and_strategy(tmp_path: Path) -> None:
    out, job = tmp_path / "crawl", tmp_path / "job"
    sandbox = ("FOCUSED_WEB=sandbox", f"JOBDIR={job}")
    first = scrapy_crawl(out, *sandbox, "CLOSESPIDER_PAGECOUNT=10")
    assert first.returncode == 0, first.stderr[-3000:]
    record = json.loads((out / "crawl.json").read_text())
    assert (record["topic"], record["strategy"], record["web"]) == (
        "chemistry",
        "annealing",
        "sandbox",
    )
    held = (out / "pages.sqlite3").stat().st_mtime_ns

    for topic, strategy in (("physics", "annealing"), ("chemistry", "bfs")):
        refused = scrapy_crawl(out, *sandbox, f"FOCUSED_STRATEGY={strategy}", topic=topic)
        assert refused.returncode == 2, refused.stderr[-3000:]
        lines = lines_with(refused.stderr, "focused: error:")
        assert lines == [
            f"focused: error: {out} holds a crawl of topic chemistry with strategy annealing;"
            " use another FOCUSED_OUTPUT_DIR, or -s FOCUSED_CONTINUE=True to add to it"
        ], refused.stderr[-3000:]
        assert "Spider opened" not in refused.stderr and "Crawled (" not in refused.stderr
    assert (out / "pages.sqlite3").stat().st_mtime_ns == held  # nothing written

    # the same topic and strategy with the same JOBDIR resumes: nothing fetched again
    again = scrapy_crawl(out, *sandbox, "CLOSESPIDER_PAGECOUNT=5")
    assert again.returncode == 0, again.stderr[-3000:]
    assert "focused: error:" not in again.stderr
    assert "resuming metrics from" in again.stderr

    # FOCUSED_CONTINUE lets another strategy add to the folder, and is recorded
    more = scrapy_crawl(
        out,
        "FOCUSED_WEB=sandbox",
        "FOCUSED_STRATEGY=bfs",
        "FOCUSED_CONTINUE=True",
        "CLOSESPIDER_ITEMCOUNT=3",  # new pages: the stored ones fetched again are no items
    )
    assert more.returncode == 0, more.stderr[-3000:]
    assert json.loads((out / "crawl.json").read_text())["strategy"] == "bfs"


def test_an_empty_folder_of_another_crawl_is_not_refused(tmp_path: Path) -> None:
    out = tmp_path / "crawl"
    out.mkdir()
    (out / "crawl.json").write_text('{"topic": "physics", "strategy": "bfs"}', "utf-8")
    result = scrapy_crawl(out, "FOCUSED_WEB=sandbox", "CLOSESPIDER_PAGECOUNT=3")
    assert result.returncode == 0, result.stderr[-3000:]


# --- Ctrl-C during start-up ----------------------------------------------------------
def test_ctrl_c_during_start_up_says_so_and_exits_130(tmp_path: Path) -> None:
    """SIGINT while the sandbox is being generated (20,000 pages: ~2 s of start-up)."""
    out, job = tmp_path / "out", tmp_path / "job"
    cmd = [sys.executable, "-m", "scrapy", "crawl", "focused", "-a", "topic=chemistry"]
    for setting in (
        "FOCUSED_WEB=sandbox",
        "FOCUSED_SANDBOX_PAGES=20000",
        f"FOCUSED_OUTPUT_DIR={out}",
        f"JOBDIR={job}",
        "LOG_LEVEL=INFO",
    ):
        cmd += ["-s", setting]
    proc = subprocess.Popen(
        cmd, cwd=PROJECT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    assert proc.stderr is not None
    seen: list[str] = []
    try:
        for line in proc.stderr:
            seen.append(line)
            if "generating the sandbox web" in line:
                proc.send_signal(signal.SIGINT)
                break
        _, rest = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    log = "".join(seen) + (rest or "")
    assert any("generating the sandbox web" in line for line in seen), log[-3000:]
    assert proc.returncode == 130, log[-3000:]
    said = lines_with(log, "focused: interrupted during start-up")
    assert said == ["focused: interrupted during start-up; nothing was fetched"], log[-3000:]
    assert "Traceback" not in log
    assert "Crawled (200)" not in log
    # and the same command then crawls as usual
    result = scrapy_crawl(
        out,
        "FOCUSED_WEB=sandbox",
        "FOCUSED_SANDBOX_PAGES=20000",
        f"JOBDIR={job}",
        "CLOSESPIDER_PAGECOUNT=3",
    )
    assert result.returncode == 0, result.stderr[-3000:]
    # robots.txt counts as one of the 3 responses; pages still downloading at the
    # close may or may not be stored
    assert json.loads((out / "summary.json").read_text())["pages"] >= 1


def test_the_end_of_a_crawl_that_failed_is_in_the_log_file(tmp_path: Path) -> None:
    """With ``LOG_FILE``, the last line ("no page could be fetched ...", exit status 1)
    reaches the log file too, and stderr once."""
    port, log = closed_port(), tmp_path / "crawl.log"
    result = scrapy_crawl(
        tmp_path / "out",
        "FOCUSED_WEB=real",
        f"FOCUSED_SEEDS=http://127.0.0.1:{port}/",
        "ROBOTSTXT_OBEY=False",
        "RETRY_TIMES=0",
        f"LOG_FILE={log}",
    )
    assert result.returncode == 1, log.read_text()[-3000:]
    said = lines_with(result.stderr, "focused: error:")
    assert len(said) == 1 and said[0].startswith("focused: error: no page could be fetched")
    logged = lines_with(log.read_text(), "focused: error:")
    assert len(logged) == 1 and logged[0].endswith(f" ERROR: {said[0]}")
    assert "refused the connection (1 attempt)" in log.read_text()


# --- a topic written with huge weights -----------------------------------------------
def test_a_topic_of_huge_weights_scores_pages_as_the_same_topic_of_small_ones(
    tmp_path: Path,
) -> None:
    """A topic file whose weights are the chemistry topic's times 1e200 (valid: finite,
    > 0) crawled with every page scored 0 (the sum of the squared weights overflowed):
    no page relevant, half the recall. Only the ratios count: the same pages, the same
    scores."""
    import sqlite3
    import tomllib

    data = tomllib.loads((PROJECT / "topics" / "chemistry.toml").read_text("utf-8"))
    lines = [
        f"{key} = {json.dumps(data[key], ensure_ascii=False)}"
        for key in ("name", "category", "seeds", "targets")
    ]
    lines.append("[keywords]")
    lines += [
        f"{json.dumps(k, ensure_ascii=False)} = {w * 1e200!r}" for k, w in data["keywords"].items()
    ]
    lines.append("[thresholds]")
    lines += [f"{k} = {v!r}" for k, v in data["thresholds"].items()]
    topic = tmp_path / "huge.toml"
    topic.write_text("\n".join(lines) + "\n", encoding="utf-8")
    crawled = {}
    for name, which in (("plain", "chemistry"), ("huge", str(topic))):
        out = tmp_path / name
        result = scrapy_crawl(
            out,
            "FOCUSED_WEB=sandbox",
            "FOCUSED_STRATEGY=bfs",
            "CONCURRENT_REQUESTS=1",
            "CLOSESPIDER_PAGECOUNT=20",
            topic=which,
        )
        assert result.returncode == 0, result.stderr[-3000:]
        assert "Traceback" not in result.stderr
        con = sqlite3.connect(out / "pages.sqlite3")
        rows = con.execute("SELECT url, page_relevance FROM pages").fetchall()
        con.close()
        crawled[name] = {urlsplit(url).path: score for url, score in rows}  # another port
    plain, huge = crawled["plain"], crawled["huge"]
    both = plain.keys() & huge.keys()  # bfs, one request at a time: the same pages
    assert len(both) >= 18
    assert sum(plain[path] > 0 for path in both) >= 5
    for path in both:
        assert huge[path] == pytest.approx(plain[path], rel=1e-9, abs=1e-12), path
