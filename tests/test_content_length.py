"""A server whose ``Content-Length`` lies, from a raw socket on loopback, in a real crawl.

``Content-Length: 100`` with 10 bytes, then the connection closed: Scrapy's
``ResponseDataLossError`` was retried twice and reported as "closed the connection
before a whole answer" (as a reset is). It is named now, ``focused/errors/dataloss``, and
retried once only: the retry came back just as short. ``Content-Length: 10`` with 100
bytes: the body is the 10 bytes the header declares (as browsers read it, RFC 9112,
section 6.3), fetched once, no error.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.crawling import crawl_real_web
from tests.test_raw_answers import RawServer, Writer

HOME = (
    b"<html><head><title>chemistry acid</title></head><body><p>chemistry acid reaction,"
    b" an acid and a base in chemistry</p><a href='/short.html'>chemistry acid short</a>"
    b" <a href='/long.html'>chemistry acid long</a></body></html>"
)
#: path -> the raw answer (the connection is closed after it)
ANSWERS = {
    "/robots.txt": b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n",
    "/": b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: %d\r\n\r\n%s"
    % (len(HOME), HOME),
    "/short.html": b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 100\r\n\r\n"
    + b"chemistry!",
    "/long.html": b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 10\r\n\r\n"
    + b"chemistry " * 10,
}


def _sent(answer: bytes) -> Writer:
    return lambda conn: conn.sendall(answer)


@pytest.fixture
def server() -> Iterator[RawServer]:
    """:data:`ANSWERS`, byte for byte (the raw-answer tests' server)."""
    raw = RawServer({path: _sent(answer) for path, answer in ANSWERS.items()})
    yield raw
    raw.close()


@pytest.mark.integration
def test_a_body_shorter_than_its_content_length_is_named_and_retried_once(
    tmp_path: Path, project_root: Path, venv_scrapy: list[str], server: RawServer
) -> None:
    out = tmp_path / "out"
    seed = f"http://127.0.0.1:{server.port}/"
    result = crawl_real_web(project_root, venv_scrapy, out, seed, "CLOSESPIDER_TIMEOUT=60")
    log = result.stderr + result.stdout
    assert result.returncode == 0, log[-3000:]
    assert "Traceback" not in log, log[-3000:]
    said = [ln for ln in log.splitlines() if "failed:" in ln and "/short.html>" in ln]
    assert said == [
        ln
        for ln in said
        if f"127.0.0.1:{server.port} sent a body shorter than its Content-Length, then closed"
        " the connection (2 attempts)" in ln
    ]
    assert len(said) == 1, said
    assert server.paths.count("/short.html") == 2  # the retry came back short: no third
    assert server.paths.count("/long.html") == 1  # its first 10 bytes: a whole answer
    assert not [ln for ln in log.splitlines() if "failed:" in ln and "/long.html>" in ln]
    stats = json.loads((out / "stats.json").read_text())
    assert stats["focused/errors/dataloss"] == 1
    assert "focused/errors/lost" not in stats
    assert stats["focused/errors/first"].endswith(
        "sent a body shorter than its Content-Length, then closed the connection"
    )
    assert stats["retry/reason_count/scrapy.exceptions.ResponseDataLossError"] == 1
    assert "retry/max_reached" not in stats
