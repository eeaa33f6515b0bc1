"""Seeds that Scrapy would never fetch are refused at start; a seed in another spelling
of an address is crawled as the address it spells.

Each case runs the real ``scrapy crawl focused`` against a loopback server on 127.0.0.2
that records every request (a refusal is made before any connection).
"""

from __future__ import annotations

import sqlite3
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from focused import config
from focused.web.topics import Topic
from tests.crawling import error_line, run_cli
from tests.loopback import LoopbackServer
from tests.test_config import make_settings, refused

PAGE = b"<title>chemistry acid</title><p>" + b"chemistry acid molecule reaction " * 40


@pytest.fixture
def site() -> Iterator[LoopbackServer]:
    server = LoopbackServer("127.0.0.2", lambda path: (200, {}, PAGE))
    yield server
    server.close()


@pytest.fixture
def out(tmp_path: Path) -> Path:
    return tmp_path / "out"


def crawl(
    project_root: Path, venv_scrapy: list[str], out: Path, *settings: str
) -> subprocess.CompletedProcess[str]:
    """A small real-web crawl of the chemistry topic with ``-s`` ``settings``."""
    args = ["-a", "topic=chemistry", "-s", "FOCUSED_WEB=real", "-s", "CLOSESPIDER_PAGECOUNT=3"]
    for setting in settings:
        args += ["-s", setting]
    return run_cli(project_root, venv_scrapy, out, *args)


def refused_line(result: subprocess.CompletedProcess[str], out: Path, site: LoopbackServer) -> str:
    """The one ``focused: error:`` line, exit status 2, nothing fetched or written."""
    line = error_line(result)
    assert site.log == [] and site.connections == 0  # not even robots.txt
    assert not out.exists()
    return line


def test_a_seed_outside_the_allowed_domains(
    project_root: Path, venv_scrapy: list[str], out: Path, site: LoopbackServer
) -> None:
    """Scrapy's offsite filter dropped it: 0 pages, exit status 0, no error line."""
    seed = f"{site.url}/"
    result = crawl(
        project_root, venv_scrapy, out, f"FOCUSED_SEEDS={seed}", "FOCUSED_ALLOWED_DOMAINS=127.0.0.3"
    )
    assert refused_line(result, out, site) == (
        f"focused: error: FOCUSED_SEEDS: {seed!r} is outside FOCUSED_ALLOWED_DOMAINS"
        " (127.0.0.3), so it would never be fetched; add '127.0.0.2' there, or leave the"
        " seed out"
    )


def test_one_seed_outside_the_allowed_domains_among_others(
    project_root: Path, venv_scrapy: list[str], out: Path, site: LoopbackServer
) -> None:
    """Every seed must be fetched, as every seed must be an http(s) URL: the one that
    would be dropped is named, and the others are not fetched either."""
    other = f"http://127.0.0.3:{site.port}/"
    result = crawl(
        project_root,
        venv_scrapy,
        out,
        f"FOCUSED_SEEDS={site.url}/,{other}",
        "FOCUSED_ALLOWED_DOMAINS=127.0.0.2",
    )
    line = refused_line(result, out, site)
    assert line.startswith(f"focused: error: FOCUSED_SEEDS: {other!r} is outside")


def test_a_seed_longer_than_the_url_length_limit(
    project_root: Path, venv_scrapy: list[str], out: Path, site: LoopbackServer
) -> None:
    """Scrapy's URL length filter dropped it: 0 pages, exit status 0, one stat."""
    seed = f"{site.url}/{'a' * 3000}"
    result = crawl(project_root, venv_scrapy, out, f"FOCUSED_SEEDS={seed}")
    line = refused_line(result, out, site)
    assert line == (
        f"focused: error: FOCUSED_SEEDS: {seed[:80] + '...'!r} is {len(seed)} characters"
        " long, over URLLENGTH_LIMIT (2083), so it would never be fetched; shorten it, or"
        " raise URLLENGTH_LIMIT"
    )


def test_a_long_seed_passes_without_the_url_length_limit(tmp_path: Path) -> None:
    seed = f"http://127.0.0.2:1/{'a' * 3000}"
    config.validate(make_settings(tmp_path, FOCUSED_SEEDS=seed, URLLENGTH_LIMIT=0))
    limited = make_settings(tmp_path, FOCUSED_SEEDS=seed, URLLENGTH_LIMIT=4000)
    config.validate(limited)
    assert "URLLENGTH_LIMIT (2083)" in refused(make_settings(tmp_path, FOCUSED_SEEDS=seed))


def test_a_seed_with_credentials(
    project_root: Path, venv_scrapy: list[str], out: Path, site: LoopbackServer
) -> None:
    """It was a ``ValueError: invalid hostname`` traceback, exit status 1, and a last line
    blaming the network. Refused as a link with credentials is dropped; the password is
    not repeated."""
    seed = f"http://user:secret@127.0.0.2:{site.port}/"
    result = crawl(project_root, venv_scrapy, out, f"FOCUSED_SEEDS={seed}")
    line = refused_line(result, out, site)
    assert line == (
        f"focused: error: FOCUSED_SEEDS: 'http://user:***@127.0.0.2:{site.port}/' has"
        " credentials (user:password@), which the crawl refuses, as in links; give the"
        " URL without them"
    )
    assert "secret" not in result.stderr + result.stdout


def test_a_topic_seed_outside_the_allowed_domains_on_the_real_web(tmp_path: Path) -> None:
    topic = Topic(name="t", keywords={"acid": 1.0}, seeds=["http://a.example/"])
    settings = make_settings(tmp_path, FOCUSED_WEB="real", FOCUSED_ALLOWED_DOMAINS="b.example")
    assert refused(settings, topic).startswith(
        "topic 't' seeds: 'http://a.example/' is outside FOCUSED_ALLOWED_DOMAINS (b.example)"
    )
    config.validate(make_settings(tmp_path, FOCUSED_WEB="real", FOCUSED_ALLOWED_DOMAINS="example"))


@pytest.mark.parametrize("where", ["FOCUSED_SEEDS", "topic file"])
def test_a_full_width_seed_is_crawled_as_the_address_it_spells(
    project_root: Path,
    venv_scrapy: list[str],
    out: Path,
    site: LoopbackServer,
    *,
    tmp_topic: Callable[..., Path],
    where: str,
) -> None:
    """``http://１２７．０．０．２:PORT/`` is 127.0.0.2 (IDNA maps the full-width digits
    and dots, as Scrapy's ``Request`` and browsers do): crawled as the ASCII seed is (a
    loopback seed allows loopback). It was not recognised as loopback, then refused as
    loopback: 0 pages, exit status 0."""
    seed = f"http://１２７．０．０．２:{site.port}/"
    if where == "FOCUSED_SEEDS":
        result = crawl(project_root, venv_scrapy, out, f"FOCUSED_SEEDS={seed}")
    else:
        topic = tmp_topic(f'seeds = ["{seed}"]\n[keywords]\nchemistry = 1\nacid = 1\n')
        result = run_cli(
            project_root,
            venv_scrapy,
            out,
            "-a",
            f"topic={topic}",
            "-s",
            "FOCUSED_WEB=real",
            "-s",
            "CLOSESPIDER_PAGECOUNT=3",
        )
    assert result.returncode == 0, result.stderr[-3000:]
    assert "Traceback" not in result.stderr
    assert "not fetched" not in result.stderr
    assert "/" in site.log
    con = sqlite3.connect(out / "pages.sqlite3")
    try:
        urls = [row[0] for row in con.execute("SELECT url FROM pages")]
    finally:
        con.close()
    assert f"http://127.0.0.2:{site.port}/" in urls


@pytest.mark.parametrize("web", ["sandbox", "auto"])
def test_allowed_domains_that_leave_out_the_sandbox(
    project_root: Path, venv_scrapy: list[str], out: Path, web: str
) -> None:
    """The sandbox's seeds (on 127.0.0.1) off ``FOCUSED_ALLOWED_DOMAINS``: Scrapy's offsite
    filter dropped them, 0 pages, exit status 0. With ``auto``, the topic's first seed is
    off the domains too, so the crawl would choose the sandbox (and nothing is probed)."""
    result = run_cli(
        project_root,
        venv_scrapy,
        out,
        "-a",
        "topic=chemistry",
        "-s",
        f"FOCUSED_WEB={web}",
        "-s",
        "FOCUSED_ALLOWED_DOMAINS=example.org",
        "-s",
        "FOCUSED_SANDBOX_PAGES=60",
        "-s",
        "CLOSESPIDER_PAGECOUNT=3",
    )
    assert error_line(result) == (
        "focused: error: FOCUSED_ALLOWED_DOMAINS (example.org) leaves out 127.0.0.1, the host"
        " of the embedded sandbox this crawl would crawl, so no page would be fetched; add"
        " 127.0.0.1 there, or crawl the real web (-s FOCUSED_WEB=real)"
    )
    assert "generating the sandbox" not in result.stderr + result.stdout
    assert not out.exists()


def test_allowed_domains_with_the_sandbox_pass(tmp_path: Path) -> None:
    topic = Topic(name="t", keywords={"acid": 1.0}, seeds=["http://a.example/"])
    for web, domains in [("sandbox", "127.0.0.1"), ("auto", "a.example"), ("real", "example")]:
        config.validate(
            make_settings(tmp_path, FOCUSED_WEB=web, FOCUSED_ALLOWED_DOMAINS=domains), topic
        )
