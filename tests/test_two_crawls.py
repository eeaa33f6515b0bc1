"""Two focused crawls in one process, as Scrapy's documentation shows them ("Running
multiple spiders in the same process"): a ``CrawlerProcess`` script that starts both
at once, or a ``CrawlerRunner`` one after the other (real sandbox crawls, the script
in a subprocess)."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from tests.crawling import PROJECT
from tests.loopback import LoopbackServer

pytestmark = pytest.mark.integration

#: python run.py MODE TOPIC OUT [JOBDIR] [TOPIC OUT [JOBDIR]]...: MODE "together"
#: (CrawlerProcess, both started before process.start()) or "after" (CrawlerRunner,
#: ``yield runner.crawl(...)``); JOBDIR "-" for none; SEEDS (env) crawls that real web
SCRIPT = """
import os
import sys

from scrapy.utils.project import get_project_settings

sys.path.insert(0, os.getcwd())
mode, rest = sys.argv[1], sys.argv[2:]
crawls = [rest[i : i + 3] for i in range(0, len(rest), 3)]
settings = get_project_settings()
settings.setdict(
    {
        "FOCUSED_WEB": "real" if os.environ.get("SEEDS") else "sandbox",
        "CLOSESPIDER_PAGECOUNT": 40,
        "FOCUSED_SANDBOX_PAGES": 200,
        "AUTOTHROTTLE_ENABLED": False,
        "FOCUSED_REPORT": False,
    },
    priority="cmdline",
)
if os.environ.get("SEEDS"):
    settings.set("FOCUSED_SEEDS", os.environ["SEEDS"], priority="cmdline")


def own(crawler, out, jobdir):  # each crawl's folders (above the script's settings)
    crawler.settings.set("FOCUSED_OUTPUT_DIR", out, priority=50)
    if jobdir != "-":
        crawler.settings.set("JOBDIR", jobdir, priority=50)
    return crawler


if mode == "together":
    from scrapy.crawler import CrawlerProcess

    process = CrawlerProcess(settings)
    for topic, out, jobdir in crawls:
        crawler = own(process.create_crawler("focused"), out, jobdir)
        process.crawl(crawler, topic=topic)
    process.start()
else:
    from scrapy.utils.reactor import install_reactor

    install_reactor("twisted.internet.asyncioreactor.AsyncioSelectorReactor")
    from scrapy.crawler import CrawlerRunner
    from scrapy.utils.log import configure_logging
    from twisted.internet import defer, reactor

    configure_logging(settings)
    runner = CrawlerRunner(settings)

    @defer.inlineCallbacks
    def crawl_all():
        for topic, out, jobdir in crawls:
            crawler = own(runner.create_crawler("focused"), out, jobdir)
            yield runner.crawl(crawler, topic=topic)
        reactor.stop()

    crawl_all()
    reactor.run()
"""


def _run(tmp_path: Path, mode: str, *crawls: str, seeds: str = "") -> str:
    script = tmp_path / "run.py"
    script.write_text(SCRIPT)
    env = {k: v for k, v in __import__("os").environ.items() if not k.startswith("SCRAPY_")}
    if seeds:
        env["SEEDS"] = seeds
    result = subprocess.run(
        [sys.executable, str(script), mode, *crawls],
        cwd=PROJECT,
        capture_output=True,
        text=True,
        timeout=240,
        env=env,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stderr


def _pages(out: Path) -> dict[str, tuple[float, float, float]]:
    """URL path -> (title, body, page relevance) of each stored page."""
    con = sqlite3.connect(out / "pages.sqlite3")
    try:
        rows = con.execute(
            "SELECT url, title_relevance, body_relevance, page_relevance FROM pages"
        ).fetchall()
    finally:
        con.close()
    return {urlsplit(url).path: tuple(scores) for url, *scores in rows}


def _topic(out: Path) -> str:
    from focused.output.record import read_record

    record = read_record(out)
    assert record is not None
    return str(record["topic"])


def test_a_crawl_run_after_another_scores_pages_as_alone(tmp_path: Path) -> None:
    """jieba's dictionary is one per process and each topic adds its Chinese keywords
    to it: a physics crawl after a chemistry one cut its pages with chemistry's words
    too (8 of 48 pages scored otherwise than alone). The words go when a crawl ends."""
    chemistry, physics, alone = tmp_path / "chemistry", tmp_path / "physics", tmp_path / "alone"
    _run(tmp_path, "after", "chemistry", str(chemistry), "-", "physics", str(physics), "-")
    _run(tmp_path, "after", "physics", str(alone), "-")
    assert (_topic(chemistry), _topic(physics)) == ("chemistry", "physics")
    after, solo = _pages(physics), _pages(alone)
    common = set(after) & set(solo)
    assert len(common) >= 30
    differ = [p for p in sorted(common) if after[p] != pytest.approx(solo[p], abs=1e-12)]
    assert differ == []


def test_a_crawl_of_another_topic_beside_a_running_one_is_refused(tmp_path: Path) -> None:
    chemistry, physics = tmp_path / "chemistry", tmp_path / "physics"
    log = _run(tmp_path, "together", "chemistry", str(chemistry), "-", "physics", str(physics), "-")
    refusal = [line for line in log.splitlines() if line.startswith("focused.errors.ConfigError")]
    assert refusal, log[-3000:]
    assert (
        "a crawl of topic chemistry runs in this process: a crawl of topic physics" in (refusal[0])
    )
    assert _topic(chemistry) == "chemistry" and len(_pages(chemistry)) >= 40
    assert not (physics / "pages.sqlite3").exists()


def test_the_same_topic_twice_at_once_into_two_folders(tmp_path: Path) -> None:
    """The same topic (another strategy or not) adds the same words: both crawl."""
    one, two = tmp_path / "one", tmp_path / "two"
    log = _run(tmp_path, "together", "chemistry", str(one), "-", "chemistry", str(two), "-")
    assert "Traceback" not in log, log[-3000:]
    for out in (one, two):
        assert _topic(out) == "chemistry" and len(_pages(out)) >= 40


def _site(path: str) -> tuple[int, dict[str, str], bytes]:
    name = path.strip("/").removesuffix(".html") or "0"
    if not name.isdigit():
        return 404, {}, b"no"  # robots.txt
    n = int(name)
    links = "".join(f'<a href="/{k}.html">chemistry acid {k}</a> ' for k in range(n + 1, n + 4))
    body = f"<html><head><title>chemistry {n}</title></head><body><p>acid base molecule"
    return 200, {}, f"{body} element reaction {links}</p></body></html>".encode()


def test_two_crawls_of_one_process_on_one_jobdir(tmp_path: Path) -> None:
    """The second crawl was handed the first one's frontier journal, failed as its
    scheduler opened (tracebacks) and left the first crawl unable to reach its web
    (0 pages stored). Now it is refused in one line, and the first crawls."""
    server = LoopbackServer("127.0.0.1", _site)
    try:
        one, two, job = tmp_path / "one", tmp_path / "two", tmp_path / "job"
        log = _run(
            tmp_path,
            "together",
            "chemistry",
            str(one),
            str(job),
            "chemistry",
            str(two),
            str(job),
            seeds=f"{server.url}/",
        )
    finally:
        server.close()
    refusal = [line for line in log.splitlines() if line.startswith("focused.errors.ConfigError")]
    assert refusal and f"JOBDIR '{job}' is in use by another crawl (pid" in refusal[0], log[-3000:]
    assert "Scheduler close failure" not in log
    assert len(_pages(one)) >= 40
    assert not (two / "pages.sqlite3").exists()
