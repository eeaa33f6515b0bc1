"""The tests' own loopback HTTP servers (tests/loopback.py): a crawl's burst of
connections is queued, not dropped, and a server stops at once."""

from __future__ import annotations

import socket

from tests.loopback import LoopbackServer


def _page(path: str) -> tuple[int, dict[str, str], bytes]:
    return 200, {}, b"<title>chemistry</title>" + path.encode()


def test_a_burst_of_connections_is_queued_not_dropped() -> None:
    """With the stdlib's listen queue of 5 the kernel dropped the SYNs of a crawl's
    burst of connections (``CONCURRENT_REQUESTS``, 16): each of those downloads waited
    a second for the client's retry. 64 connections made while the server's thread
    does not accept are all completed by the kernel at once."""
    server = LoopbackServer("127.0.0.1", _page)
    server.httpd.shutdown()  # the socket listens on, nobody accepts
    socks: list[socket.socket] = []
    try:
        for _ in range(64):
            socks.append(socket.create_connection(("127.0.0.1", server.port), timeout=0.5))
    finally:
        for sock in socks:
            sock.close()
        server.httpd.server_close()
    assert len(socks) == 64
