"""Answers no HTTP library would send, from a raw socket on loopback, in real crawls.

Each path of a :class:`RawServer` answers with the bytes a function of it writes to the
socket (streamed, so that an answer may go on for ever), then the connection is closed.
"""

from __future__ import annotations

import random
import socket
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.crawling import Crawl, run_crawl
from tests.test_hostile import assert_consistent, assert_went_on, paths, stats

CHEM = "<p>chemistry acid base reaction molecule atom chemical element</p>"
#: words for each page's own text (near-duplicate pages would not be stored)
WORDS = [
    "salt",
    "ion",
    "bond",
    "gas",
    "metal",
    "oxide",
    "carbon",
    "proton",
    "electron",
    "solvent",
    "crystal",
    "ester",
]

#: writes an answer to a connection; may raise ``OSError`` when the client goes away
Writer = Callable[[socket.socket], None]


def page(title: str, *links: str) -> bytes:
    """A chemistry page of its own text (seeded by ``title``) linking ``links``."""
    own = " ".join(random.Random(title).choices(WORDS, k=80))
    anchors = "".join(f'<a href="{link}">chemistry {link}</a>' for link in links)
    body = f"{CHEM}<p>{own}</p>{anchors}"
    return f"<html><head><title>{title}</title></head><body>{body}</body></html>".encode()


def plain(body: bytes, status: bytes = b"200 OK", headers: bytes = b"") -> Writer:
    """A whole answer with a right ``Content-Length``."""
    head = b"HTTP/1.1 %s\r\nContent-Type: text/html\r\n%sContent-Length: %d\r\n\r\n" % (
        status,
        headers,
        len(body),
    )
    return lambda conn: conn.sendall(head + body)


class RawServer:
    """Answers each connection's first request with ``answers[path]`` (a 404 for any
    other path); ``paths`` logs the requests, ``sent[path]`` adds up the bytes each
    answer got onto the socket before the client went away."""

    def __init__(self, answers: dict[str, Writer]) -> None:
        self.answers = answers
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port: int = self.sock.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self.paths: list[str] = []
        self.sent: dict[str, int] = {}
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._answer, args=(conn,), daemon=True).start()

    def _answer(self, conn: socket.socket) -> None:
        with conn:
            data = b""
            while b"\r\n\r\n" not in data:
                chunk = conn.recv(65536)
                if not chunk:
                    return
                data += chunk
            path = data.split(b" ", 2)[1].decode("ascii", "replace")
            self.paths.append(path)
            write = self.answers.get(path, plain(b"", b"404 Not Found"))
            counting = _Counting(conn)
            try:
                write(counting)  # type: ignore[arg-type]
                conn.shutdown(socket.SHUT_WR)
            except OSError:
                pass
            self.sent[path] = self.sent.get(path, 0) + counting.sent

    def close(self) -> None:
        self.sock.close()


class _Counting:
    """A socket's ``sendall`` that counts the bytes sent."""

    def __init__(self, conn: socket.socket) -> None:
        self.conn = conn
        self.sent = 0

    def sendall(self, data: bytes) -> None:
        self.conn.sendall(data)
        self.sent += len(data)


def crawl_raw(
    tmp_path: Path, answers: dict[str, Writer], *settings: str
) -> tuple[Crawl, RawServer]:
    """A ``bfs`` crawl of the real web from ``/`` of a :class:`RawServer`."""
    server = RawServer({"/robots.txt": plain(b"", b"404 Not Found"), **answers})
    try:
        crawl = run_crawl(
            tmp_path,
            "FOCUSED_WEB=real",
            f"FOCUSED_SEEDS={server.url}/",
            "FOCUSED_STRATEGY=bfs",
            *settings,
        )
    finally:
        server.close()
    return crawl, server


@pytest.fixture
def warnings() -> Callable[[Crawl], list[str]]:
    return lambda crawl: [line for line in crawl.log.splitlines() if " WARNING: " in line]


# --- headers for ever ---------------------------------------------------------------------
def endless_headers(
    line: bytes, first: bytes = b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n"
) -> Writer:
    """``first``, then ``line`` again and again for up to 60 s."""

    def write(conn: socket.socket) -> None:
        conn.sendall(first)
        end = time.monotonic() + 60
        while time.monotonic() < end:
            conn.sendall(line * 64)

    return write


@pytest.mark.integration
def test_headers_sent_for_ever_are_cut_at_the_cap(tmp_path, warnings):
    """Twisted keeps every header line (and every continuation line of one header) of a
    response without bound: a server sending headers for ever grew the crawler by about
    a gigabyte in a 5 s ``DOWNLOAD_TIMEOUT``, three times over (retries). Now the answer
    fails once its headers pass ``FOCUSED_MAX_HEADER_BYTES``, at once and not retried,
    in one WARNING line; a page with 100 KB of headers under the cap is stored."""
    many = b"".join(b"X-Header-%d: %s\r\n" % (i, b"v" * 90) for i in range(1000))
    answers = {
        "/": plain(
            page("chemistry home", "/endless.html", "/folded.html", "/continue.html", "/many.html")
        ),
        "/endless.html": endless_headers(b"X-A: " + b"a" * 1000 + b"\r\n"),
        # one header whose continuation lines (obs-fold) never end
        "/folded.html": endless_headers(
            b" " + b"b" * 1000 + b"\r\n",
            first=b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nX-B: b\r\n",
        ),
        # informational answers for ever (Twisted skips each, and reads the next)
        "/continue.html": endless_headers(b"HTTP/1.1 100 Continue\r\n\r\n", first=b""),
        "/many.html": plain(page("chemistry many headers"), headers=many),
    }
    start = time.monotonic()
    crawl, server = crawl_raw(tmp_path, answers, "DOWNLOAD_TIMEOUT=5")
    took = time.monotonic() - start
    assert_went_on(crawl)
    assert_consistent(crawl.out)
    assert paths(crawl) == {"/", "/many.html"}
    for path in ("/endless.html", "/folded.html", "/continue.html"):
        assert server.paths.count(path) == 1  # not retried
        # the client stopped reading near the cap (socket buffers aside): before, it read
        # until DOWNLOAD_TIMEOUT, gigabytes
        assert server.sent[path] < 32 * 1024 * 1024, server.sent
    assert took < 30  # not three DOWNLOAD_TIMEOUTs per page, plus the crawl's start
    s = stats(crawl)
    assert s["focused/errors/headers_too_large"] == 3
    lines = warnings(crawl)
    assert len(lines) == 3, lines
    for line in lines:
        assert "failed: 127.0.0.1:" in line
        assert "sent more than 262144 bytes of headers (FOCUSED_MAX_HEADER_BYTES)" in line
        assert line.endswith("(1 attempt)")


@pytest.mark.integration
def test_the_header_cap_is_a_setting(tmp_path):
    """``FOCUSED_MAX_HEADER_BYTES`` below a page's 200 KB of headers fails it; 0 is no
    cap. The lines of a body do not count. (The cap is checked as the bytes come, up to
    64 KiB a read: headers that end within the read that passes it are kept.)"""
    many = b"".join(b"X-Header-%d: %s\r\n" % (i, b"v" * 90) for i in range(2000))
    lines = page("chemistry lines") + b"\r\n".join([b"<p>acid</p>"] * 30_000)
    answers = {
        "/": plain(page("chemistry home", "/many.html", "/lines.html")),
        "/many.html": plain(page("chemistry many headers"), headers=many),
        "/lines.html": plain(lines),
    }
    crawl, _ = crawl_raw(tmp_path / "a", answers, "FOCUSED_MAX_HEADER_BYTES=4096")
    assert paths(crawl) == {"/", "/lines.html"}
    assert stats(crawl)["focused/errors/headers_too_large"] == 1
    crawl, _ = crawl_raw(tmp_path / "b", answers, "FOCUSED_MAX_HEADER_BYTES=0")
    assert paths(crawl) == {"/", "/many.html", "/lines.html"}


# --- answers Twisted's parser refuses ------------------------------------------------------
def raw(head: bytes, body: bytes = b"") -> Writer:
    """``head`` (the status and header lines, without the blank line) and ``body``."""
    return lambda conn: conn.sendall(head + b"\r\n\r\n" + body)


@pytest.mark.integration
def test_a_malformed_answer_is_named_and_not_retried(tmp_path, warnings):
    """A status line that is not HTTP's, an invalid or conflicting ``Content-Length``, a
    ``Transfer-Encoding`` other than chunked: Twisted's parser refuses each, and each was
    retried twice and told as "closed the connection before a whole answer", which the
    server had not done. Now one request each, one WARNING line that says what was
    malformed; two equal ``Content-Length`` headers (which RFC 9110 allows) are read."""
    body = page("chemistry twin lengths")
    ct = b"Content-Type: text/html\r\n"
    bad = {
        "/bad-status.html": (raw(b"HTTP/1.1 abc OK\r\n" + ct), "a status line that is not HTTP's"),
        "/not-http.html": (raw(b"garbage"), "a status line that is not HTTP's: b'garbage'"),
        "/two-lengths.html": (
            raw(b"HTTP/1.1 200 OK\r\n" + ct + b"Content-Length: 5\r\nContent-Length: 6", body),
            "an invalid or conflicting Content-Length",
        ),
        "/negative-length.html": (
            raw(b"HTTP/1.1 200 OK\r\n" + ct + b"Content-Length: -5", body),
            "an invalid or conflicting Content-Length",
        ),
        "/gzip-transfer.html": (
            raw(b"HTTP/1.1 200 OK\r\n" + ct + b"Transfer-Encoding: gzip", body),
            "Transfer-Encoding: gzip, which is not chunked",
        ),
    }
    same = b"HTTP/1.1 200 OK\r\n%sContent-Length: %d\r\nContent-Length: %d" % (
        ct,
        len(body),
        len(body),
    )
    answers = {
        "/": plain(page("chemistry home", *bad, "/same-lengths.html")),
        "/same-lengths.html": raw(same, body),
        **{path: writer for path, (writer, _) in bad.items()},
    }
    crawl, server = crawl_raw(tmp_path, answers)
    assert_went_on(crawl)
    assert paths(crawl) == {"/", "/same-lengths.html"}
    assert stats(crawl)["focused/errors/malformed"] == len(bad)
    assert "focused/errors/lost" not in stats(crawl)
    lines = warnings(crawl)
    assert len(lines) == len(bad), lines
    for path, (_, said) in bad.items():
        assert server.paths.count(path) == 1  # not retried
        [line] = [x for x in lines if f"{path}> failed:" in x]
        assert f"127.0.0.1:{server.port} sent a malformed answer ({said}" in line
        assert line.endswith("(1 attempt)")
    assert "closed the connection" not in crawl.log


@pytest.mark.integration
def test_a_chunked_body_with_a_bad_chunk_is_malformed_not_short(tmp_path, warnings):
    """A chunked body whose chunk size is no hex number, or whose chunk lacks its CRLF:
    Twisted drops the connection and calls the body cut short, so it was told as "sent
    a body shorter than its Content-Length" (the answer has none) and retried. Now it is
    a malformed answer that says so, one request; a good chunked page is stored."""
    body = page("chemistry chunked")
    head = b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nTransfer-Encoding: chunked"
    first = b"%x\r\n%s\r\n" % (len(body), body)
    bad = {
        "/bad-size.html": (
            raw(head, first + b"zz\r\nabc\r\n0\r\n\r\n"),
            "a malformed chunked body: Chunk-size must be an integer)",
        ),
        "/no-crlf.html": (
            raw(head, b"3\r\nabcXY0\r\n\r\n"),
            "a malformed chunked body: Chunk did not end with CRLF)",
        ),
    }
    answers = {
        "/": plain(page("chemistry home", *bad, "/good.html")),
        "/good.html": raw(head, first + b"0\r\n\r\n"),
        **{path: writer for path, (writer, _) in bad.items()},
    }
    crawl, server = crawl_raw(tmp_path, answers)
    assert_went_on(crawl)
    assert paths(crawl) == {"/", "/good.html"}
    s = stats(crawl)
    assert s["focused/errors/malformed"] == len(bad)
    assert "focused/errors/dataloss" not in s
    for path, (_, said) in bad.items():
        assert server.paths.count(path) == 1  # not retried
        [line] = [x for x in warnings(crawl) if f"{path}> failed:" in x]
        assert line.endswith(f"127.0.0.1:{server.port} sent a malformed answer ({said} (1 attempt)")
    assert "shorter than its Content-Length" not in crawl.log
