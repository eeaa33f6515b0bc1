"""``scrapy fetch URL`` and ``scrapy shell URL`` reach the URL asked for, on loopback too.

The project refuses internal addresses unless a seed is of their kind; for these two
commands the URL on the command line is the seed (``focused.commands.fetch``).
``scrapy parse --spider focused URL`` shows a loopback page's items and links, and
refuses bad input in one line, exit status 2 (``focused.commands.parse``). ``fetch``,
``view``, ``shell`` and ``parse`` run without ``JOBDIR``: settings.py's is a crawl's,
left untouched; ``-s JOBDIR`` is refused (``focused.cli.StoresNothing``). Real commands
in a subprocess against a real loopback server.
"""

from __future__ import annotations

import contextlib
import os
import re
import socket
import subprocess
import sys
import textwrap
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from focused.frontier.journal import DB_NAME, Journal
from tests.loopback import Answer, LoopbackServer

pytestmark = pytest.mark.integration

PAGE = b"<html><head><title>Loopback page</title></head><body><a href='/b'>b</a></body></html>"


def answer(path: str) -> Answer:
    if path == "/away":  # a redirect to a private address: refused before a connection
        return 302, {"Location": "http://10.0.0.1/secret"}, b""
    if path == "/robots.txt":
        return 404, {}, b""
    return 200, {}, PAGE


@pytest.fixture
def server() -> Iterator[LoopbackServer]:
    web = LoopbackServer("127.0.0.1", answer)
    yield web
    web.close()


def scrapy(
    project_root: Path, venv_scrapy: list[str], *args: str, **more_env: str
) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SCRAPY_")}
    env.update(more_env)
    return subprocess.run(
        [*venv_scrapy, *args],
        cwd=project_root,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_fetch_prints_a_loopback_page(
    project_root: Path, venv_scrapy: list[str], server: LoopbackServer
) -> None:
    result = scrapy(project_root, venv_scrapy, "fetch", f"{server.url}/a")
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.encode().rstrip(b"\n") == PAGE
    assert "/a" in server.log
    assert "focused/refused" not in result.stderr


def test_fetch_still_refuses_a_redirect_to_a_private_address(
    project_root: Path, venv_scrapy: list[str], server: LoopbackServer
) -> None:
    result = scrapy(project_root, venv_scrapy, "fetch", f"{server.url}/away")
    assert "/away" in server.log
    assert "redirect to http://10.0.0.1/secret is a private address" in result.stderr
    assert "'focused/refused/private': 1" in result.stderr
    assert "Loopback page" not in result.stdout


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.2", 0))
        return int(s.getsockname()[1])


@pytest.mark.parametrize("command", ["fetch", "view"])
def test_a_url_that_gets_no_response_is_one_line_and_status_1(
    project_root: Path,
    venv_scrapy: list[str],
    server: LoopbackServer,
    tmp_path: Path,
    command: str,
) -> None:
    """``scrapy fetch`` (or ``view``) of a URL that gets no response: a host that refuses
    the connection (its robots.txt unreachable, so the URL is not asked for), a redirect
    to a private address. Only a WARNING in the log, nothing on stdout, status 0, as if
    the page were empty. Now one line saying why, status 1."""
    closed = f"http://127.0.0.2:{_closed_port()}/"

    def run(url: str) -> subprocess.CompletedProcess[str]:
        if command == "view":
            return view(project_root, venv_scrapy, url, tmp_path)[0]
        return scrapy(project_root, venv_scrapy, command, url)

    for url, why in (
        (closed, f"({closed[7:-1]} refused the connection)"),
        (f"{server.url}/away", "(refused as a private address, "),
    ):
        result = run(url)
        assert result.returncode == 1, result.stderr[-2000:]
        assert "Traceback" not in result.stderr
        lines = [x for x in result.stderr.splitlines() if "focused: error:" in x]
        assert len(lines) == 1, result.stderr[-2000:]
        assert lines[0].startswith(f"focused: error: no response for {url} {why}"), lines
        assert not result.stdout.strip()
    result = run(f"{server.url}/a")
    assert result.returncode == 0, result.stderr[-2000:]
    assert "focused: error" not in result.stderr
    assert (tmp_path / "seen.html").exists() if command == "view" else "Loopback" in result.stdout


def test_a_seed_set_by_the_user_is_kept(
    project_root: Path, venv_scrapy: list[str], server: LoopbackServer
) -> None:
    """FOCUSED_SEEDS given by the user wins: a public seed allows no loopback fetch."""
    result = scrapy(
        project_root,
        venv_scrapy,
        "fetch",
        "-s",
        "FOCUSED_SEEDS=http://example.com/",
        f"{server.url}/a",
    )
    assert "/a" not in server.log
    assert "is a loopback address" in result.stderr


def test_shell_fetches_the_url_and_its_kind(
    project_root: Path, venv_scrapy: list[str], server: LoopbackServer
) -> None:
    code = "(response.status, response.css('title::text').get(), fetch(response.urljoin('/c')))"
    result = scrapy(project_root, venv_scrapy, "shell", "--nolog", "-c", code, f"{server.url}/a")
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip() == "(200, 'Loopback page', None)"
    assert server.log.count("/a") == 1 and "/c" in server.log


def test_shell_on_a_url_that_gets_no_response_is_one_line_and_status_1(
    project_root: Path, venv_scrapy: list[str], server: LoopbackServer
) -> None:
    """``scrapy shell -c "response.status" URL`` (or the shell itself) of a URL that gets
    no response (its host refusing the connection, a redirect to a private address):
    ``response`` was None, so the code's ``AttributeError`` traceback, exit 1 (the
    interactive shell opened on None). Now the line ``scrapy fetch`` gives, exit 1."""
    closed = f"http://127.0.0.2:{_closed_port()}/"
    for url, why in (
        (closed, f"({closed[7:-1]} refused the connection)"),
        (f"{server.url}/away", "(refused as a private address, "),
    ):
        result = scrapy(project_root, venv_scrapy, "shell", "-c", "response.status", url)
        assert result.returncode == 1, result.stderr[-2000:]
        assert "Traceback" not in result.stderr, result.stderr[-2000:]
        lines = [x for x in result.stderr.splitlines() if "focused: error:" in x]
        assert len(lines) == 1, result.stderr[-2000:]
        assert lines[0].startswith(f"focused: error: no response for {url} {why}"), lines
        assert not result.stdout.strip()


# a "browser" for ``scrapy view``: copies the file it is asked to open
BROWSER = textwrap.dedent(
    """
    import shutil, sys
    shutil.copyfile(sys.argv[1].removeprefix("file://"), sys.argv[2])
    """
)


def view(
    project_root: Path,
    venv_scrapy: list[str],
    url: str,
    tmp_path: Path,
    *args: str,
    **more_env: str,
) -> tuple[subprocess.CompletedProcess[str], Path]:
    """``scrapy view URL`` (``args`` before the URL) with a "browser" that copies what it
    is given to the file returned (not there when nothing was opened)."""
    script, seen = tmp_path / "browser.py", tmp_path / "seen.html"
    script.write_text(BROWSER)
    browser = f"{sys.executable} {script} %s {seen}"
    return scrapy(project_root, venv_scrapy, "view", *args, url, BROWSER=browser, **more_env), seen


def test_view_opens_a_loopback_page_in_the_browser(
    project_root: Path, venv_scrapy: list[str], server: LoopbackServer, tmp_path: Path
) -> None:
    result, seen = view(project_root, venv_scrapy, f"{server.url}/a", tmp_path)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "/a" in server.log
    assert "focused/refused" not in result.stderr
    assert b"Loopback page" in seen.read_bytes()  # what the browser was given


def test_view_still_refuses_a_redirect_to_a_private_address(
    project_root: Path, venv_scrapy: list[str], server: LoopbackServer, tmp_path: Path
) -> None:
    result, seen = view(project_root, venv_scrapy, f"{server.url}/away", tmp_path)
    assert "redirect to http://10.0.0.1/secret is a private address" in result.stderr
    assert not seen.exists()


def _listening_addresses(port: int) -> set[str]:
    """The local addresses (hex, as in /proc/net/tcp*) of the sockets listening on ``port``."""
    found = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with contextlib.suppress(FileNotFoundError):
            for line in Path(table).read_text().splitlines()[1:]:
                local, state = line.split()[1], line.split()[3]
                address, _, hex_port = local.partition(":")
                if state == "0A" and int(hex_port, 16) == port:  # LISTEN
                    found.add(address)
    return found


def test_the_bench_site_listens_on_loopback_only() -> None:
    """Scrapy's bench server listened on port 8998 of every interface (0.0.0.0): the
    project's listens on 127.0.0.1 alone, on a free port."""
    if not Path("/proc/net/tcp").exists():
        pytest.skip("no /proc/net/tcp here")
    from focused.commands.bench import bench_site

    with bench_site() as url:
        host, _, port = url.removeprefix("http://").partition(":")
        assert host == "127.0.0.1"
        assert _listening_addresses(int(port)) == {"0100007F"}  # 127.0.0.1, nothing else
        assert b"follow" in urllib.request.urlopen(url, timeout=10).read()  # noqa: S310


def test_bench_crawls_its_own_loopback_server(project_root: Path, venv_scrapy: list[str]) -> None:
    """``scrapy bench`` follows the links of its bench site on 127.0.0.1 with the
    project's settings; before, every request was refused as loopback."""
    result = scrapy(
        project_root,
        venv_scrapy,
        "bench",
        "-s",
        "CLOSESPIDER_TIMEOUT=3",
        "-s",
        "LOGSTATS_INTERVAL=60",
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert "focused/refused" not in result.stderr
    received = re.search(r"'response_received_count': (\d+)", result.stderr)
    assert received is not None and int(received.group(1)) >= 20, result.stderr[-2000:]


def test_bench_runs_without_the_jobdir_of_settings_and_refuses_one_given(
    project_root: Path, venv_scrapy: list[str], tmp_path: Path
) -> None:
    """``scrapy bench`` stores nothing: the JOBDIR of settings.py (a crawl's) is neither
    made nor used, and ``-s JOBDIR`` is refused in one line before its server starts."""
    job = tmp_path / "job"
    env = project_with_jobdir(tmp_path, job)
    quick = ("-s", "CLOSESPIDER_TIMEOUT=2", "-s", "LOGSTATS_INTERVAL=60")
    result = scrapy(project_root, venv_scrapy, "bench", *quick, **env)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "'response_received_count'" in result.stderr
    assert not job.exists()
    refused = scrapy(project_root, venv_scrapy, "bench", *quick, "-s", f"JOBDIR={job}")
    assert refused.returncode == 2
    assert refused.stderr.splitlines() == [
        "focused: error: scrapy bench stores nothing and keeps no frontier: JOBDIR is for"
        " scrapy crawl; run it without -s JOBDIR"
    ]
    assert not job.exists()


# --- scrapy parse: the focused spider on a loopback page; bad input is one line ------------
def parse(
    project_root: Path,
    venv_scrapy: list[str],
    out: Path,
    *args: str,
    topic: str = "chemistry",
    **more_env: str,
) -> subprocess.CompletedProcess[str]:
    return scrapy(
        project_root,
        venv_scrapy,
        "parse",
        "--spider",
        "focused",
        "-a",
        f"topic={topic}",
        "-s",
        f"FOCUSED_OUTPUT_DIR={out}",
        "-s",
        "FOCUSED_SANDBOX_PAGES=60",
        "-s",
        "AUTOTHROTTLE_ENABLED=False",
        *args,
        **more_env,
    )


def one_line(result: subprocess.CompletedProcess[str]) -> str:
    """The single ``focused: error:`` line of a refused ``scrapy parse``: status 2, no
    traceback, no unhandled Deferred or task, no results printed."""
    assert result.returncode == 2, result.stderr[-2000:]
    lines = [x for x in result.stderr.splitlines() if x.startswith("focused: error:")]
    assert len(lines) == 1, result.stderr[-2000:]
    assert "Traceback" not in result.stderr
    assert "Unhandled error" not in result.stderr
    assert "never retrieved" not in result.stderr
    assert "Scraped Items" not in result.stdout
    return lines[0]


def test_parse_shows_the_items_and_links_of_a_loopback_page(
    project_root: Path, venv_scrapy: list[str], server: LoopbackServer, tmp_path: Path
) -> None:
    result = parse(
        project_root, venv_scrapy, tmp_path / "out", "-s", "FOCUSED_WEB=sandbox", f"{server.url}/a"
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert "# Scraped Items" in result.stdout
    assert "'title': 'Loopback page'" in result.stdout
    assert f"<GET {server.url}/b>" in result.stdout  # the link to follow
    assert "/a" in server.log
    for noise in ("Traceback", "Unhandled error", "focused: error:", "returned a Deferred"):
        assert noise not in result.stderr, result.stderr[-2000:]


def test_parse_of_a_url_that_gets_no_response_is_one_line_and_status_1(
    project_root: Path, venv_scrapy: list[str], tmp_path: Path
) -> None:
    """``scrapy parse --spider focused URL`` of a host that refuses the connection:
    Scrapy's ``ERROR: No response downloaded for: ...`` and exit status 0, with no
    reason. Now the line ``scrapy fetch`` gives, exit 1."""
    closed = f"http://127.0.0.2:{_closed_port()}/"
    result = parse(project_root, venv_scrapy, tmp_path / "out", "-s", "FOCUSED_WEB=sandbox", closed)
    assert result.returncode == 1, result.stderr[-2000:]
    assert "Traceback" not in result.stderr, result.stderr[-2000:]
    assert "No response downloaded" not in result.stderr
    lines = [x for x in result.stderr.splitlines() if "focused: error:" in x]
    assert lines == [
        f"focused: error: no response for {closed} ({closed[7:-1]} refused the connection)"
    ], result.stderr[-2000:]


def test_parse_leaves_the_output_folder_as_it_is(
    project_root: Path, venv_scrapy: list[str], server: LoopbackServer, tmp_path: Path
) -> None:
    """``scrapy parse`` stores nothing: a crawl's output folder keeps every byte (before,
    it got a new page store, summary, metrics, stats, report and sandbox port), and a
    folder that does not exist is not made."""
    from focused.output.store import PageStore

    crawl = tmp_path / "crawl"
    with PageStore(crawl) as store:
        store.add({"url": "http://h/kept"}, b"a crawl's page " * 20)
    for name in ("summary.json", "stats.json", "report.html", "metrics.csv", "sandbox.port"):
        (crawl / name).write_text(f"the crawl's {name}")
    before = every_file(crawl)
    result = parse(project_root, venv_scrapy, crawl, "-s", "FOCUSED_WEB=sandbox", f"{server.url}/a")
    assert result.returncode == 0, result.stderr[-2000:]
    assert "'title': 'Loopback page'" in result.stdout
    assert every_file(crawl) == before
    missing = tmp_path / "none"
    result = parse(
        project_root, venv_scrapy, missing, "-s", "FOCUSED_WEB=sandbox", f"{server.url}/a"
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert not missing.exists()


@pytest.mark.parametrize(
    "case",
    [
        (("-a", "topic=nope"), "unknown topic 'nope'; available topics: chemistry"),
        (("-s", "FOCUSED_STRATEGY=nope"), "unknown FOCUSED_STRATEGY 'nope'"),
        (("-c", "nope"), "cannot find callback 'nope' in spider: focused"),
    ],
    ids=["topic", "setting", "callback"],
)
def test_parse_refuses_bad_input_in_one_line(
    project_root: Path,
    venv_scrapy: list[str],
    server: LoopbackServer,
    tmp_path: Path,
    case: tuple[tuple[str, ...], str],
) -> None:
    args, said = case
    out = tmp_path / "out"
    topic = "chemistry"
    if args[:1] == ("-a",):  # the topic itself: given once (twice is refused)
        topic, args = args[1].partition("=")[2], args[2:]
    result = parse(
        project_root, venv_scrapy, out, "-s", "FOCUSED_WEB=sandbox", *args, server.url, topic=topic
    )
    assert said in one_line(result)
    assert server.log == []  # nothing fetched
    if "-c" not in args:  # found before the spider was made
        assert not out.exists()


@pytest.mark.parametrize(
    ("url", "said"),
    [
        ("http://127.0.0.1:99999/a", "malformed URL 'http://127.0.0.1:99999/a' (Port out of range"),
        ("http://[::1/a", "malformed URL 'http://[::1/a' (Invalid IPv6 URL)"),
        ("http://", "malformed URL 'http://' (no host)"),
        ("127.0.0.1/a", "'127.0.0.1/a' is not a URL"),
    ],
)
def test_parse_refuses_a_malformed_url_in_one_line(
    project_root: Path, venv_scrapy: list[str], tmp_path: Path, url: str, said: str
) -> None:
    out = tmp_path / "out"
    assert said in one_line(parse(project_root, venv_scrapy, out, url))
    assert not out.exists()


def test_parse_refuses_a_url_off_loopback_on_the_sandbox(
    project_root: Path, venv_scrapy: list[str], tmp_path: Path, tmp_topic: Callable[..., Path]
) -> None:
    """Off loopback while the web is the sandbox: said before the spider is made with
    FOCUSED_WEB=sandbox, and once the spider knows its web with auto (the topic's seed
    does not answer, so the sandbox is crawled)."""
    out = tmp_path / "out"
    line = one_line(
        parse(project_root, venv_scrapy, out, "-s", "FOCUSED_WEB=sandbox", "http://example.com/")
    )
    assert line.startswith("focused: error: http://example.com/ is not on loopback (127.0.0.0/8)")
    assert "FOCUSED_WEB=real" in line
    assert not out.exists()
    topic = tmp_topic()  # its seed, http://127.0.0.1:1/start, does not answer
    result = parse(project_root, venv_scrapy, out, "http://10.0.0.1/", topic=str(topic))
    assert "crawling the sandbox web instead" in result.stderr
    assert one_line(result) == line.replace("http://example.com/", "http://10.0.0.1/")
    assert "Crawled (" not in result.stderr


@pytest.mark.parametrize(
    "reactor",
    ["asyncio", "twisted.internet.epollreactor.EPollReactor"],
)
def test_parse_keeps_an_error_raised_while_the_spider_is_made(
    project_root: Path, venv_scrapy: list[str], server: LoopbackServer, tmp_path: Path, reactor: str
) -> None:
    """The sandbox's port taken is raised while the spider is made: one line, not asyncio's
    unretrieved task exception nor Twisted's unhandled error in a Deferred."""
    settings = ["-s", f"TWISTED_REACTOR={reactor}"] if "." in reactor else []
    result = parse(
        project_root,
        venv_scrapy,
        tmp_path / "out",
        *settings,
        "-s",
        "FOCUSED_WEB=sandbox",
        "-s",
        f"FOCUSED_SANDBOX_PORT={server.port}",
        f"{server.url}/a",
    )
    assert f"cannot serve the sandbox on port {server.port}" in one_line(result)
    assert server.log == []


# --- JOBDIR: a crawl's, never opened by a command that stores nothing ----------------------
STORING_NOTHING = ["fetch", "view", "shell", "parse"]


def project_with_jobdir(tmp_path: Path, job: Path) -> dict[str, str]:
    """The environment of a project whose settings.py sets ``JOBDIR = job`` (the project's
    settings, and that line)."""
    module = tmp_path / "jobdir_settings.py"
    module.write_text(f"from focused.settings import *  # noqa: F403\nJOBDIR = {str(job)!r}\n")
    path = os.pathsep.join(p for p in (str(tmp_path), os.environ.get("PYTHONPATH")) if p)
    return {"SCRAPY_SETTINGS_MODULE": module.stem, "PYTHONPATH": path}


def stores_nothing(
    command: str,
    project_root: Path,
    venv_scrapy: list[str],
    url: str,
    tmp_path: Path,
    *args: str,
    **more_env: str,
) -> tuple[subprocess.CompletedProcess[str], str]:
    """``scrapy COMMAND URL`` (``args`` before the URL) and what it showed of the page:
    what it printed, or what ``view`` opened in the browser."""
    if command == "view":
        result, seen = view(project_root, venv_scrapy, url, tmp_path, *args, **more_env)
        return result, seen.read_text() if seen.exists() else ""
    if command == "parse":
        out = tmp_path / "out"
        result = parse(
            project_root, venv_scrapy, out, "-s", "FOCUSED_WEB=sandbox", *args, url, **more_env
        )
    elif command == "shell":
        title = "response.css('title::text').get()"
        result = scrapy(
            project_root, venv_scrapy, "shell", "--nolog", "-c", title, *args, url, **more_env
        )
    else:
        result = scrapy(project_root, venv_scrapy, command, *args, url, **more_env)
    return result, result.stdout


def files(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


def every_file(folder: Path) -> dict[str, bytes]:
    """Every file under ``folder`` (its subfolders too) and its bytes."""
    return {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


@pytest.mark.parametrize("command", STORING_NOTHING)
def test_a_jobdir_in_settings_that_does_not_exist_is_not_created(
    project_root: Path, venv_scrapy: list[str], server: LoopbackServer, tmp_path: Path, command: str
) -> None:
    """A command that stores nothing runs without the JOBDIR of settings.py (Scrapy's
    spider state and the frontier journal made that folder)."""
    job = tmp_path / "job"
    env = project_with_jobdir(tmp_path, job)
    result, shown = stores_nothing(
        command, project_root, venv_scrapy, f"{server.url}/a", tmp_path, **env
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert "Loopback page" in shown
    assert not job.exists()


@pytest.mark.parametrize("command", STORING_NOTHING)
def test_a_jobdir_in_settings_that_a_crawl_has_is_left_as_it_is(
    project_root: Path, venv_scrapy: list[str], server: LoopbackServer, tmp_path: Path, command: str
) -> None:
    """The JOBDIR of settings.py is a running crawl's (its frontier journal open, with
    its write lock): the command is not refused because of it, and changes no byte there."""
    job = tmp_path / "job"
    env = project_with_jobdir(tmp_path, job)
    journal = Journal(job / DB_NAME)  # what a running crawl holds
    try:
        before = files(job)
        result, shown = stores_nothing(
            command, project_root, venv_scrapy, f"{server.url}/a", tmp_path, **env
        )
        assert files(job) == before
    finally:
        journal.close()
    assert result.returncode == 0, result.stderr[-2000:]
    assert "Loopback page" in shown
    assert "in use by another crawl" not in result.stderr


@pytest.mark.parametrize("command", STORING_NOTHING)
def test_a_jobdir_on_the_command_line_is_refused_in_one_line(
    project_root: Path, venv_scrapy: list[str], server: LoopbackServer, tmp_path: Path, command: str
) -> None:
    """``-s JOBDIR=...`` cannot be honoured by a command that stores nothing without
    changing a crawl's frontier journal: one line, exit status 2, nothing fetched."""
    job = tmp_path / "job"
    result, _ = stores_nothing(
        command, project_root, venv_scrapy, f"{server.url}/a", tmp_path, "-s", f"JOBDIR={job}"
    )
    assert result.returncode == 2, result.stderr[-2000:]
    assert result.stderr.splitlines() == [
        f"focused: error: scrapy {command} stores nothing and keeps no frontier: JOBDIR is for"
        " scrapy crawl; run it without -s JOBDIR"
    ]
    assert server.log == []
    assert not job.exists()


# --- fetch, view, shell: the focused spider given its topic; bad input is one line --------
SHOWING = ["fetch", "view", "shell"]


def focused_args(out: Path, *more: str) -> tuple[str, ...]:
    """``--spider focused`` on the sandbox web, its output folder ``out``, and ``more``."""
    return (
        "--spider",
        "focused",
        "-s",
        "FOCUSED_WEB=sandbox",
        "-s",
        "FOCUSED_SANDBOX_PAGES=60",
        "-s",
        f"FOCUSED_OUTPUT_DIR={out}",
        *more,
    )


@pytest.mark.parametrize("command", SHOWING)
def test_the_focused_spider_shows_a_page_given_its_topic(
    project_root: Path, venv_scrapy: list[str], server: LoopbackServer, tmp_path: Path, command: str
) -> None:
    """``--spider focused -a topic=...``: the README's usage works (these commands took no
    ``-a``, and the spider without a topic was a traceback)."""
    out = tmp_path / "out"
    args = focused_args(out, "-a", "topic=chemistry")
    result, shown = stores_nothing(
        command, project_root, venv_scrapy, f"{server.url}/a", tmp_path, *args
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert "Loopback page" in shown
    assert "Traceback" not in result.stderr and "never retrieved" not in result.stderr
    assert not out.exists()  # stores nothing


@pytest.mark.parametrize("command", SHOWING)
def test_the_focused_spider_without_a_topic_is_one_line(
    project_root: Path, venv_scrapy: list[str], server: LoopbackServer, tmp_path: Path, command: str
) -> None:
    """No ``-a topic=``: one line saying how to give it, exit status 2, nothing fetched."""
    args = focused_args(tmp_path / "out")
    result, _ = stores_nothing(
        command, project_root, venv_scrapy, f"{server.url}/a", tmp_path, *args
    )
    assert one_line(result).startswith("focused: error: no topic given: use -a topic=")
    assert server.log == []


@pytest.mark.parametrize("command", SHOWING)
def test_an_error_while_the_focused_spider_is_made_is_one_line(
    project_root: Path, venv_scrapy: list[str], server: LoopbackServer, tmp_path: Path, command: str
) -> None:
    """The sandbox's port taken, raised while the spider is made: one line, not asyncio's
    "Task exception was never retrieved" (nor a traceback in the shell)."""
    port = f"FOCUSED_SANDBOX_PORT={server.port}"
    args = focused_args(tmp_path / "out", "-a", "topic=chemistry", "-s", port)
    result, _ = stores_nothing(
        command, project_root, venv_scrapy, f"{server.url}/a", tmp_path, *args
    )
    assert f"cannot serve the sandbox on port {server.port}" in one_line(result)
    assert server.log == []


@pytest.mark.parametrize(
    "args",
    [
        ["crawl", "nosuch"],
        ["check", "nosuch"],
        ["fetch", "--spider", "nosuch", "URL"],
        ["view", "--spider", "nosuch", "URL"],
        ["shell", "--spider", "nosuch", "-c", "1", "URL"],
    ],
    ids=lambda args: args[0],
)
def test_an_unknown_spider_is_one_line(
    project_root: Path, venv_scrapy: list[str], server: LoopbackServer, args: list[str]
) -> None:
    """Scrapy's was a ``KeyError`` traceback, exit status 1; as ``scrapy parse`` says it."""
    args = [f"{server.url}/a" if a == "URL" else a for a in args]
    line = one_line(scrapy(project_root, venv_scrapy, *args))
    assert line == "focused: error: unknown spider 'nosuch'; available spiders: focused"
    assert server.log == []


@pytest.mark.parametrize("command", SHOWING)
def test_a_malformed_url_is_one_line(
    project_root: Path, venv_scrapy: list[str], tmp_path: Path, command: str
) -> None:
    """``ValueError: Invalid IPv6 URL`` was a traceback, exit status 1."""
    result, _ = stores_nothing(command, project_root, venv_scrapy, "http://[::1", tmp_path)
    assert one_line(result) == "focused: error: malformed URL 'http://[::1' (Invalid IPv6 URL)"


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["bench", "-s", "CLOSESPIDER_PAGECOUNT=abc"], "CLOSESPIDER_PAGECOUNT must be an integer"),
        (["fetch", "-s", "DOWNLOAD_TIMEOUT=abc", "URL"], "DOWNLOAD_TIMEOUT must be a number"),
    ],
    ids=["bench", "fetch"],
)
def test_a_scrapy_setting_that_cannot_be_read_is_one_line(
    project_root: Path, venv_scrapy: list[str], server: LoopbackServer, args: list[str], said: str
) -> None:
    """A traceback and exit status 0 (bench) or 1 (fetch) before."""
    args = [f"{server.url}/a" if a == "URL" else a for a in args]
    result = scrapy(project_root, venv_scrapy, *args)
    assert one_line(result) == f"focused: error: {said}, got 'abc'"
    assert "'response_received_count'" not in result.stderr  # bench: nothing crawled
    assert server.log == []
