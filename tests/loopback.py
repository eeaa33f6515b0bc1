"""Loopback HTTP servers and crawl probes shared by the tests and ``bench/hosts.py``.

A :class:`LoopbackServer` answers on ``127.0.0.0/8`` (or ``::1``) from a thread, each
request through one ``answer(path)`` callable, so a test says only what its pages are.
:func:`run_probe` runs a small Scrapy script in a subprocess and returns the stats it
prints as its last line.
"""

from __future__ import annotations

import json
import socket
import socketserver
import subprocess
import sys
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

PROJECT = Path(__file__).resolve().parent.parent

#: the end of a probe script: run the spider class ``Probe`` in ``process`` and print
#: the crawl's stats as JSON on the last line (what :func:`run_probe` reads)
RUN_PROBE = """
crawler = process.create_crawler(Probe)
process.crawl(crawler)
process.start()
print(json.dumps({k: v for k, v in crawler.stats.get_stats().items()
                  if isinstance(v, (int, float, str))}))
"""

#: ``(status, headers, body)``; ``None`` closes the connection without an answer
Answer = tuple[int, dict[str, str], bytes] | None


class QuickHTTPServer(ThreadingHTTPServer):
    """The stdlib's threaded HTTP server, for a test: its listen queue takes a crawl's
    burst of connections (with the stdlib's 5 the kernel dropped the SYNs over it, and
    each of those downloads waited for the client's retry, a second later), its request
    threads are daemons, and :func:`serve_in_thread` stops it at once."""

    request_queue_size = socket.SOMAXCONN
    daemon_threads = True


def serve_in_thread(httpd: socketserver.BaseServer) -> threading.Thread:
    """Serve ``httpd`` in a daemon thread that looks whether ``httpd.shutdown()`` was
    called every 0.02 s (the stdlib's 0.5 s, restarted after each request, held each
    test's teardown for most of half a second)."""
    thread = threading.Thread(target=httpd.serve_forever, args=(0.02,), daemon=True)
    thread.start()
    return thread


class LoopbackServer:
    """An HTTP/1.1 server on ``address`` (a free port) that logs each request's path in
    ``log`` and answers it with ``answer(path)``; ``Content-Length`` is set, and
    ``Content-Type`` is ``text/html`` unless the headers name another. ``connections``
    counts the connections it accepted. ``port``: that port instead of a free one."""

    def __init__(self, address: str, answer: Callable[[str], Answer], port: int = 0) -> None:
        self.log: list[str] = []
        self.connections = 0
        #: the ``Cookie`` header of each request, in the order of ``log`` (None: none)
        self.cookies: list[str | None] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self) -> None:  # noqa: N802
                server.log.append(self.path)
                server.cookies.append(self.headers.get("Cookie"))
                reply = answer(self.path)
                if reply is None:
                    self.close_connection = True
                    return
                status, headers, body = reply
                self.send_response(status)
                headers = {"Content-Type": "text/html; charset=utf-8", **headers}
                for name, value in headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                try:
                    self.wfile.write(body)
                except OSError:  # the client stopped reading (a capped download)
                    self.close_connection = True

            def log_message(self, format: str, *args: object) -> None:  # noqa: A002
                pass

        class Counting(QuickHTTPServer):
            def verify_request(self, request: object, client_address: object) -> bool:
                server.connections += 1
                return True

        cls: type[ThreadingHTTPServer] = Counting
        if ":" in address:
            cls = type("V6Server", (Counting,), {"address_family": socket.AF_INET6})
        self.httpd = cls((address, port), Handler)
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        host = f"[{address}]" if ":" in address else address
        self.url = f"http://{host}:{self.port}"
        self.thread = serve_in_thread(self.httpd)

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join()


def run_probe(
    script: str, args: object, *, timeout: float = 120, check: bool = True
) -> tuple[dict[str, object], subprocess.CompletedProcess[str]]:
    """Run ``script`` (a Scrapy crawl that prints its stats as JSON on its last line)
    with ``args`` as JSON in ``sys.argv[1]``, in the project folder; with ``check``, a
    non-zero exit or a traceback in its log fails the test."""
    proc = subprocess.run(
        [sys.executable, "-c", script, json.dumps(args)],
        cwd=PROJECT,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    if check:
        assert proc.returncode == 0, proc.stderr[-3000:]
        assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    lines = proc.stdout.strip().splitlines()
    stats = json.loads(lines[-1]) if lines and lines[-1].startswith("{") else {}
    return stats, proc


class Listener:
    """A TCP port on ``address`` (a free one) that accepts nothing by itself: the
    connections made to it wait in its queue, and :meth:`connections` counts them. With
    ``full`` its queue is filled first, so that a further connection hangs (its SYN is
    dropped) until the client gives up: a host that does not answer."""

    def __init__(self, address: str, *, full: bool = False) -> None:
        family = socket.AF_INET6 if ":" in address else socket.AF_INET
        self.sock = socket.socket(family, socket.SOCK_STREAM)
        self.sock.bind((address, 0))
        self.sock.listen(0 if full else 16)
        self.port: int = self.sock.getsockname()[1]
        self.fillers: list[socket.socket] = []
        if full:  # one connection fills a queue of 0; the next ones get no answer
            filler = socket.create_connection((address, self.port), timeout=2)
            self.fillers.append(filler)
        self.counted = len(self.fillers)

    def connections(self) -> int:
        """The connections made to the port so far (the fillers left out)."""
        self.sock.setblocking(False)
        while True:
            try:
                conn, _ = self.sock.accept()
            except BlockingIOError:
                break
            conn.close()
            self.counted += 1
        return self.counted - len(self.fillers)

    def close(self) -> None:
        for filler in self.fillers:
            filler.close()
        self.sock.close()
