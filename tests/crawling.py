"""Run real crawls of the sandbox as subprocesses (``python -m scrapy crawl focused``)."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from bench.command import crawl_command, settings_from_strings
from tests.loopback import Answer, LoopbackServer

PROJECT = Path(__file__).resolve().parent.parent
SANDBOX_SEED = 7
SANDBOX_PAGES = 600
CHEMISTRY = "subject.Science.Chemistry"


@dataclass
class Crawl:
    out: Path
    returncode: int
    log: str

    @property
    def summary(self) -> dict:
        return json.loads((self.out / "summary.json").read_text())

    def rows(self, order: str = "rowid") -> list[sqlite3.Row]:
        con = sqlite3.connect(self.out / "pages.sqlite3")
        con.row_factory = sqlite3.Row
        try:
            return con.execute(f"SELECT * FROM pages ORDER BY {order}").fetchall()
        finally:
            con.close()

    def paths_in_order(self) -> list[str]:
        """URL paths in the order the pages were stored (the crawl order)."""
        return [urlsplit(r["url"]).path for r in self.rows()]


def sandbox_crawl_command(out: Path, *settings: str, topic: str = "chemistry") -> list[str]:
    """The command of :func:`run_crawl` (to start a crawl in the background). The plot
    and the HTML report are off (two child processes, ~2 s of a test's crawl): a test
    that reads them passes ``FOCUSED_REPORT=True``."""
    defaults: dict[str, object] = {
        "FOCUSED_WEB": "sandbox",
        "FOCUSED_REPORT": False,
        "FOCUSED_SANDBOX_SEED": SANDBOX_SEED,
        "FOCUSED_SANDBOX_PAGES": SANDBOX_PAGES,
        "AUTOTHROTTLE_ENABLED": False,
        "LOG_LEVEL": "INFO",
    }
    if not (PROJECT / "focused/scheduler.py").exists():
        defaults["SCHEDULER"] = "scrapy.core.scheduler.Scheduler"
    return crawl_command(
        topic, output_dir=out, settings={**defaults, **settings_from_strings(settings)}
    )


def run_crawl(
    out: Path, *settings: str, topic: str = "chemistry", timeout: float = 240, check: bool = True
) -> Crawl:
    """Crawl the embedded sandbox with ``-s`` ``settings`` (``NAME=VALUE`` strings)."""
    cmd = sandbox_crawl_command(out, *settings, topic=topic)
    proc = subprocess.run(cmd, cwd=PROJECT, capture_output=True, text=True, timeout=timeout)
    crawl = Crawl(out, proc.returncode, proc.stderr + proc.stdout)
    if check:
        assert proc.returncode == 0, crawl.log[-3000:]
        assert "Traceback" not in crawl.log, crawl.log[-5000:]
    return crawl


def run_scrapy(
    command: list[str], cwd: Path = PROJECT, timeout: float = 60, **more_env: str
) -> subprocess.CompletedProcess[str]:
    """A ``scrapy`` ``command`` line run in ``cwd``, without the caller's ``SCRAPY_*``
    environment (and with ``more_env``), its output captured as text."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("SCRAPY_")}
    env.update(more_env)
    return subprocess.run(
        command, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout
    )


def run_cli(
    project_root: Path, venv_scrapy: list[str], out: Path, *args: str
) -> subprocess.CompletedProcess[str]:
    """``scrapy crawl focused`` with ``args``, output in ``out``: for the bad-input tests,
    which stop before a fetch."""
    return run_scrapy(
        crawl_command(None, output_dir=out, scrapy=venv_scrapy, extra_args=args), project_root
    )


def crawl_real_web(
    project_root: Path, venv_scrapy: list[str], out: Path, seed: str, *settings: str
) -> subprocess.CompletedProcess[str]:
    """``scrapy crawl focused -a topic=chemistry`` of the "real web" from ``seed`` (a
    loopback server of the test's own), output in ``out``, with each of ``settings``
    (``NAME=VALUE``) as a ``-s``: no report, no AutoThrottle."""
    args = ["-a", "topic=chemistry", "-s", "FOCUSED_WEB=real", "-s", "FOCUSED_REPORT=False"]
    args += ["-s", f"FOCUSED_SEEDS={seed}", "-s", "AUTOTHROTTLE_ENABLED=False"]
    for setting in settings:
        args += ["-s", setting]
    return run_cli(project_root, venv_scrapy, out, *args)


def crawl_one_host(
    project_root: Path,
    venv_scrapy: list[str],
    out: Path,
    answer: Callable[[str], Answer],
    *settings: str,
) -> tuple[subprocess.CompletedProcess[str], LoopbackServer]:
    """:func:`crawl_real_web` of the site ``answer`` serves on 127.0.0.2 (a
    :class:`tests.loopback.LoopbackServer`, closed after the crawl), into ``out``: the
    crawl, checked to end with status 0 and no traceback, and the server (its log)."""
    site = LoopbackServer("127.0.0.2", answer)
    try:
        result = crawl_real_web(project_root, venv_scrapy, out, f"{site.url}/", *settings)
    finally:
        site.close()
    assert result.returncode == 0, result.stderr[-3000:]
    assert "Traceback" not in result.stderr, result.stderr[-3000:]
    return result, site


def error_line(result: subprocess.CompletedProcess[str]) -> str:
    """The single ``focused: error:`` line of a run that stopped with exit status 2
    before the spider opened, without a traceback."""
    assert result.returncode == 2, result.stderr[-2000:]
    lines = [x for x in result.stderr.splitlines() if x.startswith("focused: error:")]
    assert len(lines) == 1, result.stderr[-2000:]
    assert "Traceback" not in result.stderr
    assert "Spider opened" not in result.stderr + result.stdout
    return lines[0]


def interrupted_crawl(
    cmd: list[str], ready: Callable[[], bool], act: Callable[[], object], timeout: float = 60
) -> tuple[int, str]:
    """Run the crawl ``cmd`` (in the project folder), call ``act`` once ``ready()`` holds
    (within ``timeout`` seconds, the crawl still running), and let the crawl end: its
    exit status and standard error. A crawl still running at the end is killed."""
    proc = subprocess.Popen(cmd, cwd=PROJECT, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + timeout
        while not ready():
            assert proc.poll() is None and time.monotonic() < deadline
            time.sleep(0.05)
        act()
        _, stderr = proc.communicate(timeout=180)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    return proc.returncode, stderr
