"""``scrapy crawl focused`` refuses bad input with one line and fetches nothing.

Each case runs the real command in a subprocess from the project root (about 1.5 s).
"""

from __future__ import annotations

import importlib.util
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.crawling import error_line, run_cli, run_scrapy
from tests.loopback import LoopbackServer

MakeTopic = Callable[..., Path]
#: a crawl that gets past the checks stays small and off the real web
SMALL_SANDBOX = ("-s", "FOCUSED_WEB=sandbox", "-s", "CLOSESPIDER_PAGECOUNT=5")
VALID_NAMES = ("annealing", "best_first", "bfs", "bsbs", "gao", "genetic")


crawl = run_cli


def the_error(result: subprocess.CompletedProcess[str], out: Path) -> str:
    """The single ``focused: error:`` line, after checking that nothing was crawled."""
    line = error_line(result)
    assert "Crawled (" not in result.stdout + result.stderr
    assert not out.exists()  # not even the output folder was made
    return line


@pytest.fixture
def out(tmp_path: Path) -> Path:
    return tmp_path / "out"


def test_unknown_topic(project_root: Path, venv_scrapy: list[str], out: Path) -> None:
    result = crawl(project_root, venv_scrapy, out, "-a", "topic=nosuch")
    line = the_error(result, out)
    assert "'nosuch'" in line
    assert "available topics:" in line and "chemistry" in line


def test_no_topic(project_root: Path, venv_scrapy: list[str], out: Path) -> None:
    line = the_error(crawl(project_root, venv_scrapy, out), out)
    assert "topic=" in line
    # like the unknown-topic error, it says which topics there are
    assert "available topics:" in line
    assert all(name in line for name in ("chemistry", "physics", "mathematics", "music"))


def test_a_topic_file_in_gbk(project_root: Path, venv_scrapy: list[str], out: Path) -> None:
    """A topic file of one's own saved in GBK (a Chinese Windows editor's default):
    ``... cannot read: 'utf-8' codec can't decode byte 0xbb in position 53: invalid start
    byte``, no line, nothing to do. Now where, and how to save it."""
    path = out.parent / "mine.toml"
    text = 'seeds = ["http://127.0.0.1:1/"]\n[keywords]\nacid = 1\n"化学" = 5\n'
    path.write_bytes(text.encode("gbk"))
    line = the_error(crawl(project_root, venv_scrapy, out, "-a", f"topic={path}"), out)
    assert line == (
        f"focused: error: topic file {path} is not UTF-8 text (byte 0xbb on line 4): a TOML"
        " file is UTF-8; save it as UTF-8 (iconv -f GBK -t UTF-8 for a file in GBK)"
    )


def test_broken_topic_file(
    project_root: Path, venv_scrapy: list[str], out: Path, tmp_topic: MakeTopic
) -> None:
    path = tmp_topic('seeds = ["http://127.0.0.1:1/"]\n[keywords\nacid = 1\n', name="broken")
    line = the_error(crawl(project_root, venv_scrapy, out, "-a", f"topic={path}"), out)
    assert str(path) in line and "syntax" in line.lower()


def test_missing_topic_file(
    project_root: Path, venv_scrapy: list[str], out: Path, tmp_path: Path
) -> None:
    path = tmp_path / "absent.toml"
    line = the_error(crawl(project_root, venv_scrapy, out, "-a", f"topic={path}"), out)
    assert str(path) in line


def test_unknown_strategy(project_root: Path, venv_scrapy: list[str], out: Path) -> None:
    result = crawl(
        project_root, venv_scrapy, out, "-a", "topic=chemistry", "-s", "FOCUSED_STRATEGY=dfs"
    )
    line = the_error(result, out)
    assert "'dfs'" in line
    assert all(name in line for name in VALID_NAMES)


@pytest.mark.parametrize(("given", "meant"), [("BFS", "bfs"), ("Best-First", "best_first")])
def test_a_strategy_in_another_case_is_named(
    project_root: Path, venv_scrapy: list[str], out: Path, given: str, meant: str
) -> None:
    """``-s FOCUSED_STRATEGY=BFS`` (as papers write it): refused among the valid names,
    which the user had to read through. Now the line says the name to give."""
    args = ("-a", "topic=chemistry", "-s", f"FOCUSED_STRATEGY={given}")
    line = the_error(crawl(project_root, venv_scrapy, out, *args), out)
    assert line.startswith(f"focused: error: unknown FOCUSED_STRATEGY '{given}' (say '{meant}');")


@pytest.mark.parametrize("ratio", ["1.5", "abc"])
def test_bad_ratio(project_root: Path, venv_scrapy: list[str], out: Path, ratio: str) -> None:
    result = crawl(
        project_root,
        venv_scrapy,
        out,
        "-a",
        "topic=chemistry",
        "-s",
        f"FOCUSED_GENETIC_RATIO={ratio}",
    )
    assert "FOCUSED_GENETIC_RATIO" in the_error(result, out)


def test_non_http_seed(project_root: Path, venv_scrapy: list[str], out: Path) -> None:
    result = crawl(
        project_root,
        venv_scrapy,
        out,
        "-a",
        "topic=chemistry",
        "-s",
        "FOCUSED_SEEDS=http://ok.example/,ftp://example.org/pub",
    )
    line = the_error(result, out)
    assert "FOCUSED_SEEDS" in line and "ftp://example.org/pub" in line


def test_non_http_seed_in_topic_file(
    project_root: Path, venv_scrapy: list[str], out: Path, tmp_topic: MakeTopic
) -> None:
    path = tmp_topic('seeds = ["javascript:alert(1)"]\n[keywords]\nacid = 1\n', name="js")
    line = the_error(crawl(project_root, venv_scrapy, out, "-a", f"topic={path}"), out)
    assert "javascript:alert(1)" in line


@pytest.mark.parametrize(
    ("setting", "says"),
    [
        ("FOCUSED_STORE_COMMIT_EVERY=abc", "must be an integer, got 'abc'"),
        ("FOCUSED_METRICS_LOG_EVERY=ten", "must be an integer, got 'ten'"),
        ("FOCUSED_STORE_FSYNC=maybe", "must be true or false, got 'maybe'"),
        ("FOCUSED_STORE_THREAD=yes", "must be true or false, got 'yes'"),
        ("FOCUSED_SANDBOX_SEED=abc", "must be an integer, got 'abc'"),
        ("FOCUSED_SANDBOX_MODE=evil", "must be one of normal, hostile, got 'evil'"),
        # the generator's least number of pages (it was a traceback from the generator)
        ("FOCUSED_SANDBOX_PAGES=20", "must be in [60, 10000000), got 20"),
        ("FOCUSED_SEEDS=http://[::1", "'http://[::1' is not a valid URL"),
        ("FOCUSED_SEEDS=http://127.0.0.1:99999/", "Port out of range"),
        ("FOCUSED_ALLOWED_DOMAINS=127.0.0.1:8000", "(say '127.0.0.1')"),
        # split at its commas, it was a seed '["http://127.0.0.1:1/"' refused as not http(s)
        ('FOCUSED_SEEDS=["http://127.0.0.1:1/", "http://127.0.0.1:2/"]', "not a JSON or Python"),
        ("FOCUSED_SESSION_PARAMS=sid=", "must be query parameter names"),
    ],
)
def test_bad_setting_of_a_sandbox_crawl(
    project_root: Path, venv_scrapy: list[str], out: Path, setting: str, says: str
) -> None:
    """Each gave a traceback (or, for a seed's port, two tracebacks and exit status 0;
    for a port in a domain, a crawl that filtered every seed)."""
    result = crawl(
        project_root,
        venv_scrapy,
        out,
        "-a",
        "topic=chemistry",
        "-s",
        "FOCUSED_WEB=sandbox",
        "-s",
        setting,
    )
    line = the_error(result, out)
    assert setting.split("=")[0] in line and says in line, line


def test_topic_of_punctuation_only(
    project_root: Path, venv_scrapy: list[str], out: Path, tmp_topic: MakeTopic
) -> None:
    path = tmp_topic('seeds = ["http://127.0.0.1:1/"]\n[keywords]\n"!!!" = 1\n', name="bang")
    result = crawl(
        project_root, venv_scrapy, out, "-a", f"topic={path}", "-s", "FOCUSED_WEB=sandbox"
    )
    line = the_error(result, out)
    assert "'!!!'" in line and "tokenised" in line


def test_a_jobdir_that_cannot_be_made(
    project_root: Path, venv_scrapy: list[str], out: Path, tmp_path: Path
) -> None:
    """A JOBDIR under a file: one line, before the sandbox writes its port there (it was
    an ``OSError`` traceback from the sandbox, exit status 1)."""
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    job = blocker / "job"
    result = crawl(
        project_root,
        venv_scrapy,
        out,
        "-a",
        "topic=chemistry",
        "-s",
        "FOCUSED_WEB=sandbox",
        "-s",
        f"JOBDIR={job}",
    )
    line = the_error(result, out)
    assert line.startswith(f"focused: error: JOBDIR {str(job)!r} cannot be created: [Errno 20]")


@pytest.mark.parametrize("blank", [" ", "\t "])
def test_a_blank_jobdir(project_root: Path, venv_scrapy: list[str], out: Path, blank: str) -> None:
    """A JOBDIR of blanks: one line, as for a blank FOCUSED_OUTPUT_DIR (Scrapy made a
    folder named by the blanks in the current folder and crawled)."""
    result = crawl(project_root, venv_scrapy, out, "-a", "topic=chemistry", "-s", f"JOBDIR={blank}")
    line = the_error(result, out)
    assert line.startswith(f"focused: error: JOBDIR is blank ({blank!r}); name the folder")
    assert not (project_root / blank).exists()


@pytest.mark.parametrize("name", ["FOCUSED_OUTPUT_DIR", "JOBDIR"])
def test_a_folder_setting_that_begins_with_a_tilde(
    project_root: Path, venv_scrapy: list[str], tmp_path: Path, name: str
) -> None:
    """``FOCUSED_OUTPUT_DIR = "~/crawls/chem"`` in settings.py (or ``JOBDIR``, a scrapyd
    job's, a quoted ``-s``): no shell expands the ``~``, so the crawl made a folder named
    ``~`` in the current folder and crawled into it. Now one line naming the path meant."""
    out = tmp_path / "out"
    folders = {"FOCUSED_OUTPUT_DIR": str(out), name: "~/crawls/chem"}
    args = ["crawl", "focused", "-a", "topic=chemistry", *SMALL_SANDBOX]
    for key, value in folders.items():
        args += ["-s", f"{key}={value}"]
    result = run_scrapy(
        [*venv_scrapy, *args],
        cwd=tmp_path,
        SCRAPY_SETTINGS_MODULE="focused.settings",
        PYTHONPATH=str(project_root),
    )
    line = error_line(result)
    home = str(Path("~/crawls/chem").expanduser())
    assert line == (
        f"focused: error: {name} '~/crawls/chem' begins with '~', which only a shell"
        f" expands: the crawl would make a folder named '~' in {tmp_path}; give {home!r}"
    ), line
    assert not (tmp_path / "~").exists() and not out.exists()


@pytest.mark.parametrize(
    ("setting", "says"),
    [
        ("DOWNLOAD_DELAY=abc", "DOWNLOAD_DELAY must be a number, got 'abc'"),
        ("CONCURRENT_REQUESTS=abc", "CONCURRENT_REQUESTS must be an integer, got 'abc'"),
        ("CONCURRENT_REQUESTS=-1", "CONCURRENT_REQUESTS must be >= 1, got -1"),
    ],
)
def test_a_bad_scrapy_setting(
    project_root: Path, venv_scrapy: list[str], out: Path, setting: str, says: str
) -> None:
    """Scrapy's own settings of the wrong type: one line, exit status 2, before the sandbox
    is generated (it was a ``ValueError`` traceback after it, exit status 1; a negative
    concurrency crawled)."""
    result = crawl(
        project_root,
        venv_scrapy,
        out,
        "-a",
        "topic=chemistry",
        "-s",
        "FOCUSED_WEB=sandbox",
        "-s",
        "CLOSESPIDER_PAGECOUNT=10",
        "-s",
        setting,
    )
    line = the_error(result, out)
    assert line == f"focused: error: {says}", line
    assert "generating the sandbox" not in result.stderr + result.stdout


@pytest.mark.parametrize(
    ("setting", "says"),
    [
        ("MEMUSAGE_LIMIT_MB=abc", "MEMUSAGE_LIMIT_MB must be an integer, got 'abc'"),
        ("RETRY_PRIORITY_ADJUST=abc", "RETRY_PRIORITY_ADJUST must be an integer, got 'abc'"),
        (
            "DOWNLOAD_FAIL_ON_DATALOSS=maybe",
            "DOWNLOAD_FAIL_ON_DATALOSS must be true or false (True/False, 1/0), got 'maybe'",
        ),
        (
            "MEMUSAGE_CHECK_INTERVAL_SECONDS=soon",
            "MEMUSAGE_CHECK_INTERVAL_SECONDS must be a number, got 'soon'",
        ),
        (
            "RETRY_HTTP_CODES=abc",
            "RETRY_HTTP_CODES must be HTTP status codes (100-599) separated by commas,"
            " e.g. 404,410, got 'abc'",
        ),
        (
            'ITEM_PIPELINES={"nope.Pipe": 1}',
            "ITEM_PIPELINES: 'nope.Pipe' cannot be imported (No module named 'nope')",
        ),
        (
            'EXTENSIONS={"focused.extensions.Nope": 500}',
            "EXTENSIONS: 'focused.extensions.Nope' cannot be imported (Module"
            " 'focused.extensions' doesn't define any object named 'Nope')",
        ),
        (
            'SPIDER_MIDDLEWARES={"focused.middlewares.FocusedPriorityMiddleware": "late"}',
            "SPIDER_MIDDLEWARES: the order of 'focused.middlewares.FocusedPriorityMiddleware'"
            " must be a number (or null to turn it off), got 'late'",
        ),
        (
            'DOWNLOAD_HANDLERS={"http": "no.Handler"}',
            "DOWNLOAD_HANDLERS: 'no.Handler' cannot be imported (No module named 'no')",
        ),
        (
            "SCHEDULER=scrapy.core.scheduler.Schedular",
            "SCHEDULER: 'scrapy.core.scheduler.Schedular' cannot be imported (Module"
            " 'scrapy.core.scheduler' doesn't define any object named 'Schedular')",
        ),
        (
            "TWISTED_DNS_RESOLVER=nope.Resolver",
            "TWISTED_DNS_RESOLVER: 'nope.Resolver' cannot be imported (No module named 'nope')",
        ),
    ],
    ids=lambda v: v.split("=")[0] if "=" in v else "says",
)
def test_any_scrapy_setting_of_the_wrong_type(
    project_root: Path, venv_scrapy: list[str], out: Path, setting: str, says: str
) -> None:
    """Scrapy's settings beyond the crawl's own checks: one line, exit status 2, nothing
    fetched or written. They were tracebacks (exit status 1), or, for a bool Scrapy reads
    per download, a crawl that wrote its output folder and ended "no page could be
    fetched"."""
    result = crawl(
        project_root, venv_scrapy, out, "-a", "topic=chemistry", *SMALL_SANDBOX, "-s", setting
    )
    assert the_error(result, out) == f"focused: error: {says}"


def test_a_feed_setting_of_the_wrong_type(
    project_root: Path, venv_scrapy: list[str], out: Path, tmp_path: Path
) -> None:
    feed = tmp_path / "items.json"
    result = crawl(
        project_root,
        venv_scrapy,
        out,
        "-a",
        "topic=chemistry",
        *SMALL_SANDBOX,
        "-o",
        str(feed),
        "-s",
        "FEED_EXPORT_INDENT=abc",
    )
    assert (
        the_error(result, out) == "focused: error: FEED_EXPORT_INDENT must be an integer, got 'abc'"
    )
    assert not feed.exists()


@pytest.mark.parametrize(
    ("setting", "says"),
    [
        (
            "ALLOWED_DOMAINS=example.org",
            "ALLOWED_DOMAINS is no setting (Scrapy's allowed_domains is an attribute of a"
            " spider class), so it would be ignored; use -s FOCUSED_ALLOWED_DOMAINS=example.org",
        ),
        (
            "START_URLS=http://127.0.0.2:9/",
            "START_URLS is no setting (Scrapy's start_urls is an attribute of a spider"
            " class), so it would be ignored; use -s FOCUSED_SEEDS=http://127.0.0.2:9/",
        ),
    ],
)
def test_a_spider_attribute_given_as_a_setting(
    project_root: Path, venv_scrapy: list[str], out: Path, setting: str, says: str
) -> None:
    """``-s ALLOWED_DOMAINS=example.org`` (Scrapy's ``allowed_domains`` is a spider
    attribute, no setting): ignored without a word, the crawl went past the domains the
    user meant to keep to. Now one line names the setting to use, exit 2."""
    args = ("-a", "topic=chemistry", "-s", setting, *SMALL_SANDBOX)
    line = the_error(crawl(project_root, venv_scrapy, out, *args), out)
    assert line == f"focused: error: {says}"


def test_an_unknown_focused_setting(project_root: Path, venv_scrapy: list[str], out: Path) -> None:
    """A typo in a FOCUSED_ name: one line with the closest name (it was ignored)."""
    result = crawl(
        project_root,
        venv_scrapy,
        out,
        "-a",
        "topic=chemistry",
        "-s",
        "FOCUSED_WEB=sandbox",
        "-s",
        "FOCUSED_STRATEGIE=bfs",
    )
    line = the_error(result, out)
    assert (
        line == "focused: error: unknown setting FOCUSED_STRATEGIE; did you mean FOCUSED_STRATEGY?"
    )


def test_a_labels_file_that_does_not_exist(
    project_root: Path, venv_scrapy: list[str], out: Path, tmp_path: Path
) -> None:
    """It was ignored on the sandbox (and a traceback on the real web)."""
    missing = tmp_path / "nonexistent.tsv"
    result = crawl(
        project_root,
        venv_scrapy,
        out,
        "-a",
        "topic=chemistry",
        "-s",
        "FOCUSED_WEB=sandbox",
        "-s",
        f"FOCUSED_LABELS={missing}",
    )
    line = the_error(result, out)
    assert line == f"focused: error: FOCUSED_LABELS: {str(missing)!r} does not exist"


def test_an_unknown_spider_argument(project_root: Path, venv_scrapy: list[str], out: Path) -> None:
    """``-a strategy=bfs`` was ignored: the crawl ran the default strategy."""
    result = crawl(
        project_root,
        venv_scrapy,
        out,
        "-a",
        "topic=chemistry",
        "-a",
        "strategy=bfs",
        "-s",
        "FOCUSED_WEB=sandbox",
    )
    line = the_error(result, out)
    assert line == (
        "focused: error: unknown spider argument -a strategy=bfs (the focused spider takes"
        " -a topic=...); use -s FOCUSED_STRATEGY=bfs"
    )
    assert "generating the sandbox" not in result.stderr + result.stdout


def test_a_spider_argument_given_twice(
    project_root: Path, venv_scrapy: list[str], out: Path
) -> None:
    """``-a topic=chemistry -a topic=physics`` crawled physics alone: Scrapy keeps the
    last value without a word. Now one line, exit status 2; the same value twice
    crawls."""
    args = ("-a", "topic=chemistry", "-a", "topic=physics", *SMALL_SANDBOX)
    line = the_error(crawl(project_root, venv_scrapy, out, *args), out)
    assert line == (
        "focused: error: spider argument -a topic is given twice, as -a topic=chemistry and"
        " -a topic=physics: a crawl takes one topic (Scrapy would keep the last one without"
        " a word); give it once"
    )


def test_sandbox_with_seeds_on_another_site(
    project_root: Path, venv_scrapy: list[str], out: Path
) -> None:
    """It crawled (nothing, offline) with the sandbox's targets: recall 0, exit 0."""
    result = crawl(
        project_root,
        venv_scrapy,
        out,
        "-a",
        "topic=chemistry",
        "-s",
        "FOCUSED_WEB=sandbox",
        "-s",
        "FOCUSED_SEEDS=http://127.0.0.1:9/",
        "-s",
        "CLOSESPIDER_PAGECOUNT=10",
    )
    line = the_error(result, out)
    assert line.startswith(
        "focused: error: FOCUSED_SEEDS: 'http://127.0.0.1:9/' is not on the embedded sandbox"
    )
    assert "-s FOCUSED_WEB=real" in line


def test_downloader_middlewares_without_the_address_filter(
    project_root: Path, venv_scrapy: list[str], out: Path
) -> None:
    """A DOWNLOADER_MIDDLEWARES of one's own without the address filter, the project's
    resolver still on: every sandbox fetch was refused as a loopback address, 0 pages
    stored, exit status 0."""
    result = crawl(
        project_root,
        venv_scrapy,
        out,
        "-a",
        "topic=chemistry",
        "-s",
        "FOCUSED_WEB=sandbox",
        "-s",
        "CLOSESPIDER_PAGECOUNT=10",
        "-s",
        'DOWNLOADER_MIDDLEWARES={"focused.robots.FocusedRobotsTxtMiddleware": 100}',
    )
    line = the_error(result, out)
    assert line.startswith(
        "focused: error: DOWNLOADER_MIDDLEWARES does not enable"
        " focused.addressfilter.AddressFilterMiddleware"
    ), line
    assert "generating the sandbox" not in result.stderr + result.stdout


def test_the_hostile_sandbox_without_the_address_filter_is_refused(
    project_root: Path, venv_scrapy: list[str], out: Path
) -> None:
    """The same under another resolver (``TWISTED_DNS_RESOLVER`` Scrapy's), of the
    hostile sandbox: the crawl ran, with a WARNING only, and connected to the addresses
    its pages link and redirect to, 169.254.169.254 and 10.0.0.1 (stopped only by the
    tests' network guard). Now refused in one line before the sandbox is made."""
    result = crawl(
        project_root,
        venv_scrapy,
        out,
        "-a",
        "topic=chemistry",
        "-s",
        "FOCUSED_WEB=sandbox",
        "-s",
        "FOCUSED_SANDBOX_MODE=hostile",
        "-s",
        "CLOSESPIDER_PAGECOUNT=10",
        "-s",
        "TWISTED_DNS_RESOLVER=scrapy.resolver.CachingThreadedResolver",
        "-s",
        'DOWNLOADER_MIDDLEWARES={"focused.robustness.RobustnessMiddleware": 585}',
    )
    line = the_error(result, out)
    assert line.startswith(
        "focused: error: DOWNLOADER_MIDDLEWARES does not enable"
        " focused.addressfilter.AddressFilterMiddleware: the hostile sandbox"
    ), line
    assert "http://169.254.169.254/" in line
    assert "generating the sandbox" not in result.stderr + result.stdout


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (
            ("-s", "FOCUSED_WEB=sandbox", "-s", 'DOWNLOAD_HANDLERS={"http": null}'),
            "DOWNLOAD_HANDLERS turns off the http handler ('http': None), which the embedded"
            " sandbox's pages need, so no page would be fetched; leave 'http' out of"
            " DOWNLOAD_HANDLERS",
        ),
        (
            (
                "-s",
                "FOCUSED_WEB=real",
                "-s",
                "FOCUSED_SEEDS=http://127.0.0.2:9/",
                "-s",
                'DOWNLOAD_HANDLERS={"http": null, "ftp": null}',
            ),
            "DOWNLOAD_HANDLERS turns off the http handler ('http': None), which the seed"
            " http://127.0.0.2:9/ needs, so that seed would never be fetched;",
        ),
    ],
    ids=["sandbox", "seed"],
)
def test_download_handlers_that_turn_off_the_seeds_scheme(
    project_root: Path, venv_scrapy: list[str], out: Path, args: tuple[str, ...], says: str
) -> None:
    """``-s 'DOWNLOAD_HANDLERS={"http": null}'``: every request failed ("Unsupported URL
    scheme", with Scrapy's robots.txt middleware's traceback), and the crawl ended with
    ``no page could be fetched ... (no host answered); check the settings that bound a
    download``, exit 1. Now one line naming the handler, before anything is made."""
    result = crawl(project_root, venv_scrapy, out, "-a", "topic=chemistry", *args)
    line = the_error(result, out)
    assert line.startswith(f"focused: error: {says}"), line
    assert "generating the sandbox" not in result.stderr + result.stdout


def test_scrapy_without_a_twisted_reactor_is_refused(
    project_root: Path, venv_scrapy: list[str], out: Path
) -> None:
    """``TWISTED_REACTOR_ENABLED=False`` (Scrapy's crawl on asyncio alone, aiohttp
    resolving host names itself): the crawl ran with a traceback from the progress line,
    and the scope checks' resolver was out of the way. Refused in one line, exit 2,
    before the sandbox is made."""
    result = crawl(
        project_root,
        venv_scrapy,
        out,
        "-a",
        "topic=chemistry",
        "-s",
        "TWISTED_REACTOR_ENABLED=False",
    )
    line = the_error(result, out)
    assert line.startswith("focused: error: TWISTED_REACTOR_ENABLED=False is not supported:")
    assert "generating the sandbox" not in result.stderr + result.stdout


def test_a_bad_log_level(project_root: Path, venv_scrapy: list[str], out: Path) -> None:
    """Scrapy sets its logging up from ``LOG_LEVEL`` before the crawl command runs: it was
    a ``ValueError`` traceback, exit status 1."""
    result = crawl(project_root, venv_scrapy, out, "-a", "topic=chemistry", "-L", "nope")
    line = the_error(result, out)
    assert line.startswith("focused: error: LOG_LEVEL must be a logging level (CRITICAL,")
    assert line.endswith("got 'nope'")


@pytest.mark.parametrize(
    ("fmt", "why"),
    [
        ("%(asctime)s %(levelname) %(message)s", "unsupported format character"),
        ("%(asctime)s %(spider)s %(message)s", "Formatting field not found in record: 'spider'"),
    ],
    ids=["typo", "no-such-field"],
)
def test_a_log_format_that_cannot_format_a_record(
    project_root: Path, venv_scrapy: list[str], out: Path, fmt: str, why: str
) -> None:
    """Scrapy's log handler formats every record with ``LOG_FORMAT``: a typo made every
    log line a "Logging error" traceback on stderr, the log lost, and the crawl ran on
    (exit status 0)."""
    result = crawl(
        project_root,
        venv_scrapy,
        out,
        "-a",
        "topic=chemistry",
        *SMALL_SANDBOX,
        "-s",
        f"LOG_FORMAT={fmt}",
    )
    line = the_error(result, out)
    assert line.startswith(f"focused: error: LOG_FORMAT {fmt!r} cannot format a log record (")
    assert why in line
    assert "Logging error" not in result.stderr


def test_a_crawl_stopped_by_its_memory_limit_says_so_and_fails(
    project_root: Path, venv_scrapy: list[str], out: Path
) -> None:
    """Scrapy's ``MemoryUsage`` stops the crawl at ``MEMUSAGE_LIMIT_MB`` (finish reason
    ``memusage_exceeded``): it ended with exit status 0, as if it had reached its budget."""
    result = crawl(
        project_root, venv_scrapy, out, "-a", "topic=chemistry", *SMALL_SANDBOX,
        "-s", "MEMUSAGE_LIMIT_MB=1",
    )  # fmt: skip
    assert result.returncode == 1, result.stderr[-2000:]
    assert "'finish_reason': 'memusage_exceeded'" in result.stderr
    lines = [x for x in result.stderr.splitlines() if x.startswith("focused: error:")]
    assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr[-2000:]
    assert lines[0].startswith("focused: error: the crawl stopped at MEMUSAGE_LIMIT_MB (1 MB")


@pytest.mark.parametrize("value", ["[404]", "404,abc", "4040"])
def test_httperror_allowed_codes_that_are_not_status_codes(
    project_root: Path, venv_scrapy: list[str], out: Path, value: str
) -> None:
    """A JSON list or a word among the codes matched no status, silently."""
    result = crawl(
        project_root,
        venv_scrapy,
        out,
        "-a",
        "topic=chemistry",
        "-s",
        f"HTTPERROR_ALLOWED_CODES={value}",
    )
    assert the_error(result, out) == (
        "focused: error: HTTPERROR_ALLOWED_CODES must be HTTP status codes (100-599)"
        f" separated by commas, e.g. 404,410, got '{value}'"
    )


@pytest.mark.parametrize(
    ("feeds", "said"),
    [
        ('{"items.xyz": {"format": "xyz"}}', "FEEDS: 'items.xyz' has format 'xyz'; Scrapy exports"),
        ('{"items": {}}', "FEEDS: 'items' has format ''; Scrapy exports"),
        ('{"items.jl": {"format": null}}', "FEEDS: 'items.jl' has format None; Scrapy exports"),
        (
            '{"items:v1.jl": {"format": "jsonlines"}}',
            "FEEDS: 'items:v1.jl' has no storage for items:",
        ),
        (
            '{"items.jl": {"format": "jsonlines", "batch_item_count": 5}}',
            "FEEDS: 'items.jl' is written in batches (batch_item_count): its URI needs",
        ),
        (
            '{"gopher://h/items.jl": {"format": "jsonlines"}}',
            "FEEDS: 'gopher://h/items.jl' has no storage for gopher:// URIs",
        ),
        ('{"items.jl": "jsonlines"}', "FEEDS: the options of 'items.jl' must be a dict"),
    ],
    ids=["format", "no-format", "null-format", "colon", "batches", "scheme", "options"],
)
def test_feeds_scrapy_cannot_export(
    project_root: Path, venv_scrapy: list[str], out: Path, feeds: str, said: str
) -> None:
    """Scrapy logged an ERROR for such a feed and crawled on without it, exit status 0."""
    result = crawl(project_root, venv_scrapy, out, "-a", "topic=chemistry", "-s", f"FEEDS={feeds}")
    assert the_error(result, out).startswith(f"focused: error: {said}")


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except ImportError:
        return False


FEED_STORAGES_OF_SCRAPY = {  # option, URI, storage, module, package
    "s3": ("-o", "s3://bucket/items.jsonl", "S3FeedStorage", "boto3", "boto3"),
    "gs": (
        "-O",
        "gs://bucket/items.csv",
        "GCSFeedStorage",
        "google.cloud.storage",
        "google-cloud-storage",
    ),
}


@pytest.mark.parametrize("scheme", FEED_STORAGES_OF_SCRAPY)
def test_a_feed_whose_storage_library_is_missing(
    project_root: Path, venv_scrapy: list[str], out: Path, scheme: str
) -> None:
    """``-o s3://bucket/items.jsonl`` without boto3: Scrapy logged "Disabled feed storage
    scheme: s3. Reason: missing boto3 library" and crawled on without the feed, exit 0;
    ``-O gs://...`` without google-cloud-storage crawled, then failed to store the feed
    with a ``ModuleNotFoundError`` traceback. Now one line before anything is fetched."""
    option, uri, storage, module, package = FEED_STORAGES_OF_SCRAPY[scheme]
    if _installed(module):
        pytest.skip(f"{package} is installed here")
    result = crawl(
        project_root, venv_scrapy, out, "-a", "topic=chemistry", *SMALL_SANDBOX, option, uri
    )
    assert the_error(result, out) == (
        f"focused: error: FEEDS: {uri!r} is stored by {storage}, which needs the {package}"
        f" library, not installed here (pip install {package}); or write the feed to a local"
        " file"
    )


@pytest.mark.parametrize("option", ["-s LOG_FILE=", "--logfile="])
def test_a_log_file_in_a_folder_that_does_not_exist(
    project_root: Path, venv_scrapy: list[str], out: Path, tmp_path: Path, option: str
) -> None:
    """Scrapy opens ``LOG_FILE`` (``--logfile``) when it sets its logging up, before the
    crawl command runs: a folder that does not exist was a ``FileNotFoundError``
    traceback, exit status 1."""
    log = tmp_path / "logs" / "crawl.log"
    flag, _, prefix = option.partition(" ")
    args = [flag, f"{prefix}{log}"] if prefix else [f"{flag}{log}"]
    result = crawl(project_root, venv_scrapy, out, "-a", "topic=chemistry", *args)
    line = the_error(result, out)
    assert line == f"focused: error: LOG_FILE '{log}' cannot be written: No such file or directory"
    assert not log.parent.exists()


@pytest.mark.parametrize(("off", "folder"), [("--nolog", "logs"), ("LOG_ENABLED=False", "")])
def test_no_log_with_a_log_file_writes_no_log(
    project_root: Path, venv_scrapy: list[str], tmp_path: Path, folder: str, off: str
) -> None:
    """``--nolog`` (or ``LOG_ENABLED=False``) with a ``LOG_FILE``: Scrapy opened the log
    file all the same and wrote the whole log in it, and one in a folder that does not
    exist was a ``FileNotFoundError`` traceback, exit status 1. Now no log at all: the
    crawl runs, nothing on stderr, no log file."""
    log = tmp_path / folder / "crawl.log"
    out = tmp_path / "out"
    args = ["--nolog"] if off == "--nolog" else ["-s", off]
    args += ["-a", "topic=chemistry", "-s", f"LOG_FILE={log}", *SMALL_SANDBOX]
    result = crawl(project_root, venv_scrapy, out, *args, "-s", "FOCUSED_SANDBOX_PAGES=60")
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stderr == ""
    assert not log.exists()
    assert (out / "pages.sqlite3").exists()


@pytest.mark.parametrize(
    "name", ["job/sandbox.port", "job/crawl.json", "job/spider.state", "out/crawl.json", "out/seg"]
)
def test_a_log_file_that_is_one_of_the_crawls_own_files(
    project_root: Path, venv_scrapy: list[str], tmp_path: Path, name: str
) -> None:
    """Scrapy appended its log to it: ``LOG_FILE=JOBDIR/sandbox.port`` made that crawl
    and every later resume of the ``JOBDIR`` a ``ValueError`` traceback, exit status 1.
    Refused in one line, exit status 2, the file left as it was (the line not in it)."""
    out, job = tmp_path / "out", tmp_path / "job"
    out.mkdir()
    job.mkdir()
    (job / "sandbox.port").write_text("23789")
    (job / "crawl.json").write_text("{}")
    (job / "spider.state").write_bytes(b"")
    (out / "crawl.json").write_text("{}")
    (out / "pages.sqlite3").write_bytes(b"")
    (out / "segments").mkdir()
    log = tmp_path / name.replace("out/seg", "out/segments/x.log")
    before = log.read_bytes() if log.exists() else None
    result = crawl(
        project_root,
        venv_scrapy,
        out,
        *("-a", "topic=chemistry", *SMALL_SANDBOX, "-s", f"JOBDIR={job}", "--logfile", str(log)),
    )
    line = error_line(result)
    assert line == (
        f"focused: error: LOG_FILE '{log}' is the crawl's own {log}, which the log would"
        " damage; give another log file"
    )
    assert (log.read_bytes() if log.exists() else None) == before


def test_a_sandbox_port_file_that_holds_no_port(
    project_root: Path, venv_scrapy: list[str], out: Path, tmp_path: Path
) -> None:
    """A ``JOBDIR/sandbox.port`` written over (by a log, before the check above) made
    every resume a ``ValueError`` traceback, exit status 1: one line naming it."""
    job = tmp_path / "job"
    job.mkdir()
    (job / "sandbox.port").write_text("23789 2026-12-07 07:14:42 [scrapy.utils.log] INFO: ...")
    result = crawl(
        project_root,
        venv_scrapy,
        out,
        *("-a", "topic=chemistry", *SMALL_SANDBOX, "-s", f"JOBDIR={job}"),
    )
    line = error_line(result)
    assert line.startswith(
        f"focused: error: {job / 'sandbox.port'} should hold the port the crawl served its"
        " sandbox on, but holds '23789 2026-12-07 07:14:42 [scrapy.utils....'"
    ), line


@pytest.mark.parametrize(
    "command",
    [
        ("fetch", "http://127.0.0.1:1/"),
        ("shell", "-c", "1", "http://127.0.0.1:1/"),
        ("view", "http://127.0.0.1:1/"),
        ("bench",),
        ("runspider", "spider.py"),
    ],
    ids=lambda c: c[0],
)
def test_a_log_file_in_a_folder_that_does_not_exist_for_other_commands(
    project_root: Path, venv_scrapy: list[str], tmp_path: Path, command: tuple[str, ...]
) -> None:
    """The project's other Scrapy commands check ``LOG_FILE`` as ``crawl`` does (Scrapy's
    ``FileNotFoundError`` traceback, exit status 1, before)."""
    log = tmp_path / "logs" / "x.log"
    result = run_scrapy(
        [*venv_scrapy, command[0], "-s", f"LOG_FILE={log}", *command[1:]], project_root
    )
    assert result.returncode == 2, result.stderr[-2000:]
    assert result.stderr.strip().splitlines() == [
        f"focused: error: LOG_FILE '{log}' cannot be written: No such file or directory"
    ]
    assert not log.parent.exists()


@pytest.mark.parametrize("kind", ["missing", "file"])
def test_a_topics_dir_that_is_not_a_folder(
    project_root: Path, venv_scrapy: list[str], out: Path, tmp_path: Path, kind: str
) -> None:
    """It was "unknown topic 'chemistry'; available topics: none"."""
    topics = tmp_path / "topics"
    if kind == "file":
        topics.write_text("not a folder")
    result = crawl(
        project_root,
        venv_scrapy,
        out,
        "-a",
        "topic=chemistry",
        "-s",
        "FOCUSED_WEB=sandbox",
        "-s",
        f"FOCUSED_TOPICS_DIR={topics}",
    )
    line = the_error(result, out)
    says = "does not exist" if kind == "missing" else "is a file, not a folder of topic files"
    assert line.startswith(f"focused: error: FOCUSED_TOPICS_DIR: {str(topics)!r} {says}"), line
    assert "unknown topic" not in line


@pytest.mark.parametrize(
    "args",
    [("-a", "topic=nosuch"), ("-a", "topic=chemistry", "-L", "nope")],
    ids=["unknown topic", "bad LOG_LEVEL"],
)
def test_the_error_line_reaches_the_log_file_too(
    project_root: Path, venv_scrapy: list[str], out: Path, tmp_path: Path, args: tuple[str, ...]
) -> None:
    """With ``LOG_FILE`` the error line was on stderr only: a user reading the log file
    saw the crawl start and stop with no reason. Now it is in both, once in each."""
    log = tmp_path / "crawl.log"
    result = crawl(project_root, venv_scrapy, out, *args, "-s", f"LOG_FILE={log}")
    line = the_error(result, out)
    logged = [x for x in log.read_text().splitlines() if "focused: error:" in x]
    assert len(logged) == 1, log.read_text()
    assert logged[0].endswith(f" ERROR: {line}")


@pytest.mark.parametrize(
    "case",
    [
        (
            "127.0.0.2",
            "FOCUSED_ALLOWED_DOMAINS=127.0.0.1",  # the seed's host, not the labels'
            "127.0.0.2 is not in FOCUSED_ALLOWED_DOMAINS",
        ),
        (
            "localhost",  # resolves from /etc/hosts: no DNS query either way
            'FOCUSED_HOSTS={"seed.test": "127.0.0.1"}',
            "localhost is not in FOCUSED_HOSTS, and with FOCUSED_HOSTS set no other name"
            " is looked up",
        ),
    ],
    ids=["allowed domains", "hosts"],
)
def test_labels_out_of_the_crawls_scope_are_not_fetched(
    project_root: Path,
    venv_scrapy: list[str],
    out: Path,
    case: tuple[str, str, str],
) -> None:
    """``FOCUSED_LABELS=http://...`` was fetched with urllib whatever the crawl's scope
    said (and a failed fetch was a traceback)."""
    labels_host, setting, why = case
    pages = LoopbackServer("127.0.0.1", lambda path: (200, {}, b"<title>acid</title>"))
    labels = LoopbackServer("127.0.0.2", lambda path: (200, {}, b"/\tsubject.Science.Chemistry\n"))
    url = f"http://{labels_host}:{labels.port}/labels.tsv"
    try:
        result = crawl(
            project_root,
            venv_scrapy,
            out,
            "-a",
            "topic=chemistry",
            "-s",
            "FOCUSED_WEB=real",
            "-s",
            f"FOCUSED_SEEDS={pages.url}/",
            "-s",
            "FOCUSED_TARGET_CATEGORY=subject.Science.Chemistry",
            "-s",
            f"FOCUSED_LABELS={url}",
            "-s",
            setting,
        )
    finally:
        pages.close()
        labels.close()
    line = error_line(result)
    assert line == (
        f"focused: error: FOCUSED_LABELS: {url!r} is out of the crawl's scope ({why});"
        " nothing was fetched"
    )
    assert labels.connections == 0 and pages.connections == 0


@pytest.mark.parametrize(
    ("name", "kind"), [("items.json", "JSON array"), ("items.xml", "XML document")]
)
def test_a_json_feed_appended_to_a_second_time_is_refused(
    project_root: Path, venv_scrapy: list[str], out: Path, name: str, kind: str
) -> None:
    """``-o items.json`` run a second time (``-o`` appends): a second JSON array after
    the first, and the file was no valid JSON any more, without a word (an XML feed: a
    second root). Now one line, exit 2, the file as it was."""
    feed = out.parent / name
    before = (
        '[\n{"url": "http://127.0.0.1:1/"}\n]' if kind.startswith("JSON") else "<items></items>"
    )
    feed.write_text(before)
    args = ("-a", "topic=chemistry", "-o", str(feed), *SMALL_SANDBOX)
    line = the_error(crawl(project_root, venv_scrapy, out, *args), out)
    fmt = name.rsplit(".", 1)[1].upper()
    assert line == (
        f"focused: error: the feed '{feed}' exists, and a feed adds to its file: a second"
        f" {kind} after the first would make {feed} no valid {fmt}; write over it with -O,"
        " move it aside, or use a jsonl feed, which adds whole lines"
    )
    assert feed.read_text() == before


def test_a_json_feed_of_a_resumed_jobdir_is_not_told_to_write_over_its_items(
    project_root: Path, venv_scrapy: list[str], out: Path
) -> None:
    """A ``JOBDIR`` crawl stopped and run again with the same command (as its stop
    line says) and ``-o items.json``: the file holds the first run's items, which the
    advice to write over it with ``-O`` would lose. The line says to move it aside."""
    feed, job = out.parent / "items.json", out.parent / "job"
    args = ("-a", "topic=chemistry", "-o", str(feed), "-s", f"JOBDIR={job}", *SMALL_SANDBOX)
    first = crawl(project_root, venv_scrapy, out, *args, "-s", "CLOSESPIDER_PAGECOUNT=2")
    assert first.returncode == 0, first.stderr[-3000:]
    before = feed.read_text()
    assert before.startswith("[")
    again = crawl(project_root, venv_scrapy, out, *args)
    assert "Crawled (" not in again.stdout + again.stderr
    assert error_line(again) == (
        f"focused: error: the feed '{feed}' holds this JOBDIR's earlier items, and a feed"
        f" adds to its file: a second JSON array after the first would make {feed} no"
        " valid JSON; move it aside (or give this run's feed another name) and run the"
        " same command again, or use a jsonl feed, which adds whole lines"
    )
    assert feed.read_text() == before


@pytest.mark.parametrize("as_path", [False, True])
def test_a_json_feed_of_a_resumed_path_jobdir_gets_the_resume_advice(
    tmp_path: Path, as_path: bool
) -> None:
    """A ``JOBDIR`` given as a ``pathlib.Path`` (Scrapy takes one, from a
    ``CrawlerProcess``) was not seen as a resumed crawl: its ``items.json`` got the
    advice to write over the earlier run's items with ``-O``. Now it gets the resume
    line, as a ``JOBDIR`` given as text does."""
    import sqlite3

    from scrapy.settings import Settings

    from focused.config import ConfigError, check_feeds

    job, feed = tmp_path / "job", tmp_path / "items.json"
    job.mkdir()
    con = sqlite3.connect(job / "frontier.sqlite3")  # the earlier run's journal
    con.execute("CREATE TABLE t (x)")
    con.close()
    feed.write_text('[{"url": "http://127.0.0.2/a"}]')
    settings = Settings(
        {"JOBDIR": job if as_path else str(job), "FEEDS": {str(feed): {"format": "json"}}}
    )
    with pytest.raises(ConfigError) as raised:
        check_feeds(settings)
    assert str(raised.value).startswith(f"the feed '{feed}' holds this JOBDIR's earlier items")


def test_a_feed_to_stdout_with_log_stdout_is_refused(
    project_root: Path, venv_scrapy: list[str], out: Path
) -> None:
    """``-o -:jsonl -s LOG_STDOUT=True``: Scrapy's stdout storage asked the logger that
    LOG_STDOUT puts in place of the standard output for its ``buffer`` (an
    ``AttributeError`` traceback as the crawl started, exit 1). Now one line, exit 2."""
    args = ("-a", "topic=chemistry", "-o", "-:jsonl", "-s", "LOG_STDOUT=True", *SMALL_SANDBOX)
    line = the_error(crawl(project_root, venv_scrapy, out, *args), out)
    assert line == (
        "focused: error: the feed 'stdout:' goes to the standard output, which"
        " LOG_STDOUT=True sends to the log: drop LOG_STDOUT, or give the feed a file"
    )


@pytest.mark.parametrize(
    ("option", "stream"), [("stdout:json", "output"), ("stderr:jsonl", "error")]
)
def test_a_feed_named_stdout_is_refused(
    project_root: Path, venv_scrapy: list[str], out: Path, option: str, stream: str
) -> None:
    """``-o stdout:json`` (for the standard output): Scrapy read ``stdout`` as the feed's
    file, wrote a file named ``stdout`` in the project folder and nothing on the standard
    output. Now one line says how to write to the standard output, exit 2."""
    name, fmt = option.split(":")
    args = ("-a", "topic=chemistry", "-o", option, *SMALL_SANDBOX)
    line = the_error(crawl(project_root, venv_scrapy, out, *args), out)
    assert line == (
        f"focused: error: the feed '{name}' is a file named {name} in {project_root}, not"
        f" the standard {stream}: Scrapy writes a feed to the standard output with"
        f" -o -:{fmt} (or -o stdout::{fmt}); for a file of that name, give ./{name}:{fmt}"
    )
    assert not (project_root / name).exists()


@pytest.mark.parametrize(
    ("option", "feed", "own"),
    [
        ("-O", "{out}/pages.sqlite3:jsonl", "pages.sqlite3"),
        ("-o", "file://{out}/metrics.csv", "metrics.csv"),
        ("-O", "{out}/../out/./summary.json", "summary.json"),
    ],
)
def test_a_feed_over_a_file_of_the_crawl_is_refused(
    project_root: Path, venv_scrapy: list[str], out: Path, *, option: str, feed: str, own: str
) -> None:
    """``-O out/pages.sqlite3:jsonl`` emptied the page store of the crawl being resumed
    before its first page; the crawl does not start, and the file is as it was."""
    import sqlite3

    out.mkdir()
    con = sqlite3.connect(out / "pages.sqlite3")
    con.execute("CREATE TABLE pages (url TEXT)")
    con.execute("INSERT INTO pages VALUES ('http://127.0.0.1/a')")
    con.commit()
    con.close()
    (out / "metrics.csv").write_text("pages,recall\n1,0.5\n")
    (out / "summary.json").write_text('{"pages": 1}\n')
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    result = crawl(
        project_root,
        venv_scrapy,
        out,
        "-a",
        "topic=chemistry",
        *SMALL_SANDBOX,
        option,
        feed.format(out=out),
    )
    line = error_line(result)
    assert line.startswith("focused: error: the feed ") and f"{out / own}, a file of the" in line
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before


@pytest.mark.parametrize(
    ("option", "feed", "says"),
    [
        ("-o", "{tmp}/a-file/items.jsonl", "{tmp}/a-file is not a folder"),
        ("-O", "{tmp}/a-file/sub/items.json", "{tmp}/a-file is not a folder"),
        ("-o", "file://{tmp}/a-file/items.csv", "{tmp}/a-file is not a folder"),
        ("-o", "{tmp}/a-folder:jsonl", "{tmp}/a-folder is a folder"),
    ],
    ids=["file in the way", "deeper", "file URI", "a folder"],
)
def test_a_feed_that_cannot_be_written_is_refused_before_the_crawl(
    project_root: Path,
    venv_scrapy: list[str],
    out: Path,
    tmp_path: Path,
    *,
    option: str,
    feed: str,
    says: str,
) -> None:
    """The crawl ran to the end with an ERROR and a traceback per item ("Error caught on
    signal handler: FeedExporter.item_scraped ... NotADirectoryError"), stored its pages,
    lost the feed and ended exit 1; now one line, exit 2, nothing fetched or written."""
    (tmp_path / "a-file").write_text("in the way\n")
    (tmp_path / "a-folder").mkdir()
    result = crawl(
        project_root,
        venv_scrapy,
        out,
        *("-a", "topic=chemistry", *SMALL_SANDBOX, option, feed.format(tmp=tmp_path)),
    )
    line = the_error(result, out)
    assert line.startswith("focused: error: the feed "), line
    assert f"cannot be written: {says.format(tmp=tmp_path)};" in line
    assert (tmp_path / "a-file").read_text() == "in the way\n"
    assert list((tmp_path / "a-folder").iterdir()) == []


def test_a_topic_file_with_a_byte_order_mark_is_crawled(
    project_root: Path, venv_scrapy: list[str], out: Path, tmp_path: Path
) -> None:
    """The chemistry topic saved with a UTF-8 byte-order mark (Windows Notepad): it was
    ``focused: error: topic file ...: TOML syntax error: Invalid statement (at line 1,
    column 1)``, exit 2."""
    topic = tmp_path / "chemistry.toml"
    text = (project_root / "topics" / "chemistry.toml").read_text(encoding="utf-8")
    topic.write_text(text, encoding="utf-8-sig")
    result = crawl(project_root, venv_scrapy, out, "-a", f"topic={topic}", *SMALL_SANDBOX)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "focused: error" not in result.stderr and "Traceback" not in result.stderr
    assert (out / "pages.sqlite3").exists()


def test_topic_targets_that_are_a_number(
    project_root: Path, venv_scrapy: list[str], out: Path, tmp_topic: MakeTopic
) -> None:
    """``targets = 5`` in a topic file was a ``TypeError: 'int' object is not iterable``
    traceback, exit 1."""
    path = tmp_topic('seeds = ["http://127.0.0.1:1/"]\ntargets = 5\n[keywords]\nacid = 1\n')
    line = the_error(crawl(project_root, venv_scrapy, out, "-a", f"topic={path}"), out)
    assert line == (
        f"focused: error: topic file {path}: targets must be a list of URLs"
        ' (targets = ["https://...", ...]), got 5'
    )


@pytest.mark.parametrize(
    "case",
    [
        (
            "SPIDER_LOADER_CLASS=nope.Loader",
            "SPIDER_LOADER_CLASS: 'nope.Loader' cannot be imported (No module named 'nope')",
        ),
        (
            "SPIDER_MODULES=nope,focused.spiders",
            "SPIDER_MODULES: 'nope' cannot be imported (No module named 'nope')",
        ),
    ],
    ids=["loader", "modules"],
)
@pytest.mark.parametrize(
    "command",
    [("crawl", "focused", "-a", "topic=chemistry"), ("list",), ("runspider", "spider.py")],
    ids=lambda c: c[0],
)
def test_a_spider_loader_that_does_not_import(
    project_root: Path,
    venv_scrapy: list[str],
    tmp_path: Path,
    command: tuple[str, ...],
    case: tuple[str, str],
) -> None:
    """Scrapy loads ``SPIDER_LOADER_CLASS`` and ``SPIDER_MODULES`` as it makes the
    crawler process, before any command runs: a ``ModuleNotFoundError`` traceback, exit
    status 1, for ``scrapy crawl``, ``list`` and ``runspider`` alike."""
    setting, says = case
    out = tmp_path / "out"
    result = run_scrapy(
        [*venv_scrapy, *command, "-s", setting, "-s", f"FOCUSED_OUTPUT_DIR={out}"],
        project_root,
    )
    assert result.returncode == 2, result.stderr[-2000:]
    assert "Traceback" not in result.stderr, result.stderr[-2000:]
    assert result.stderr.strip().splitlines()[-1] == f"focused: error: {says}"
    assert not out.exists()


def test_runspider_of_a_file_that_is_not_python(
    project_root: Path, venv_scrapy: list[str], tmp_path: Path
) -> None:
    """A spider file with a syntax error: Scrapy's ``runspider`` refuses a file that does
    not import in one line, but a ``SyntaxError`` was a traceback, exit status 1."""
    spider = tmp_path / "spider.py"
    spider.write_text("import scrapy\n\nclass S(scrapy.Spider)\n    name = 's'\n")
    result = run_scrapy([*venv_scrapy, "runspider", str(spider)], project_root)
    assert result.returncode == 2, result.stderr[-2000:]
    assert "Traceback" not in result.stderr, result.stderr[-2000:]
    assert (
        result.stderr.strip()
        .splitlines()[-1]
        .endswith(f"error: Unable to load {str(spider)!r}: expected ':' (spider.py, line 3)")
    )


@pytest.mark.parametrize(
    "case",
    [
        (
            ("crawl", "focused", "-a", "topic=chemistry"),
            'ITEM_PIPELINES=["focused.pipelines.PageStorePipeline"]',
            "focused: error: ITEM_PIPELINES must be a dict of import path -> order (JSON with"
            " -s, e.g. -s 'ITEM_PIPELINES={\"myproject.pipelines.MyPipeline\": 300}'), got"
            " '[\"focused.pipelines.PageStorePipeline\"]'",
        ),
        (
            ("list",),
            'FEEDS=["items.json"]',
            "focused: error: FEEDS must be a JSON object with -s (-s 'FEEDS={...}'), got"
            " '[\"items.json\"]'",
        ),
    ],
    ids=["crawl", "list"],
)
def test_a_dict_setting_given_as_a_list_is_named(
    project_root: Path, venv_scrapy: list[str], tmp_path: Path, case: tuple
) -> None:
    """``-s 'ITEM_PIPELINES=["a.B"]'`` (a list, as older Scrapy took it): Scrapy said
    "Invalid -s value, use -s NAME=VALUE", with its usage, to a user who wrote just that.
    Now the setting and what it takes, one line, exit status 2, nothing written."""
    command, setting, line = case
    out = tmp_path / "out"
    result = run_scrapy(
        [*venv_scrapy, *command, "-s", setting, "-s", f"FOCUSED_OUTPUT_DIR={out}"],
        project_root,
    )
    assert result.returncode == 2, result.stderr[-2000:]
    assert result.stderr.strip().splitlines() == [line]
    assert not out.exists()
