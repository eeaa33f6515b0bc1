"""``scrapy fetch URL`` and ``scrapy shell URL`` reach the URL asked for, on loopback too.

The project refuses internal addresses unless a seed is of their kind; for these two
commands the URL on the command line is the seed (``focused.commands.fetch``). Real
commands in a subprocess against a real loopback server.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

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
    project_root: Path, venv_scrapy: list[str], *args: str
) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SCRAPY_")}
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
