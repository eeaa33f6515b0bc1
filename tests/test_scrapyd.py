"""Deployment to a real scrapyd: build the egg, deploy it, run two jobs, read their pages.

A scrapyd 1.6 is started on a free loopback port in a temporary folder (its own
``scrapyd.conf`` with ``eggs_dir``, ``logs_dir`` and ``dbs_dir`` there). The project is
copied to the temporary folder and deployed from the copy with ``scrapyd-deploy`` (the
``make deploy`` way: a ``[deploy:NAME]`` target in ``$XDG_CONFIG_HOME/scrapy.cfg``), so
the build leaves nothing in the checkout. The jobs crawl the sandbox that the spider
serves in-process (``FOCUSED_WEB=sandbox``); their cwd is the scrapyd folder, where no
``topics/`` exists, so the topic must come from the egg's package data.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import sqlite3
import subprocess
import sys
import time
import urllib.parse
import urllib.request
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from bench.process import terminate

PROJECT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
PAGES = 120  # CLOSESPIDER_PAGECOUNT of each job: enough to see two strategies differ

pytestmark = pytest.mark.skipif(
    not (BIN / "scrapyd").exists() or not (BIN / "scrapyd-deploy").exists(),
    reason="scrapyd and scrapyd-client are not installed in this environment",
)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def clean_env(**extra: str) -> dict[str, str]:
    """The environment without ``PYTHONPATH`` (the jobs must import the egg's code)."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "SCRAPY_SETTINGS_MODULE")}
    env.update(extra)
    return env


@dataclass
class Scrapyd:
    url: str
    root: Path
    process: subprocess.Popen

    def get(self, endpoint: str, **params: str) -> dict:
        query = urllib.parse.urlencode(params)
        with urllib.request.urlopen(f"{self.url}{endpoint}?{query}", timeout=10) as r:  # noqa: S310
            return json.loads(r.read())

    def post(self, endpoint: str, fields: list[tuple[str, str]]) -> dict:
        data = urllib.parse.urlencode(fields).encode()
        with urllib.request.urlopen(f"{self.url}{endpoint}", data=data, timeout=10) as r:  # noqa: S310
            return json.loads(r.read())

    def log(self, job: str) -> str:
        path = self.root / "logs" / "focused" / "focused" / f"{job}.log"
        return path.read_text(errors="replace") if path.exists() else "(no job log)"


def start_scrapyd(root: Path) -> Scrapyd:
    port = free_port()
    for name in ("eggs", "logs", "dbs", "items"):
        (root / name).mkdir(parents=True, exist_ok=True)
    (root / "scrapyd.conf").write_text(
        "[scrapyd]\n"
        "bind_address = 127.0.0.1\n"
        f"http_port = {port}\n"
        f"eggs_dir = {root / 'eggs'}\n"
        f"logs_dir = {root / 'logs'}\n"
        f"dbs_dir = {root / 'dbs'}\n"
        f"items_dir = {root / 'items'}\n"
        "jobs_dir =\n"
        "poll_interval = 0.2\n"
        "max_proc = 2\n"
    )
    process = subprocess.Popen(
        [str(BIN / "scrapyd")],
        cwd=root,
        env=clean_env(),
        stdout=(root / "scrapyd.out").open("wb"),
        stderr=subprocess.STDOUT,
    )
    server = Scrapyd(f"http://127.0.0.1:{port}/", root, process)
    deadline = time.monotonic() + 30
    while True:
        try:
            if server.get("daemonstatus.json")["status"] == "ok":
                return server
        except OSError:
            pass
        if process.poll() is not None or time.monotonic() > deadline:
            process.kill()
            out = (root / "scrapyd.out").read_text(errors="replace")
            raise RuntimeError(f"scrapyd did not start:\n{out[-3000:]}")
        time.sleep(0.1)


def copy_project(target: Path) -> Path:
    """The files ``scrapyd-deploy`` needs, copied so that the build stays out of the checkout."""
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    target.mkdir(parents=True)
    shutil.copytree(PROJECT / "focused", target / "focused", ignore=ignore)
    shutil.copytree(PROJECT / "topics", target / "topics", ignore=ignore)
    for name in ("setup.py", "scrapy.cfg"):
        shutil.copy2(PROJECT / name, target / name)
    return target


@pytest.fixture(scope="module")
def scrapyd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Scrapyd]:
    server = start_scrapyd(tmp_path_factory.mktemp("scrapyd"))
    try:
        yield server
    finally:
        terminate(server.process)


def wait_finished(server: Scrapyd, job: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        jobs = server.get("listjobs.json", project="focused")
        for done in jobs["finished"]:
            if done["id"] == job:
                return
        time.sleep(0.3)
    server.post("cancel.json", [("project", "focused"), ("job", job)])
    raise AssertionError(f"job {job} did not finish in {timeout} s:\n{server.log(job)[-3000:]}")


def test_deploy_and_run_two_strategies(scrapyd: Scrapyd, tmp_path: Path) -> None:
    copy = copy_project(tmp_path / "project")
    config = tmp_path / "xdg"
    config.mkdir()
    (config / "scrapy.cfg").write_text(f"[deploy:test]\nurl = {scrapyd.url}\nproject = focused\n")
    deploy = subprocess.run(
        [str(BIN / "scrapyd-deploy"), "test", "-p", "focused", "-v", "1"],
        cwd=copy,
        env=clean_env(XDG_CONFIG_HOME=str(config)),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert deploy.returncode == 0, deploy.stderr + deploy.stdout
    answer = json.loads(deploy.stdout)
    assert answer["status"] == "ok" and answer["spiders"] >= 1, answer

    # The egg scrapyd stored carries the topic files as package data.
    eggs = list((scrapyd.root / "eggs" / "focused").glob("*.egg"))
    assert eggs, "scrapyd stored no egg"
    with zipfile.ZipFile(eggs[0]) as egg:
        names = set(egg.namelist())
    topics = sorted(p.name for p in (PROJECT / "topics").glob("*.toml"))
    assert topics and {f"focused/topics/{t}" for t in topics} <= names, sorted(names)
    assert "focused/settings.py" in names

    assert "focused" in scrapyd.get("listspiders.json", project="focused")["spiders"]

    no_scheduler = not (PROJECT / "focused" / "scheduler.py").exists()
    results: dict[str, list[sqlite3.Row]] = {}
    jobs: dict[str, dict] = {}
    for strategy in ("best_first", "bfs"):  # both scheduled at once: scrapyd runs two
        out = tmp_path / f"out-{strategy}"
        fields = [
            ("project", "focused"),
            ("spider", "focused"),
            ("topic", "chemistry"),
            ("setting", "FOCUSED_WEB=sandbox"),
            ("setting", f"FOCUSED_STRATEGY={strategy}"),
            ("setting", f"FOCUSED_OUTPUT_DIR={out}"),
            ("setting", f"CLOSESPIDER_PAGECOUNT={PAGES}"),
            ("setting", "AUTOTHROTTLE_ENABLED=False"),
        ]
        if no_scheduler:  # the custom scheduler is not written yet
            fields.append(("setting", "SCHEDULER=scrapy.core.scheduler.Scheduler"))
        jobs[strategy] = scrapyd.post("schedule.json", fields)
    for strategy, job in jobs.items():
        out = tmp_path / f"out-{strategy}"
        assert job["status"] == "ok", job
        wait_finished(scrapyd, job["jobid"])
        log = scrapyd.log(job["jobid"])
        assert "Traceback" not in log, log[-4000:]
        assert "topic chemistry on the sandbox web" in log, log[-4000:]
        db = out / "pages.sqlite3"
        assert db.exists(), log[-4000:]
        con = sqlite3.connect(db)
        con.row_factory = sqlite3.Row
        try:
            rows = con.execute("SELECT * FROM pages ORDER BY rowid").fetchall()
        finally:
            con.close()
        assert PAGES <= len(rows) <= PAGES + 40, len(rows)  # a few in flight at the close
        assert {r["strategy"] for r in rows} == {strategy}
        assert all(r["url"].startswith("http://127.0.0.1:") for r in rows)
        assert sum(r["relevant"] for r in rows) > 0
        assert all(r["file_path"] for r in rows)
        # scrapyd's own feed of the job (items_dir): one JSON line per stored page
        feed = scrapyd.root / "items" / "focused" / "focused" / f"{job['jobid']}.jl"
        items = [json.loads(line) for line in feed.read_text(encoding="utf-8").splitlines()]
        assert sorted(i["url"] for i in items) == sorted(r["url"] for r in rows)
        assert {i["file_path"] for i in items} == {r["file_path"] for r in rows}
        results[strategy] = rows

    # Two different strategies: the same seeds, a different crawl order.
    first = [r["url"].split("/", 3)[3] for r in results["best_first"]]
    second = [r["url"].split("/", 3)[3] for r in results["bfs"]]
    assert first[0] == second[0] or set(first[:3]) & set(second[:3])
    assert first != second
