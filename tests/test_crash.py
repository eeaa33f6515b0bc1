"""``kill -9`` of the crawler at random moments, then resume (a hostile environment).

A sandbox server runs in its own process and logs every request it gets, so fetches are
counted outside the crawler that is killed. The crawler runs forked from a *zygote*
process that imported Scrapy, the project and jieba's dictionary once, so that a run is
crawling within a fraction of a second and a kill after a random 0.3-1.5 s lands in every
phase of a crawl: opening the store, restoring the journal, fetching, storing, closing.

After every kill the page store may hold files without rows (a page written, its row not
committed) but never a row without its file or a duplicate row; nothing stored before the
kill is lost; no stored page is fetched again; and at the end the store is consistent,
the journal has nothing waiting or in flight, and the stored pages are those of an
uninterrupted crawl.
"""

from __future__ import annotations

import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from focused.output.store import PageStore

pytestmark = pytest.mark.integration

PROJECT = Path(__file__).resolve().parent.parent
PAGES = 200  # sandbox size
KILLS = 20  # crawls killed while running
KILL_AFTER = (0.0, 1.2)  # seconds after the spider opened (or after the fork, if it is slow)
SEED = 20260  # of the kill times

SERVER = """
import sys, threading
from focused.web.sandbox import SandboxServer, generate_site
site = generate_site(seed=7, pages=int(sys.argv[1]))
log = open(sys.argv[2], "a", buffering=1)
lock = threading.Lock()
def responder(handler, with_body):  # log the request, let the site answer it
    with lock:
        log.write(handler.path + "\\n")
    return False
site.responder = responder
server = SandboxServer(site)
print(server.base_url, flush=True)
server.serve_forever()
"""

ZYGOTE = """
import json, os, sys, traceback
from scrapy.crawler import CrawlerProcess
from scrapy.utils.project import get_project_settings
from scrapy.utils.misc import load_object
import matplotlib.pyplot  # noqa: F401 - the metrics pipeline plots at close
import focused.spiders.focused  # noqa: F401
# import once, before the forks, what a crawl loads: a forked crawl is running at once
from focused.ranking import relevance
relevance.tokenize("化学")  # jieba's dictionary
base = get_project_settings()
for name in ("DOWNLOADER_MIDDLEWARES", "SPIDER_MIDDLEWARES", "EXTENSIONS", "ITEM_PIPELINES"):
    for path, order in base.getwithbase(name).items():
        if order is not None:
            load_object(path)
for name in ("SCHEDULER", "STATS_CLASS", "LOG_FORMATTER", "REQUEST_FINGERPRINTER_CLASS"):
    load_object(base[name])
load_object("focused.robustness.RobustnessMiddleware")
assert "twisted.internet.reactor" not in sys.modules
print("ready", flush=True)
for line in sys.stdin:
    cmd = json.loads(line)
    if cmd["cmd"] == "run":
        pid = os.fork()
        if pid == 0:
            fd = os.open(cmd["log"], os.O_WRONLY | os.O_CREAT | os.O_APPEND)
            os.dup2(fd, 1)
            os.dup2(fd, 2)
            code = 0
            try:
                settings = get_project_settings()
                for name, value in cmd["settings"].items():
                    settings.set(name, value, priority="cmdline")
                process = CrawlerProcess(settings)
                process.crawl("focused", topic="chemistry")
                process.start()
            except BaseException:
                traceback.print_exc()
                code = 1
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(code)
        print(pid, flush=True)
    elif cmd["cmd"] == "wait":
        _, status = os.waitpid(cmd["pid"], 0)
        print(status, flush=True)
"""


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SCRAPY_")}
    env["PYTHONPATH"] = str(PROJECT)
    env["OPENBLAS_NUM_THREADS"] = "1"  # no BLAS threads in a process that forks
    return env


class Zygote:
    """A process with everything imported that forks one crawl per :meth:`run`."""

    def __init__(self) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-c", ZYGOTE],
            cwd=PROJECT,
            env=_env(),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self._read() == "ready"

    def _read(self) -> str:
        assert self.proc.stdout is not None
        return self.proc.stdout.readline().strip()

    def _send(self, **cmd: object) -> str:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(cmd) + "\n")
        self.proc.stdin.flush()
        return self._read()

    def run(self, settings: dict[str, object], log: Path) -> int:
        return int(self._send(cmd="run", settings=settings, log=str(log)))

    def wait(self, pid: int) -> int:
        """Wait status of crawl ``pid`` (as ``os.waitpid`` gives it)."""
        return int(self._send(cmd="wait", pid=pid))

    def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        self.proc.wait(timeout=10)


class Server:
    """The sandbox in its own process; :meth:`fetches` reads its request log."""

    def __init__(self, log: Path) -> None:
        self.log = log
        self.proc = subprocess.Popen(
            [sys.executable, "-c", SERVER, str(PAGES), str(log)],
            cwd=PROJECT,
            env=_env(),
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.proc.stdout is not None
        self.base = self.proc.stdout.readline().strip()
        assert self.base.startswith("http://127.0.0.1:")

    def fetches(self) -> list[str]:
        """Every page path requested so far (robots.txt and labels left out)."""
        lines = self.log.read_text().splitlines()
        return [p for p in lines if p not in ("/robots.txt", "/labels.tsv")]

    def close(self) -> None:
        self.proc.kill()  # our own child, by its handle
        self.proc.wait(timeout=10)


def stored(out: Path) -> set[str]:
    """Paths of the committed rows of the page store at ``out`` (read-only)."""
    db = out / "pages.sqlite3"
    if not db.exists():
        return set()
    con = sqlite3.connect(f"{db.resolve().as_uri()}?mode=ro", uri=True)
    try:
        return {urlsplit(u).path for (u,) in con.execute("SELECT url FROM pages")}
    except sqlite3.OperationalError:  # killed before the table was made
        return set()
    finally:
        con.close()


def problems_after_kill(out: Path) -> list[str]:
    """Store problems a kill may not leave (orphan files, records past a segment's
    committed end and segments no commit names are allowed: repaired at open)."""
    if not (out / "pages.sqlite3").exists():
        return []
    store = PageStore(out).open(repair=False)
    try:
        found = store.check()
    finally:
        store.close()
    allowed = (
        "file without row:",
        "stray file:",
        "bytes past the committed end:",
        "segment without commit:",
    )
    return [p for p in found if not p.startswith(allowed)]


def _read(path: Path) -> str:
    return path.read_text(errors="replace") if path.exists() else ""


def journal_counts(jobdir: Path) -> Counter[int]:
    con = sqlite3.connect(jobdir / "frontier.sqlite3")
    try:
        return Counter(dict(con.execute("SELECT state, COUNT(*) FROM urls GROUP BY state")))
    finally:
        con.close()


@pytest.fixture(scope="module")
def web(tmp_path_factory):
    folder = tmp_path_factory.mktemp("crash-web")
    server = Server(folder / "requests.log")
    zygote = Zygote()
    yield server, zygote
    zygote.close()
    server.close()


def crawl_settings(base: str, out: Path, **extra: object) -> dict[str, object]:
    return {
        "FOCUSED_WEB": "real",
        "FOCUSED_SEEDS": f"{base}/,{base}/hub/chemistry.html",
        "FOCUSED_LABELS": f"{base}/labels.tsv",
        "FOCUSED_OUTPUT_DIR": str(out),
        "JOBDIR": str(out / "job"),
        "AUTOTHROTTLE_ENABLED": False,
        "CONCURRENT_REQUESTS": 8,
        "LOG_LEVEL": "INFO",
        # the m-value rule drops a link past this many irrelevant hops, which depends on
        # the parent that found a URL first, and so on the kills: no drop, so that the
        # pages a crawl reaches are the same whatever the order (the sets compared below)
        "FOCUSED_MAX_TUNNEL_HOPS": 999,
        **extra,
    }


def test_kill_9_at_random_moments_then_resume(web, tmp_path):
    server, zygote = web
    rng = random.Random(SEED)

    # the uninterrupted crawl
    ref = tmp_path / "reference"
    mark = len(server.fetches())
    pid = zygote.run(crawl_settings(server.base, ref), tmp_path / "reference.log")
    assert zygote.wait(pid) == 0, (tmp_path / "reference.log").read_text()[-3000:]
    expected = stored(ref)
    ref_fetches = server.fetches()[mark:]
    assert len(ref_fetches) == len(set(ref_fetches))  # each page once
    assert len(expected) > PAGES // 2

    # the same crawl, killed again and again, slowed down (at most ~8 pages/s) so that it
    # outlives the kills
    out = tmp_path / "killed"
    settings = crawl_settings(server.base, out, DOWNLOAD_DELAY=0.12)
    before: set[str] = set()
    kills = 0
    runs: list[tuple[int, int]] = []  # (first, end) index of each run's fetches
    while kills < KILLS:
        mark = len(server.fetches())
        log = tmp_path / f"run{len(runs)}.log"
        pid = zygote.run(settings, log)
        # On a loaded machine opening the spider alone can take a second: start the kill
        # window when it has opened, so that most kills land in the crawl itself.
        deadline = time.monotonic() + 3.0
        while time.monotonic() < deadline and "Spider opened" not in _read(log):
            time.sleep(0.02)
        time.sleep(rng.uniform(*KILL_AFTER))
        os.kill(pid, signal.SIGKILL)  # the crawl this test forked, by its pid
        status = zygote.wait(pid)
        runs.append((mark, len(server.fetches())))
        assert os.WIFSIGNALED(status), "the crawl finished before it was killed 20 times"
        kills += 1
        assert problems_after_kill(out) == []  # no row without its file, no duplicate
        now = stored(out)
        assert before <= now, f"stored pages lost: {sorted(before - now)[:5]}"
        # no page stored before this run was fetched again by it
        fetched = server.fetches()[runs[-1][0] : runs[-1][1]]
        assert not set(fetched) & before, sorted(set(fetched) & before)[:5]
        before = now
    assert len(before) > 20, "the killed runs stored almost nothing"
    opened = sum("Spider opened" in (tmp_path / f"run{i}.log").read_text() for i in range(KILLS))
    assert opened >= KILLS // 2, "most kills must hit a crawl, not its start-up"

    # resume to the end, at full speed
    mark = len(server.fetches())
    settings.pop("DOWNLOAD_DELAY")
    pid = zygote.run(settings, tmp_path / "final.log")
    assert zygote.wait(pid) == 0, (tmp_path / "final.log").read_text()[-3000:]
    final_fetches = server.fetches()[mark:]
    assert not set(final_fetches) & before
    assert len(final_fetches) == len(set(final_fetches))

    with PageStore(out) as store:
        assert store.check(verify=True) == []
    counts = journal_counts(out / "job")
    assert counts[0] == 0 and counts[1] == 0, counts  # nothing waiting or in flight
    assert stored(out) == expected  # the frontier was intact

    # a page is fetched again only when a kill took it in flight: at most once per kill
    killed_fetches = server.fetches()[runs[0][0] : mark]
    again = sum(n - 1 for n in Counter(killed_fetches + final_fetches).values() if n > 1)
    assert again <= 8 * KILLS  # CONCURRENT_REQUESTS per kill
