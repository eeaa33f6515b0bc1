"""A spider of the user's own that subclasses the focused spider, as Scrapy users do:
``class ChemSpider(FocusedSpider): name = "chem"; topic = "chemistry"``.

``scrapy crawl chem`` is checked and crawled as ``scrapy crawl focused`` is: its topic is
its class attribute ``topic`` (``-a topic=`` wins), its ``custom_settings``,
``start_urls`` and ``allowed_domains`` are its crawl's settings, and two subclasses of
different topics are not mixed in one output folder.

Each case runs the real command in a subprocess from the project root, the user's
spiders in a module of the test's tmp folder (``-s SPIDER_MODULES=...``, ``PYTHONPATH``),
against the embedded sandbox or a loopback server.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.crawling import PROJECT, error_line
from tests.loopback import Answer, LoopbackServer

SPIDERS = """\
from focused.spiders.focused import FocusedSpider


class ChemSpider(FocusedSpider):
    name = "chem"
    topic = "chemistry"


class PhysSpider(FocusedSpider):
    name = "phys"
    topic = "physics"


class BfsChemSpider(FocusedSpider):
    name = "bfschem"
    topic = "chemistry"
    custom_settings = {"FOCUSED_STRATEGY": "bfs"}


class BadSpider(FocusedSpider):
    name = "bad"
    topic = 3
"""


def scrapy(tmp: Path, *args: str, spiders: str = SPIDERS) -> subprocess.CompletedProcess[str]:
    """``scrapy ARGS`` in the project with the spiders of ``spiders`` (a module written in
    ``tmp``) beside the project's."""
    (tmp / "user_spiders.py").write_text(spiders, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith("SCRAPY_")}
    env["PYTHONPATH"] = f"{tmp}{os.pathsep}{PROJECT}"
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "scrapy",
            *args,
            "-s",
            "SPIDER_MODULES=focused.spiders,user_spiders",
        ],
        cwd=PROJECT,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )


def crawl(tmp: Path, spider: str, out: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``scrapy crawl SPIDER`` of 10 pages of the sandbox into ``out``."""
    return scrapy(
        tmp,
        "crawl",
        spider,
        *args,
        "-s",
        f"FOCUSED_OUTPUT_DIR={out}",
        "-s",
        "FOCUSED_WEB=sandbox",
        "-s",
        "CLOSESPIDER_PAGECOUNT=10",
        "-s",
        "AUTOTHROTTLE_ENABLED=False",
    )


def ok(proc: subprocess.CompletedProcess[str]) -> None:
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]


def record(folder: Path) -> dict[str, str]:
    return json.loads((folder / "crawl.json").read_text(encoding="utf-8"))


def stored(folder: Path) -> int:
    con = sqlite3.connect(folder / "pages.sqlite3")
    try:
        return int(con.execute("SELECT count(*) FROM pages").fetchone()[0])
    finally:
        con.close()


def test_the_class_attribute_topic_is_crawled_and_a_topic_argument_wins(tmp_path: Path) -> None:
    out = tmp_path / "out"
    proc = crawl(tmp_path, "chem", out)
    ok(proc)
    assert "focused: topic chemistry on the sandbox web" in proc.stderr
    assert record(out)["topic"] == "chemistry" and stored(out) > 0
    # as for any Scrapy spider, -a sets the attribute over the class's
    other = tmp_path / "other"
    proc = crawl(tmp_path, "chem", other, "-a", "topic=physics")
    ok(proc)
    assert record(other)["topic"] == "physics"


def test_a_class_attribute_topic_that_is_no_name_is_one_line(tmp_path: Path) -> None:
    out = tmp_path / "out"
    proc = crawl(tmp_path, "bad", out)
    assert proc.returncode == 2, proc.stderr[-3000:]
    assert "BadSpider.topic must be a topic name or the path of a topic file" in error_line(proc)
    assert not out.exists()


def test_two_subclasses_of_two_topics_do_not_mix_in_one_folder(tmp_path: Path) -> None:
    listed = scrapy(tmp_path, "list")
    ok(listed)
    assert {"chem", "phys", "focused"} <= set(listed.stdout.split())
    out = tmp_path / "out"
    # -a topic= as well: the spider's name alone makes its crawl checked
    ok(crawl(tmp_path, "chem", out, "-a", "topic=chemistry"))
    pages = stored(out)
    proc = crawl(tmp_path, "phys", out, "-a", "topic=physics")
    assert proc.returncode == 2, proc.stderr[-3000:]
    line = error_line(proc)
    assert "holds a crawl of topic chemistry" in line and "FOCUSED_CONTINUE" in line
    assert "Crawled (" not in proc.stderr
    assert stored(out) == pages and record(out)["topic"] == "chemistry"
    # commands that run the spider and store nothing are not refused there (without
    # AutoThrottle's 1 s start delay between the refused robots.txt's retries)
    for command in (("fetch", "--spider", "phys"), ("view", "--spider", "phys")):
        proc = scrapy(
            tmp_path,
            *command,
            "-s",
            f"FOCUSED_OUTPUT_DIR={out}",
            "-s",
            "FOCUSED_WEB=sandbox",
            "-s",
            "AUTOTHROTTLE_ENABLED=False",
            "http://127.0.0.1:1/",
        )
        assert "holds a crawl of topic" not in proc.stderr, proc.stderr[-3000:]
        assert "Traceback" not in proc.stderr and "never retrieved" not in proc.stderr
    assert stored(out) == pages and record(out)["topic"] == "chemistry"


def test_custom_settings_are_the_crawls_settings(tmp_path: Path) -> None:
    """The strategy of ``custom_settings`` is the one recorded in ``JOBDIR`` and the
    folder, so the same command resumes and another spider's crawl is refused there."""
    out, job = tmp_path / "out", tmp_path / "job"
    args = ("-a", "topic=chemistry", "-s", f"JOBDIR={job}")
    proc = crawl(tmp_path, "bfschem", out, *args)
    ok(proc)
    assert "strategy bfs" in proc.stderr
    assert record(job)["strategy"] == "bfs" and record(out)["strategy"] == "bfs"
    ok(crawl(tmp_path, "bfschem", out, *args))  # resumes
    proc = crawl(tmp_path, "chem", out, *args)
    assert proc.returncode == 2, proc.stderr[-3000:]
    assert "strategy bfs" in error_line(proc)


PAGE = (
    "<html><head><title>Chemistry {path}</title></head><body><p>chemistry acid</p>"
    "<a href='/a'>chemistry acid</a> <a href='http://other.test:{port}/b'>chemistry</a>"
    "</body></html>"
)


@pytest.fixture
def server() -> Iterator[LoopbackServer]:
    def answer(path: str) -> Answer:
        if path == "/robots.txt":
            return 404, {"Content-Type": "text/plain"}, b""
        return 200, {}, PAGE.format(path=path, port=web.port).encode()

    web = LoopbackServer("127.0.0.1", answer)
    yield web
    web.close()


def test_start_urls_and_allowed_domains_are_the_seeds_and_the_scope(
    tmp_path: Path, server: LoopbackServer
) -> None:
    topic = tmp_path / "tiny.toml"
    topic.write_text(
        textwrap.dedent(f"""\
        name = "tiny"
        seeds = ["{server.url}/topic-seed"]

        [keywords]
        chemistry = 3
        acid = 4
        """),
        encoding="utf-8",
    )
    spiders = textwrap.dedent(f"""\
        from focused.spiders.focused import FocusedSpider


        class Mine(FocusedSpider):
            name = "mine"
            topic = {str(topic)!r}
            start_urls = ["{server.url}/start"]
            allowed_domains = ["127.0.0.1"]
        """)
    out = tmp_path / "out"
    proc = scrapy(
        tmp_path,
        "crawl",
        "mine",
        "-a",
        f"topic={topic}",
        "-s",
        f"FOCUSED_OUTPUT_DIR={out}",
        "-s",
        "FOCUSED_WEB=real",
        "-s",
        'FOCUSED_HOSTS={"other.test": "127.0.0.1"}',
        "-s",
        "CLOSESPIDER_PAGECOUNT=5",
        "-s",
        "AUTOTHROTTLE_ENABLED=False",
        spiders=spiders,
    )
    ok(proc)
    assert "/start" in server.log and "/topic-seed" not in server.log
    con = sqlite3.connect(out / "pages.sqlite3")
    try:
        urls = {u for (u,) in con.execute("SELECT url FROM pages")}
    finally:
        con.close()
    assert f"{server.url}/start" in urls and f"{server.url}/a" in urls
    assert not [u for u in urls if "other.test" in u]  # off allowed_domains


def test_scrapy_parse_with_a_subclass_reads_its_topic(
    tmp_path: Path, server: LoopbackServer
) -> None:
    proc = scrapy(
        tmp_path,
        "parse",
        "--spider",
        "chem",
        "-s",
        f"FOCUSED_OUTPUT_DIR={tmp_path / 'out'}",
        "-s",
        "FOCUSED_WEB=sandbox",
        "-s",
        "FOCUSED_SANDBOX_PAGES=60",
        f"{server.url}/a",
    )
    ok(proc)
    assert "focused: error:" not in proc.stderr
    assert "# Scraped Items" in proc.stdout and "'title': 'Chemistry /a'" in proc.stdout


def test_scrapy_runspider_of_a_subclass_is_checked_as_scrapy_crawl(tmp_path: Path) -> None:
    """``scrapy runspider chem.py`` (the file of a subclass, in the project): a bad
    argument, setting or output folder was the spider's ``ConfigError`` or
    ``TopicError`` traceback, exit status 1; now one line and exit status 2, as for
    ``scrapy crawl chem``, and a good one crawls."""
    spider = tmp_path / "chem.py"
    spider.write_text(SPIDERS.split("\n\n\nclass PhysSpider")[0] + "\n", encoding="utf-8")
    out = tmp_path / "out"

    def runspider(*args: str) -> subprocess.CompletedProcess[str]:
        return scrapy(
            tmp_path,
            "runspider",
            str(spider),
            *args,
            "-s",
            "FOCUSED_WEB=sandbox",
            "-s",
            "CLOSESPIDER_PAGECOUNT=10",
        )

    for args, says in [
        (("-a", "strategy=bfs"), "unknown spider argument -a strategy=bfs"),
        (("-a", "topic=nosuch"), "unknown topic 'nosuch'"),
        (("-s", "FOCUSED_STRATEGY=dfs"), "unknown FOCUSED_STRATEGY 'dfs'"),
    ]:
        proc = runspider(*args, "-s", f"FOCUSED_OUTPUT_DIR={out}")
        assert proc.returncode == 2, proc.stderr[-3000:]
        assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
        assert says in error_line(proc)
        assert not out.exists()
    proc = runspider("-s", f"FOCUSED_OUTPUT_DIR={out}")
    ok(proc)
    assert record(out)["topic"] == "chemistry" and stored(out) > 0
    # the folder now holds its pages: a crawl of another topic there is refused
    proc = runspider("-a", "topic=physics", "-s", f"FOCUSED_OUTPUT_DIR={out}")
    assert proc.returncode == 2, proc.stderr[-3000:]
    assert "holds a crawl of topic chemistry" in error_line(proc)


LISTED_PIPELINES = """\
from focused.spiders.focused import FocusedSpider


class ChemSpider(FocusedSpider):
    name = "chem"
    topic = "chemistry"
    custom_settings = {"ITEM_PIPELINES": ["focused.pipelines.PageStorePipeline"]}
"""


@pytest.mark.parametrize(
    "command",
    [
        ("crawl", "chem"),
        ("parse", "--spider", "chem", "http://127.0.0.1:1/"),
        ("fetch", "--spider", "chem", "http://127.0.0.1:1/"),
    ],
    ids=lambda c: c[0],
)
def test_custom_settings_scrapy_cannot_set_are_one_line_for_every_command(
    tmp_path: Path, command: tuple[str, ...]
) -> None:
    """A subclass whose ``custom_settings`` give ``ITEM_PIPELINES`` as a list: Scrapy's
    ``ValueError`` traceback, exit status 1, as ``scrapy crawl chem``, ``parse`` or
    ``fetch`` made its crawler. Now one line naming the class and the setting, exit
    status 2, nothing fetched (port 1 would refuse the connection anyway)."""
    out = tmp_path / "out"
    proc = scrapy(tmp_path, *command, "-s", f"FOCUSED_OUTPUT_DIR={out}", spiders=LISTED_PIPELINES)
    assert proc.returncode == 2, proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    assert proc.stderr.strip().splitlines()[-1] == (
        "focused: error: ChemSpider.custom_settings: ITEM_PIPELINES must be a dict of import"
        ' path -> order, e.g. {"myproject.pipelines.MyPipeline": 300}, got'
        " ['focused.pipelines.PageStorePipeline']"
    )
    assert not out.exists()
