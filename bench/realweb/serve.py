"""Serve a :class:`~bench.realweb.web.RealWeb` on its loopback addresses, in this process.

One listening socket per host address, all on the same port (all of 127.0.0.0/8 is
loopback on Linux): a live host answers each request after its latency, in a thread of
its own (stdlib ``ThreadingHTTPServer``); a hanging host's socket accepts connections
(the kernel completes the handshake) and never answers; a dead host has no socket (a
connection is refused). Every answer is logged (:class:`Hit`: host, target, start and end
times, status) for :mod:`bench.realweb.measure`.

``with RealWebServer(web) as served:`` gives the web at the port it listens on
(``served.port``, ``served.hits``).
"""

from __future__ import annotations

import errno
import socket
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from bench.realweb.web import Host, RealWeb

__all__ = ["Hit", "RealWebServer"]


@dataclass(frozen=True, slots=True)
class Hit:
    """One answered request: which host, which target, when (``time.time``, as the page
    store's ``fetched_at``)."""

    host: str  # host name
    target: str  # path and query as requested
    start: float
    end: float
    status: int


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = False  # a port in use must fail, not be shared
    request_queue_size = 128

    def __init__(self, address: tuple[str, int], host: Host, owner: RealWebServer) -> None:
        self.host = host
        self.owner = owner
        super().__init__(address, _Handler)


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.0"  # one request per connection: simple and bounded

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002
        pass

    def do_GET(self) -> None:  # noqa: N802 (stdlib's name)
        owner, host = self.server.owner, self.server.host
        start = time.time()
        time.sleep(host.latency)
        page = owner.web.render(host, self.path)
        try:
            self.send_response(page.status)
            self.send_header("Content-Type", page.content_type)
            self.send_header("Content-Length", str(len(page.body)))
            self.end_headers()
            self.wfile.write(page.body)
        except OSError:  # the crawler gave up (timeout, close): logged all the same
            pass
        owner.log(Hit(host.name, self.path, start, time.time(), page.status))

    def do_HEAD(self) -> None:  # noqa: N802
        self.send_response(405)
        self.end_headers()


class RealWebServer:
    """Serve ``web`` on every live and hanging host address, all on one port.

    ``port`` 0: a free one (the first live address picks it, the others bind the same
    port; on a clash all are closed and another is tried).
    """

    def __init__(self, web: RealWeb, port: int = 0, attempts: int = 20) -> None:
        self.web = web
        self.port = port
        self.attempts = attempts
        self.hits: list[Hit] = []
        self._lock = threading.Lock()
        self._servers: list[_Server] = []
        self._threads: list[threading.Thread] = []
        self._hanging: list[socket.socket] = []
        self.started = 0.0

    def log(self, hit: Hit) -> None:
        with self._lock:
            self.hits.append(hit)

    def snapshot(self) -> list[Hit]:
        with self._lock:
            return list(self.hits)

    def _bind_all(self, port: int) -> int:
        live = self.web.live_hosts
        first = _Server((live[0].ip, port), live[0], self)
        port = first.server_address[1]
        self._servers.append(first)
        for host in live[1:]:
            self._servers.append(_Server((host.ip, port), host, self))
        for host in self.web.hanging_hosts:
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.bind((host.ip, port))
            sock.listen(64)  # never accepted: the handshake completes, no answer comes
            self._hanging.append(sock)
        return port

    def start(self) -> RealWeb:
        """Bind every address, serve in daemon threads; the web at the bound port."""
        for attempt in range(self.attempts):
            try:
                port = self._bind_all(self.port)
                break
            except OSError as exc:
                self._close()
                if exc.errno != errno.EADDRINUSE or self.port or attempt == self.attempts - 1:
                    raise
        self.port = port
        self.web = self.web.at_port(port)
        for server in self._servers:
            thread = threading.Thread(
                target=server.serve_forever,
                kwargs={"poll_interval": 0.2},
                name=f"realweb-{server.host.name}",
                daemon=True,
            )
            thread.start()
            self._threads.append(thread)
        self.started = time.time()
        return self.web

    def _close(self) -> None:
        for server in self._servers:
            server.server_close()
        for sock in self._hanging:
            sock.close()
        self._servers, self._hanging = [], []

    def stop(self) -> None:
        for server in self._servers:
            server.shutdown()
        for thread in self._threads:
            thread.join(timeout=5)
        self._threads = []
        self._close()

    def __enter__(self) -> RealWebServer:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
