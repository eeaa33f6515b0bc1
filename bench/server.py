"""A static HTTP server for one folder on 127.0.0.1 (stdlib ``ThreadingHTTPServer``).

The quality benchmark serves the wikispeedia site with it: a real HTTP server on a free
loopback port, run in a thread of the benchmark process (or on its own with
``python -m bench.server FOLDER --port N``).
"""

from __future__ import annotations

import argparse
import functools
import socket
import threading
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

__all__ = ["StaticServer"]


class _QuietHandler(SimpleHTTPRequestHandler):
    """Serves files without a log line per request (thousands per crawl)."""

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002
        pass


class _Server(ThreadingHTTPServer):
    """Its listen queue takes a crawl's burst of connections: with the stdlib's 5 the
    kernel dropped the SYNs over it (``CONCURRENT_REQUESTS`` is 16), and each of those
    downloads waited for the client's retry, a second later, in the measured crawl."""

    request_queue_size = socket.SOMAXCONN
    daemon_threads = True


class StaticServer:
    """Serve ``folder`` on ``host:port`` (port 0: a free one) in a daemon thread.

    ``with StaticServer(folder) as base:`` gives ``http://127.0.0.1:<port>``.
    """

    def __init__(self, folder: str | Path, host: str = "127.0.0.1", port: int = 0) -> None:
        self.folder = Path(folder)
        if not self.folder.is_dir():
            raise FileNotFoundError(f"no such folder: {self.folder}")
        self.host = host
        self.port = port
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        if self._httpd is None:
            raise RuntimeError("server not started")
        return f"http://{self.host}:{self._httpd.server_address[1]}"

    def start(self) -> str:
        """Bind, serve in the background and return the base URL."""
        handler = functools.partial(_QuietHandler, directory=str(self.folder))
        httpd = _Server((self.host, self.port), handler)
        self._httpd = httpd
        self._thread = threading.Thread(  # stop() looks within 0.02 s (the stdlib: 0.5 s)
            target=httpd.serve_forever, args=(0.02,), name="focused-bench-server", daemon=True
        )
        self._thread.start()
        return self.base_url

    def stop(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> str:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Serve a folder on 127.0.0.1.")
    parser.add_argument("folder")
    parser.add_argument("--port", type=int, default=0, help="0: a free port (default)")
    args = parser.parse_args(argv)
    server = StaticServer(args.folder, port=args.port)
    print(server.start(), flush=True)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        server.stop()


if __name__ == "__main__":
    main()
