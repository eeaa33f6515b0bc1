"""Scrapy settings a Scrapy user sets by habit: the crawl honours them or says, in one
WARNING line at start, that it ignores them and what it does instead (real sandbox
crawls: ``scrapy crawl focused`` and a ``CrawlerProcess`` script in a subprocess)."""

from __future__ import annotations

import json
import os
import re
import socket
import sqlite3
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from scrapy.settings import Settings

from focused import habits
from tests.crawling import PROJECT, run_crawl, sandbox_crawl_command
from tests.loopback import Answer, LoopbackServer

pytestmark = pytest.mark.integration

SHORT = ("CLOSESPIDER_ITEMCOUNT=5",)


def _warnings(log: str) -> list[str]:
    return [line for line in log.splitlines() if "WARNING: focused:" in line]


def _one(lines: list[str], start: str) -> str:
    found = [line for line in lines if f"WARNING: focused: {start}" in line]
    assert len(found) == 1, lines
    return found[0]


def test_scheduling_settings_the_focused_scheduler_ignores_are_each_one_warning(
    tmp_path: Path,
) -> None:
    crawl = run_crawl(
        tmp_path / "out",
        *SHORT,
        "DEPTH_PRIORITY=1",
        "SCHEDULER_MEMORY_QUEUE=scrapy.squeues.FifoMemoryQueue",
        "SCHEDULER_DISK_QUEUE=scrapy.squeues.PickleFifoDiskQueue",
        "SCHEDULER_PRIORITY_QUEUE=myproject.queues.MyPriorityQueue",  # never loaded
        "DUPEFILTER_CLASS=scrapy.dupefilters.BaseDupeFilter",
    )
    lines = _warnings(crawl.log)
    depth = _one(lines, "DEPTH_PRIORITY=1 is ignored")
    assert "FOCUSED_STRATEGY (annealing)" in depth and "FOCUSED_STRATEGY=bfs" in depth
    memory = _one(lines, "SCHEDULER_MEMORY_QUEUE=scrapy.squeues.FifoMemoryQueue is ignored")
    assert "FOCUSED_STRATEGY=bfs crawls breadth-first" in memory
    disk = _one(lines, "SCHEDULER_DISK_QUEUE=scrapy.squeues.PickleFifoDiskQueue is ignored")
    assert "JOBDIR/frontier.sqlite3" in disk
    _one(lines, "SCHEDULER_PRIORITY_QUEUE=myproject.queues.MyPriorityQueue is ignored")
    dupes = _one(lines, "DUPEFILTER_CLASS=scrapy.dupefilters.BaseDupeFilter is ignored")
    assert "dont_filter=True" in dupes
    assert len(lines) == 5, lines
    assert "'finish_reason': 'closespider_itemcount'" in crawl.log


def test_scrapy_defaults_and_the_project_settings_give_no_warning(tmp_path: Path) -> None:
    crawl = run_crawl(
        tmp_path / "out",
        *SHORT,
        "DEPTH_PRIORITY=0",
        "SCHEDULER_PRIORITY_QUEUE=scrapy.pqueues.DownloaderAwarePriorityQueue",  # Scrapy's
        "DUPEFILTER_CLASS=scrapy.dupefilters.RFPDupeFilter",
    )
    assert _warnings(crawl.log) == []


def test_scrapy_s_own_scheduler_is_named_with_what_the_crawl_loses(tmp_path: Path) -> None:
    crawl = run_crawl(
        tmp_path / "out",
        *SHORT,
        "SCHEDULER=scrapy.core.scheduler.Scheduler",
        "SCHEDULER_MEMORY_QUEUE=scrapy.squeues.FifoMemoryQueue",  # honoured by Scrapy's
    )
    lines = _warnings(crawl.log)
    line = _one(lines, "SCHEDULER=scrapy.core.scheduler.Scheduler is not")
    assert "the strategy annealing still sets each request's priority" in line
    assert "no annealing or host-aware pick" in line and "frontier journal" in line
    assert len(lines) == 1, lines  # Scrapy's scheduler does use its queue settings
    # the strategy still scores the links, and the crawl stores pages
    assert "'focused/links/scored'" in crawl.log and len(crawl.rows()) >= 5


def crawl_script(settings: dict[str, object], topic: str = '"chemistry"') -> str:
    """A ``CrawlerProcess`` script of one focused crawl of the sandbox into the folder
    given as its first argument, with ``settings`` more; ``topic``: a Python
    expression."""
    lines = "".join(f"        {k!r}: {v!r},\n" for k, v in settings.items())
    return f"""
import sys
from scrapy.crawler import CrawlerProcess
from scrapy.utils.project import get_project_settings

settings = get_project_settings()
settings.setdict(
    {{
        "FOCUSED_WEB": "sandbox",
        "FOCUSED_OUTPUT_DIR": sys.argv[1],
        "CLOSESPIDER_ITEMCOUNT": 3,
        "AUTOTHROTTLE_ENABLED": False,
{lines}    }},
    priority="cmdline",
)
process = CrawlerProcess(settings)
process.crawl("focused", topic={topic})
process.start()
"""


SCRIPT = crawl_script(
    {"DEPTH_PRIORITY": -1, "DUPEFILTER_CLASS": "scrapy.dupefilters.BaseDupeFilter"}
)


def test_a_crawler_process_script_gets_the_same_warnings(tmp_path: Path) -> None:
    script = tmp_path / "run.py"
    script.write_text(SCRIPT)
    result = subprocess.run(
        [sys.executable, str(script), str(tmp_path / "out")],
        cwd=PROJECT,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    lines = _warnings(result.stderr)
    _one(lines, "DEPTH_PRIORITY=-1 is ignored")
    _one(lines, "DUPEFILTER_CLASS=scrapy.dupefilters.BaseDupeFilter is ignored")


BARE_SCRIPT = """
import sys
from scrapy.crawler import CrawlerProcess
from focused.spiders.focused import FocusedSpider

process = CrawlerProcess({
    "FOCUSED_WEB": "sandbox",
    "FOCUSED_OUTPUT_DIR": sys.argv[1],
    "CLOSESPIDER_ITEMCOUNT": 3,
    "TELNETCONSOLE_ENABLED": False,
    "REMOTE_CONTROL_ENABLED": False,
})
process.crawl(FocusedSpider, topic="chemistry")
process.start()
"""


def test_a_script_without_the_project_settings_is_told_what_it_lacks(tmp_path: Path) -> None:
    """Scrapy's first script example, ``CrawlerProcess({...})`` without
    ``get_project_settings()``: the focused spider crawled with none of the project's
    components, silently: no page stored, the strategy unused, no report, internal
    addresses not refused. Now one WARNING for each, and one naming the cause."""
    script = tmp_path / "run.py"
    script.write_text(BARE_SCRIPT)
    result = subprocess.run(
        [sys.executable, str(script), str(tmp_path / "out")],
        cwd=PROJECT,
        env={**os.environ, "PYTHONPATH": str(PROJECT)},
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    lines = _warnings(result.stderr)
    _one(lines, "focused.pipelines.PageStorePipeline is not in ITEM_PIPELINES: no page is stored")
    _one(lines, "focused.middlewares.FocusedPriorityMiddleware is not in SPIDER_MIDDLEWARES")
    _one(lines, "focused.extensions.CrawlOutputExtension is not in EXTENSIONS")
    # the address filter's middlewares are added (test below), and Scrapy's resolver is
    # wrapped in the checking one (tests/test_internal_addresses.py)
    assert not [x for x in lines if "AddressFilterMiddleware is not in" in x]
    assert (
        "the reactor's resolver scrapy.resolver.CachingThreadedResolver is not"
        " focused.addressfilter.FocusedResolver: the addresses it gives are checked"
    ) in result.stderr
    hint = _one(lines, "the crawl runs without the project's settings")
    assert "get_project_settings()" in hint
    assert len(lines) == 4, lines


STATS_MW = "scrapy.downloadermiddlewares.stats.DownloaderStats"
FILTER_MW = "focused.addressfilter.AddressFilterMiddleware"


@pytest.mark.parametrize(
    ("given", "guarded"),
    [
        ({}, True),  # a script's CrawlerProcess({...}): added
        (
            {"DOWNLOADER_MIDDLEWARES": {"scrapy.downloadermiddlewares.stats.DownloaderStats": 1}},
            True,
        ),
        # named, even as None (turned off on purpose): left as it is
        (
            {"DOWNLOADER_MIDDLEWARES": {"focused.addressfilter.AddressFilterMiddleware": None}},
            False,
        ),
    ],
)
def test_the_focused_spider_brings_the_address_filter_where_the_settings_lack_it(
    given: dict[str, object], guarded: bool
) -> None:
    """Without the project's settings the focused spider crawled with no address filter:
    a link or a redirect to 10.0.0.1 or 169.254.169.254 was fetched. Now its class adds
    the filter's middlewares when the settings name none of them; a request to an
    internal address is refused before anything is sent (no connection is made here)."""
    from scrapy import Request
    from scrapy.core.downloader.middleware import DownloaderMiddlewareManager
    from scrapy.exceptions import IgnoreRequest
    from scrapy.utils.test import get_crawler

    from focused.addressfilter import AddressFilterMiddleware
    from focused.spiders.focused import FocusedSpider

    crawler = get_crawler(FocusedSpider, {"FOCUSED_WEB": "sandbox", **given})
    manager = DownloaderMiddlewareManager.from_crawler(crawler)
    found = [m for m in manager.middlewares if isinstance(m, AddressFilterMiddleware)]
    assert bool(found) is guarded
    if guarded:
        for url in ("http://10.0.0.1/", "http://169.254.169.254/latest/meta-data/"):
            with pytest.raises(IgnoreRequest):
                found[0].process_request(Request(url))


TWO_TOPICS = crawl_script({"FOCUSED_SANDBOX_PAGES": 200}, topic="sys.argv[2]")


def test_a_script_cannot_mix_two_topics_in_one_output_folder(tmp_path: Path) -> None:
    """A crawl started from a ``CrawlerProcess`` script goes through no command, so the
    spider checks its output folder itself: a second topic into a folder of stored
    pages is refused with the command's line, and nothing of it is stored."""
    script, out = tmp_path / "run.py", tmp_path / "out"
    script.write_text(TWO_TOPICS)

    def crawl(topic: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, str(script), str(out), topic],
            cwd=PROJECT,
            capture_output=True,
            text=True,
            timeout=180,
        )

    first = crawl("chemistry")
    assert first.returncode == 0, first.stderr[-3000:]
    from focused.output.record import read_record, stored_count

    pages = stored_count(out)
    assert pages >= 3
    second = crawl("physics")
    assert second.returncode == 2, second.stderr[-3000:]
    assert "Traceback" not in second.stderr, second.stderr[-3000:]
    assert f"{out} holds a crawl of topic chemistry with strategy" in second.stderr
    assert stored_count(out) == pages
    record = read_record(out)
    assert record is not None and record["topic"] == "chemistry"


def test_a_class_given_as_an_object_or_another_path_to_the_same_class() -> None:
    from scrapy.squeues import FifoMemoryQueue, LifoMemoryQueue

    settings = Settings()
    settings.setmodule("focused.settings", priority="project")
    assert habits.ignored_by_scheduler(settings) == []
    settings.set("SCHEDULER_MEMORY_QUEUE", LifoMemoryQueue)  # Scrapy's default, as a class
    assert habits.ignored_by_scheduler(settings) == []
    settings.set("SCHEDULER_MEMORY_QUEUE", FifoMemoryQueue)
    assert habits.ignored_by_scheduler(settings)[0].startswith(
        "SCHEDULER_MEMORY_QUEUE=scrapy.squeues.FifoMemoryQueue is ignored"
    )
    # the focused scheduler, or a subclass of it (the Redis one), is no other scheduler
    for scheduler in (habits.SCHEDULER_PATH, "focused.distributed.scheduler.RedisScheduler"):
        settings.set("SCHEDULER", scheduler)
        assert habits.other_scheduler(settings, "bfs") is None


@pytest.mark.parametrize("debug", [False, True])
def test_dupefilter_debug_logs_every_filtered_duplicate_as_scrapy_does(
    tmp_path: Path, debug: bool
) -> None:
    """``DUPEFILTER_DEBUG``: Scrapy's duplicate filter logs the first filtered request
    only, or every one with the setting on. The focused scheduler drops duplicates in
    three places (a link to a page done, to a URL that waits at least as high, and in
    its own enqueue); each drop is one line with the setting, as many as the stats
    count, with the page that linked it."""
    crawl = run_crawl(
        tmp_path / "out",
        "CLOSESPIDER_ITEMCOUNT=30",
        "LOG_LEVEL=DEBUG",
        f"DUPEFILTER_DEBUG={debug}",
    )
    lines = [x for x in crawl.log.splitlines() if "Filtered duplicate request: <GET " in x]
    filtered = json.loads((tmp_path / "out" / "stats.json").read_text())[
        "focused/dupefilter/filtered"
    ]
    assert filtered > 30  # the sandbox's pages link each other
    if debug:
        assert len(lines) == filtered
        assert all("(referer: http://127.0.0.1:" in x for x in lines), lines[:3]
        assert not any("no more duplicates" in x for x in lines)
    else:
        assert len(lines) == 1
        assert "no more duplicates will be shown (see DUPEFILTER_DEBUG" in lines[0]


# --- what a Scrapy user types by habit: feed URIs, close conditions, size limits ------
def test_a_feed_uri_may_name_the_topic_and_the_strategy(tmp_path: Path) -> None:
    """``%(name)s`` in a feed URI is any spider attribute (Scrapy's feed URI parameters):
    ``%(topic)s`` and ``%(strategy)s`` are the topic's and the strategy's names (they
    were the objects' ``repr``: a path with the topic's seed URLs in it, a
    ``FileNotFoundError`` traceback per item, exit status 1)."""
    uri = str(tmp_path / "feeds" / "%(topic)s-%(strategy)s.jl")
    crawl = run_crawl(
        tmp_path / "out",
        "CLOSESPIDER_PAGECOUNT=10",
        "FOCUSED_STRATEGY=bfs",
        "FEEDS=" + json.dumps({uri: {"format": "jsonlines"}}),
    )
    assert [p.name for p in (tmp_path / "feeds").iterdir()] == ["chemistry-bfs.jl"]
    lines = (tmp_path / "feeds" / "chemistry-bfs.jl").read_text().splitlines()
    assert sorted(json.loads(x)["url"] for x in lines) == sorted(r["url"] for r in crawl.rows())


def test_downloads_cut_by_download_maxsize_leave_no_traceback_in_the_log(tmp_path: Path) -> None:
    """A download over ``DOWNLOAD_MAXSIZE`` is cancelled: the client resets the
    connection, and the embedded sandbox server printed a ``ConnectionResetError``
    traceback into the crawl's output for each one."""
    crawl = run_crawl(
        tmp_path / "out", "CLOSESPIDER_PAGECOUNT=20", "DOWNLOAD_MAXSIZE=2500", check=False
    )
    assert "sent more than DOWNLOAD_MAXSIZE" in crawl.log  # some pages were cut
    assert "Traceback" not in crawl.log and "Exception occurred" not in crawl.log, crawl.log
    assert crawl.returncode == 0 and crawl.rows()  # the others were stored


#: a crawl whose pages wait for a batch commit that no count or time bound brings
#: within the test (1000 pages, 1000 s), at about 20 pages a second
BATCHED = (
    "FOCUSED_STORE_COMMIT_EVERY=1000",
    "FOCUSED_STORE_COMMIT_SECONDS=1000",
    "DOWNLOAD_DELAY=0.05",
    "DOWNLOAD_DELAY_JITTER=0",
    "CLOSESPIDER_PAGECOUNT=40",
    "CLOSESPIDER_TIMEOUT=60",
)


@pytest.mark.parametrize(
    "setting", ["CLOSESPIDER_TIMEOUT_NO_ITEM=2", "CLOSESPIDER_PAGECOUNT_NO_ITEM=10"]
)
def test_no_item_close_conditions_do_not_stop_a_crawl_whose_items_wait_for_a_commit(
    tmp_path: Path, setting: str
) -> None:
    """Scrapy closes the spider when no item was scraped for N seconds or N pages. With
    batched commits an item goes on only once its page is committed, so a crawl storing
    pages all along was closed as if it produced nothing (``closespider_timeout_no_item``
    after 2 s, ``closespider_pagecount_no_item`` after 10 pages). The batch now commits
    within half of either bound."""
    crawl = run_crawl(tmp_path / "out", *BATCHED, setting)
    stats = json.loads((tmp_path / "out" / "stats.json").read_text())
    assert stats["finish_reason"] == "closespider_pagecount", stats["finish_reason"]
    assert stats["item_scraped_count"] == len(crawl.rows()) >= 39


def _a_404_that_links_on(path: str) -> Answer:
    if path == "/robots.txt":
        return 404, {}, b""
    if path == "/gone.html":  # a 404 page with content and a link
        return 404, {}, b'<title>chemistry gone</title>acid <a href="/after.html">chemistry</a>'
    if path == "/after.html":  # not an exact copy of the home page (its own title)
        return 200, {}, b'<title>chemistry after</title>acid <a href="/gone.html">acid</a>'
    return 200, {}, b'<title>chemistry</title>acid <a href="/gone.html">chemistry acid</a>'


@pytest.mark.parametrize("codes", ["404", "404,410"])
def test_httperror_allowed_codes_from_the_command_line_lets_those_pages_through(
    tmp_path: Path, codes: str
) -> None:
    """``-s HTTPERROR_ALLOWED_CODES=404`` is text; Scrapy's ``HttpErrorMiddleware``
    compared each status with ``"404"`` and let no 404 through, silently ("Ignoring
    response <404 ...>"). The project's add-on makes the codes numbers."""
    server = LoopbackServer("127.0.0.1", _a_404_that_links_on)
    try:
        crawl = run_crawl(
            tmp_path / "out",
            "FOCUSED_WEB=real",
            f"FOCUSED_SEEDS={server.url}/",
            "FOCUSED_STRATEGY=bfs",
            f"HTTPERROR_ALLOWED_CODES={codes}",
        )
    finally:
        server.close()
    assert "Ignoring response <404" not in crawl.log
    stored = {r["url"].removeprefix(server.url): r["status"] for r in crawl.rows()}
    assert stored == {"/": 200, "/gone.html": 404, "/after.html": 200}


BAD_SETTING = crawl_script({"FOCUSED_STORE_COMMIT_EVERY": "abc"})
BARE_BAD_SETTING = BARE_SCRIPT.replace(
    '"CLOSESPIDER_ITEMCOUNT": 3,', '"CLOSESPIDER_ITEMCOUNT": 3, "FOCUSED_STRATEGY": "dfs",'
)


@pytest.mark.parametrize(
    ("script", "says"),
    [
        (BAD_SETTING, "FOCUSED_STORE_COMMIT_EVERY must be an integer, got 'abc'"),
        (BARE_BAD_SETTING, "unknown FOCUSED_STRATEGY 'dfs'"),
        (crawl_script({}, topic='"chemstry"'), "unknown topic 'chemstry'; did you mean"),
        (
            crawl_script({}).replace('topic="chemistry"', 'topc="chemistry"'),
            "unknown spider argument -a topc=chemistry",
        ),
    ],
    ids=["project-settings", "bare", "topic", "argument"],
)
def test_a_script_with_a_bad_setting_stops_with_one_line_and_status_2(
    tmp_path: Path, script: str, says: str
) -> None:
    """A ``CrawlerProcess`` script whose settings hold a bad ``FOCUSED_*`` setting, or
    whose ``process.crawl`` names an unknown topic or argument: the spider's
    ``ConfigError`` (``TopicError``) was Twisted's "Unhandled error in Deferred"
    traceback, and the script ended with status 0. Now the crawl command's line and
    status 2, nothing written."""
    path, out = tmp_path / "run.py", tmp_path / "out"
    path.write_text(script)
    result = subprocess.run(
        [sys.executable, str(path), str(out)],
        cwd=PROJECT,
        env={**os.environ, "PYTHONPATH": str(PROJECT)},
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert result.returncode == 2, result.stderr[-3000:]
    assert "Traceback" not in result.stderr, result.stderr[-3000:]
    errors = [x for x in result.stderr.splitlines() if x.startswith("focused: error:")]
    assert len(errors) == 1 and says in errors[0], result.stderr[-3000:]
    assert not out.exists()


CHEM_SPIDER = """
from focused.spiders.focused import FocusedSpider


class ChemSpider(FocusedSpider):
    name = "chem"
    topic = "chemistry"
"""


@pytest.mark.parametrize(
    ("given", "says"),
    [
        (("-s", "FOCUSED_STRATEGY=dfs"), "unknown FOCUSED_STRATEGY 'dfs'"),
        (("-a", "topic=nosuch"), "unknown topic 'nosuch'"),
    ],
    ids=["setting", "topic"],
)
def test_scrapy_runspider_outside_the_project_refuses_a_bad_setting_in_one_line(
    tmp_path: Path, given: tuple[str, ...], says: str
) -> None:
    """``scrapy runspider chem.py`` outside the project (Scrapy's own command, the
    project importable): a bad setting or topic was the spider's ``ConfigError`` or
    ``TopicError`` traceback ("Task exception was never retrieved"), exit status 1."""
    spider, out = tmp_path / "chem.py", tmp_path / "out"
    spider.write_text(CHEM_SPIDER)
    result = subprocess.run(
        [sys.executable, "-m", "scrapy", "runspider", str(spider), *given]
        + ["-s", f"FOCUSED_OUTPUT_DIR={out}"],
        cwd=tmp_path,
        env={
            **{k: v for k, v in os.environ.items() if not k.startswith("SCRAPY_")},
            "PYTHONPATH": str(PROJECT),
        },
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert result.returncode == 2, result.stderr[-3000:]
    assert "Traceback" not in result.stderr, result.stderr[-3000:]
    assert result.stderr.strip().splitlines()[-1].startswith(f"focused: error: {says}"), (
        result.stderr[-3000:]
    )
    assert not out.exists()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _cache_hits(log: str) -> int:
    found = re.search(r"'httpcache/hit': (\d+)", log)
    return int(found.group(1)) if found else 0


def test_the_http_cache_of_one_sandbox_is_not_replayed_for_another_on_the_same_port(
    tmp_path: Path,
) -> None:
    """``HTTPCACHE_ENABLED`` with a fixed ``FOCUSED_SANDBOX_PORT``: the sandbox's URLs are
    the same for every sandbox, so a crawl of another sandbox (other pages and seed) got
    the cached pages of the first one (36 of 50 responses from the cache, the first
    sandbox's pages stored). Now each sandbox has its own cache: the other sandbox's
    crawl fetches its own pages, and the first sandbox crawled again replays its cache."""
    cache, port = tmp_path / "cache", _free_port()
    common = (
        f"FOCUSED_SANDBOX_PORT={port}",
        "HTTPCACHE_ENABLED=True",
        f"HTTPCACHE_DIR={cache}",
        "CLOSESPIDER_ITEMCOUNT=15",
        "FOCUSED_STRATEGY=bfs",
    )
    first = run_crawl(tmp_path / "a", *common, "FOCUSED_SANDBOX_PAGES=100")
    other = run_crawl(
        tmp_path / "b", *common, "FOCUSED_SANDBOX_PAGES=300", "FOCUSED_SANDBOX_SEED=8"
    )
    assert _cache_hits(other.log) == 0, other.log[-3000:]
    from focused.defaults import DEFAULTS
    from focused.web.sandbox.generator import generate_site

    site = generate_site(seed=8, pages=300, mode="normal")
    for row in other.rows():
        path = urlsplit(row["url"]).path
        assert site.titles[path] == row["title"], path
    again = run_crawl(tmp_path / "c", *common, "FOCUSED_SANDBOX_PAGES=100")
    assert _cache_hits(again.log) > 0, again.log[-3000:]
    # the first sandbox's pages both times (the order of a crawl at 16 in flight varies)
    own = generate_site(seed=DEFAULTS["FOCUSED_SANDBOX_SEED"], pages=100, mode="normal")
    for crawl in (first, again):
        for row in crawl.rows():
            assert own.titles[urlsplit(row["url"]).path] == row["title"], row["url"]


STORE_ONLY = 'ITEM_PIPELINES={"focused.pipelines.PageStorePipeline": 300}'


def test_a_crawl_without_the_metrics_pipeline_still_records_which_crawl_its_pages_are(
    tmp_path: Path,
) -> None:
    """``crawl.json`` was written by the ``MetricsPipeline`` alone: a crawl whose
    ``ITEM_PIPELINES`` left it out stored pages under no record, and a continuation
    (``FOCUSED_CONTINUE``) of another topic and strategy left the record of the first
    crawl over its own pages, so its resume with its own ``JOBDIR`` was refused as "a
    crawl of topic chemistry". The page store writes the record now."""
    from focused.output.record import read_record

    out, job = tmp_path / "out", tmp_path / "job"
    run_crawl(out, *SHORT, STORE_ONLY)
    record = read_record(out)
    assert record is not None and record["topic"] == "chemistry", record
    assert record["strategy"] == "annealing" and record["web"] == "sandbox"
    added = run_crawl(
        out,
        *SHORT,
        STORE_ONLY,
        "FOCUSED_CONTINUE=True",
        "FOCUSED_STRATEGY=bfs",
        f"JOBDIR={job}",
        topic="physics",
    )
    assert "already holds" in added.log
    record = read_record(out)
    assert record is not None and (record["topic"], record["strategy"]) == ("physics", "bfs")
    # the physics crawl resumes with its JOBDIR; another chemistry crawl is refused
    run_crawl(out, *SHORT, "FOCUSED_STRATEGY=bfs", f"JOBDIR={job}", topic="physics")
    refused = run_crawl(out, *SHORT, topic="chemistry", check=False)
    assert refused.returncode == 2
    assert f"{out} holds a crawl of topic physics with strategy bfs" in refused.log


LISTED_PIPELINES = (
    CHEM_SPIDER
    + '    custom_settings = {"ITEM_PIPELINES": ["focused.pipelines.PageStorePipeline"]}\n'
)


@pytest.mark.parametrize("where", ["project", "outside"])
def test_custom_settings_with_a_list_for_a_dict_setting_is_one_line(
    tmp_path: Path, where: str
) -> None:
    """A subclass whose ``custom_settings`` give ``ITEM_PIPELINES`` as a list (as older
    Scrapy took it): Scrapy's ``ValueError: too many values to unpack`` traceback, exit
    status 1, from ``scrapy runspider`` in the project and outside it. Now one line
    naming the class and the setting, exit status 2, nothing written."""
    spider, out = tmp_path / "chem.py", tmp_path / "out"
    spider.write_text(LISTED_PIPELINES)
    result = subprocess.run(
        [sys.executable, "-m", "scrapy", "runspider", str(spider)]
        + ["-s", "FOCUSED_WEB=sandbox", "-s", f"FOCUSED_OUTPUT_DIR={out}"],
        cwd=PROJECT if where == "project" else tmp_path,
        env={
            **{k: v for k, v in os.environ.items() if not k.startswith("SCRAPY_")},
            "PYTHONPATH": str(PROJECT),
        },
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert result.returncode == 2, result.stderr[-3000:]
    assert "Traceback" not in result.stderr, result.stderr[-3000:]
    assert result.stderr.strip().splitlines()[-1] == (
        "focused: error: ChemSpider.custom_settings: ITEM_PIPELINES must be a dict of import"
        ' path -> order, e.g. {"myproject.pipelines.MyPipeline": 300}, got'
        " ['focused.pipelines.PageStorePipeline']"
    )
    assert not out.exists()


def _run_script(path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(path), *args],
        cwd=PROJECT,
        env={**os.environ, "PYTHONPATH": str(PROJECT)},
        capture_output=True,
        text=True,
        timeout=180,
    )


@pytest.mark.parametrize("process", ["CrawlerProcess", "AsyncCrawlerProcess"])
def test_a_script_whose_sandbox_port_is_taken_stops_with_one_line_and_status_2(
    tmp_path: Path, process: str
) -> None:
    """A ``CrawlerProcess`` script whose crawl cannot open its web as the spider is made
    (the sandbox's port taken): Twisted's "Unhandled error in Deferred" traceback (for
    ``AsyncCrawlerProcess``, asyncio's "Task exception was never retrieved"), and the
    script ended with status 0. Now the crawl command's line and status 2 once
    ``process.start()`` returns, nothing fetched."""
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        script = crawl_script({"FOCUSED_SANDBOX_PORT": port, "FOCUSED_SANDBOX_PAGES": 60})
        script = script.replace("CrawlerProcess(settings)", f"{process}(settings)")
        script = script.replace("import CrawlerProcess", f"import {process}")
        path = tmp_path / "run.py"
        path.write_text(script + "print('the script goes on')\n")
        result = _run_script(path, str(tmp_path / "out"))
    assert result.returncode == 2, result.stderr[-3000:]
    assert "Traceback" not in result.stderr, result.stderr[-3000:]
    assert "the script goes on" not in result.stdout
    errors = [x for x in result.stderr.splitlines() if x.startswith("focused: error:")]
    assert len(errors) == 1, result.stderr[-3000:]
    assert f"cannot serve the sandbox on port {port}" in errors[0]
    assert "choose another -s FOCUSED_SANDBOX_PORT" in errors[0]
    assert "Spider opened" not in result.stderr


def test_a_script_whose_crawl_fetches_nothing_ends_with_one_line_and_status_1(
    tmp_path: Path,
) -> None:
    """A script's crawl of the real web whose seed refuses the connection (a closed
    loopback port): the crawl ended "finished" with 0 pages and the script with status
    0, not a word. Now ``scrapy crawl``'s line, ``no page could be fetched from the real
    web (... refused the connection)``, and status 1; a script that wants to go on reads
    the outcome in ``crawler.stats`` and catches ``SystemExit``."""
    port = _free_port()
    script = crawl_script(
        {"FOCUSED_WEB": "real", "FOCUSED_SEEDS": f"http://127.0.0.2:{port}/"}
    ).replace(
        "process.start()",
        "crawler = next(iter(process.crawlers))\n"
        "try:\n    process.start()\n"
        "except SystemExit as exc:\n"
        "    print('status', exc.code, crawler.stats.get_value('finish_reason'))\n"
        "    raise\n",
    )
    path = tmp_path / "run.py"
    path.write_text(script)
    result = _run_script(path, str(tmp_path / "out"))
    assert result.returncode == 1, result.stderr[-3000:]
    assert "Traceback" not in result.stderr, result.stderr[-3000:]
    errors = [x for x in result.stderr.splitlines() if "focused: error:" in x]
    assert len(errors) == 1, result.stderr[-3000:]
    assert errors[0].startswith("focused: error: no page could be fetched from the real web")
    assert "refused the connection" in errors[0]
    assert "status 1 finished" in result.stdout


def test_a_script_whose_log_file_cannot_be_made_stops_with_one_line_and_status_2(
    tmp_path: Path,
) -> None:
    """A ``CrawlerProcess`` script with ``LOG_FILE`` in a folder that does not exist:
    the ``FileNotFoundError`` traceback of Scrapy's ``configure_logging`` as the process
    was made, exit 1. Now the crawl command's line and status 2, nothing written."""
    log = tmp_path / "logs" / "crawl.log"
    path = tmp_path / "run.py"
    path.write_text(crawl_script({"LOG_FILE": str(log)}) + "print('the script goes on')\n")
    out = tmp_path / "out"
    result = _run_script(path, str(out))
    assert result.returncode == 2, result.stderr[-3000:]
    assert result.stderr.splitlines() == [
        f"focused: error: LOG_FILE '{log}' cannot be written: No such file or directory"
    ]
    assert "the script goes on" not in result.stdout
    assert not out.exists() and not log.parent.exists()


def test_a_script_whose_feed_fails_at_its_last_write_ends_with_status_1(
    tmp_path: Path,
) -> None:
    """A script's crawl with two feeds, one of which fails as it is finished at the
    close (its last write on a full disk): the line was logged, but the script ended
    with status 0, where ``scrapy crawl`` gives 1. Now ``process.start()`` ends it
    with status 1; the other feed is whole."""
    good, bad = tmp_path / "good.json", tmp_path / "bad.jsonl"
    script = crawl_script(
        {
            "FEED_EXPORTERS": {"failing": "tests.failing_exporter.CloseFailingExporter"},
            "FEEDS": {str(good): {"format": "json"}, str(bad): {"format": "failing"}},
        }
    )
    path = tmp_path / "run.py"
    path.write_text(script + "print('the script goes on')\n")
    result = _run_script(path, str(tmp_path / "out"))
    assert result.returncode == 1, result.stderr[-3000:]
    assert "Traceback" not in result.stderr, result.stderr[-3000:]
    assert "the script goes on" not in result.stdout
    errors = [x for x in result.stderr.splitlines() if "ERROR: focused: error:" in x]
    assert len(errors) == 1, result.stderr[-3000:]
    assert f"cannot finish the feed in {bad}: [Errno 28] No space left on device" in errors[0]
    con = sqlite3.connect(tmp_path / "out" / "pages.sqlite3")
    try:
        stored = sorted(url for (url,) in con.execute("SELECT url FROM pages"))
    finally:
        con.close()
    assert len(stored) >= 3
    assert sorted(item["url"] for item in json.loads(good.read_text())) == stored


def test_a_setting_given_as_a_scrapy_environment_variable_is_named_as_ignored(
    tmp_path: Path,
) -> None:
    """``SCRAPY_FOCUSED_STRATEGY=bfs scrapy crawl focused ...`` (Scrapy took a setting
    from a ``SCRAPY_*`` variable until 2.8): the crawl ran the default strategy without
    a word. It still does (Scrapy reads none), and one WARNING line names the variable
    and the ``-s`` to use; a variable Scrapy still reads gives none."""
    out = tmp_path / "out"
    env = {k: v for k, v in os.environ.items() if not k.startswith("SCRAPY_")}
    env.update(SCRAPY_FOCUSED_STRATEGY="bfs", SCRAPY_PROJECT="default")
    result = subprocess.run(
        sandbox_crawl_command(out, *SHORT),
        cwd=PROJECT,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    lines = _warnings(result.stderr)
    assert [x.split("WARNING: ", 1)[1] for x in lines] == [
        "focused: the environment variable SCRAPY_FOCUSED_STRATEGY is ignored: Scrapy reads"
        " no setting from SCRAPY_* variables (since Scrapy 2.8); use -s"
        " FOCUSED_STRATEGY=... (or settings.py)"
    ]
    assert json.loads((out / "crawl.json").read_text())["strategy"] == "annealing"


def test_a_feed_field_the_items_do_not_have_is_one_warning(tmp_path: Path) -> None:
    """``-s FEED_EXPORT_FIELDS=url,titel`` (a typo): every row of the CSV had an empty
    ``titel`` column and no title, without a word. Now one WARNING line per such field
    (a feed's own ``fields`` option too), with the closest field; the feed as asked."""
    feeds = {str(tmp_path / "b.csv"): {"format": "csv", "fields": ["url", "depht"]}}
    crawl = run_crawl(
        tmp_path / "out",
        *SHORT,
        f"FEEDS={json.dumps(feeds)}",
        "FEED_EXPORT_FIELDS=url,titel",
        check=False,
    )
    assert crawl.returncode == 0, crawl.log[-3000:]
    lines = [x.split("WARNING: focused: ", 1)[1] for x in _warnings(crawl.log)]
    assert lines == [
        "FEED_EXPORT_FIELDS names 'titel', which the focused spider's items do not have"
        " (did you mean title?): every item is exported without it (an empty CSV column)",
        f"the fields option of the feed {tmp_path / 'b.csv'} names 'depht', which the"
        " focused spider's items do not have (did you mean depth?): every item is exported"
        " without it (an empty CSV column)",
    ]
    assert (tmp_path / "b.csv").read_text().splitlines()[0] == "url,depht"
