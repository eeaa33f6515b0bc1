"""Serve a generated :class:`~focused.web.sandbox.generator.Site` over real HTTP on loopback.

``python -m focused.web.sandbox [--port N] [--seed N] [--pages N] [--mode M]`` prints the base
URL on one line, then serves until killed (benchmarks start it as a separate process).
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import random
import socket
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import TracebackType
from typing import Any
from urllib.parse import unquote, urlsplit

from focused.web.sandbox.generator import Site, generate_site


class _Handler(BaseHTTPRequestHandler):
    """GET/HEAD of the site's paths; 404 for anything else. Never logs."""

    site: Site  # set on the subclass made per server
    protocol_version = "HTTP/1.1"
    server_version = "FocusedSandbox/1.0"
    disable_nagle_algorithm = True  # headers and body go out as two writes: no 40 ms stalls

    def _respond(self, with_body: bool) -> None:
        if self.site.responder is not None and self.site.responder(self, with_body):
            return
        path = unquote(urlsplit(self.path).path) or "/"
        body = self.site.pages.get(path)
        if body is None:
            body, status, ctype = (
                b"<!DOCTYPE html><title>404</title>not found\n",
                404,
                ("text/html; charset=utf-8"),
            )
        else:
            status, ctype = 200, self.site.content_types[path]
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if with_body:
            self.wfile.write(body)

    def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
        self._respond(True)

    def do_HEAD(self) -> None:  # noqa: N802
        self._respond(False)

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002
        """Quiet: no line per request on stderr."""


class _Server(ThreadingHTTPServer):
    """The stdlib's threaded server, quiet about a client that goes away: a crawl
    cancels a download over ``DOWNLOAD_MAXSIZE`` (or a timed-out one, or one under way
    at a forced stop) by resetting its connection, which the stdlib reports with a
    traceback on stderr, in the middle of the crawl's log. Any other error still is.

    Its listen queue holds a crawl's burst of connections (``CONCURRENT_REQUESTS``, 16
    by default, opened at once): with the stdlib's 5 the kernel dropped the others'
    SYNs, and each of those downloads waited for the client's retry, a second later."""

    request_queue_size = socket.SOMAXCONN

    def handle_error(self, request: Any, client_address: Any) -> None:
        if isinstance(sys.exc_info()[1], ConnectionError):  # reset, broken pipe, aborted
            return
        super().handle_error(request, client_address)


#: Where a port is chosen when none is given: below the kernel's ephemeral range
#: (Linux: ``ip_local_port_range``, 32768-60999 by default), which outgoing connections
#: and other programs' "any free port" draw from. A crawl with a ``JOBDIR`` serves its
#: sandbox on the same port when it resumes (its URLs hold it); a port of the ephemeral
#: range could meanwhile be some client's, and the resume would have to stop.
LOW_PORTS = (20000, 32768)
_PORT_TRIES = 64


def ephemeral_low(path: str = "/proc/sys/net/ipv4/ip_local_port_range") -> int:
    """The first port of the kernel's ephemeral range (32768 when it cannot be read)."""
    try:
        return int(Path(path).read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return LOW_PORTS[1]


def free_low_port_server(
    host: str, handler: type[BaseHTTPRequestHandler], rng: random.Random | None = None
) -> ThreadingHTTPServer:
    """A server bound to a free port of :data:`LOW_PORTS` below the ephemeral range;
    on a system where that range is empty or taken, a free port of the kernel's choice."""
    low, high = LOW_PORTS[0], min(LOW_PORTS[1], ephemeral_low())
    rng = rng or random.Random()
    if high - low >= _PORT_TRIES:
        for port in rng.sample(range(low, high), _PORT_TRIES):
            try:
                return _Server((host, port), handler)
            except OSError as exc:
                if exc.errno not in (errno.EADDRINUSE, errno.EACCES):
                    raise
    return _Server((host, 0), handler)


class SandboxServer:
    """A threaded HTTP server for ``site`` on ``host:port`` (port 0: a free one, below
    the kernel's ephemeral range: :func:`free_low_port_server`).

    Use as a context manager, or call :meth:`start` (returns the base URL) and :meth:`stop`.
    """

    def __init__(self, site: Site, host: str = "127.0.0.1", port: int = 0) -> None:
        self.site = site
        handler = type("SiteHandler", (_Handler,), {"site": site})
        self.httpd = _Server((host, port), handler) if port else free_low_port_server(host, handler)
        self.httpd.daemon_threads = True
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        host, port = self.httpd.server_address[:2]
        return f"http://{host}:{port}"

    def url(self, path: str) -> str:
        """Absolute URL of a site path such as ``/chemistry/p0001.html``."""
        return self.base_url + path

    #: how often the serving thread looks whether :meth:`stop` was called: with the
    #: stdlib's 0.5 s, restarted after each request, a crawl's close waited most of 0.5 s
    POLL_INTERVAL = 0.02

    def start(self) -> str:
        """Serve in a daemon thread; return the base URL (no trailing slash)."""
        if self._thread is None:
            self._thread = threading.Thread(
                target=self.httpd.serve_forever,
                kwargs={"poll_interval": self.POLL_INTERVAL},
                name="sandbox-server",
                daemon=True,
            )
            self._thread.start()
        return self.base_url

    def stop(self) -> None:
        """Stop serving and close the socket."""
        if self._thread is not None:
            self.httpd.shutdown()
            self._thread.join()
            self._thread = None
        self.httpd.server_close()

    def serve_forever(self) -> None:
        """Serve in the calling thread until interrupted."""
        try:
            self.httpd.serve_forever()
        finally:
            self.httpd.server_close()

    def __enter__(self) -> SandboxServer:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()


def add_arguments(
    parser: argparse.ArgumentParser, seed: int = 7, pages: int = 600, mode: str = "normal"
) -> None:
    """The sandbox's command-line options (shared with ``scrapy sandbox``)."""
    parser.add_argument("--host", default="127.0.0.1", help="bind address (default: %(default)s)")
    parser.add_argument("--port", type=int, default=0, help="port (default: a free one)")
    parser.add_argument("--seed", type=int, default=seed, help="site seed (default: %(default)s)")
    parser.add_argument("--pages", type=int, default=pages, help="about this many pages")
    parser.add_argument("--mode", default=mode, help="site mode (default: %(default)s)")


def serve(host: str, port: int, seed: int, pages: int, mode: str) -> None:
    """Generate a site, print its base URL on one line, serve until killed.

    ``ValueError`` (one line for the user) for a bad ``pages`` or ``mode``, a ``port``
    outside 0-65535, or an address it cannot listen on (a port in use, a host name that
    does not resolve)."""
    if not 0 <= port <= 65535:
        raise ValueError(f"port must be 0-65535 (0: a free one), got {port}")
    site = generate_site(seed=seed, pages=pages, mode=mode)
    try:
        server = SandboxServer(site, host, port)
    except OSError as exc:
        raise ValueError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    print(server.base_url, flush=True)
    with contextlib.suppress(KeyboardInterrupt):
        server.serve_forever()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m focused.web.sandbox", description="Serve the offline sandbox web."
    )
    add_arguments(parser)
    args = parser.parse_args(argv)
    try:
        serve(args.host, args.port, args.seed, args.pages, args.mode)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0
