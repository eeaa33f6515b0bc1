"""One small HTTP(S) GET outside Scrapy's downloader, kept to the crawl's scope.

Pure module (sockets, :mod:`http.client`, :mod:`ssl`; no Scrapy). The crawl fetches one
file this way before it starts, its labels (``FOCUSED_LABELS`` as a URL). Like the
start-up probe it uses :func:`focused.web.probe.admit`: a host outside
``FOCUSED_ALLOWED_DOMAINS``, a name ``FOCUSED_HOSTS`` (when set) does not map, or a
host whose addresses the crawl's address policy refuses is neither looked up nor
connected to. Within the scope:

- the connection goes to an address the scope admitted (never to a name looked up
  again, and never through a proxy of the environment);
- the whole fetch, DNS lookup included, ends within ``timeout`` seconds (a server that
  drips its answer is given up at the limit);
- at most ``max_bytes`` of body are read (a larger ``Content-Length`` is refused before
  its body);
- a redirect is not followed (its target would need the same checks): it is an error
  naming the URL to give instead.
"""

from __future__ import annotations

import contextlib
import http.client
import queue
import socket
import ssl
import threading
import time
from collections.abc import Iterable
from urllib.parse import urlsplit

from focused.web.probe import Admitted, Probe, ProbeScope, admit, open_connection

__all__ = ["FetchError", "scoped_get"]

#: bytes read from the socket at a time
_CHUNK = 65536


class FetchError(Exception):
    """Why the GET gave nothing, in a few words; ``refused``: the crawl's scope forbade
    the lookup or the connection, so none was made."""

    def __init__(self, reason: str, *, refused: bool = False) -> None:
        super().__init__(reason)
        self.reason = reason
        self.refused = refused


def scoped_get(
    url: str,
    scope: ProbeScope | None = None,
    *,
    seeds: Iterable[str] | None = None,
    timeout: float,
    max_bytes: int,
) -> bytes:
    """The body of ``url`` (http or https, status 200), fetched only within ``scope``
    (:func:`focused.web.probe.admit`; ``seeds``: the crawl's seeds, whose address kinds
    the policy allows), within ``timeout`` seconds and ``max_bytes``; else
    :class:`FetchError`."""
    scheme = urlsplit(url).scheme.lower()
    if scheme not in ("http", "https"):
        raise FetchError(f"{url!r} is not an http(s) URL")
    deadline = time.monotonic() + timeout
    admitted = admit(url, scope, seeds=seeds, deadline=deadline)
    if isinstance(admitted, Probe):
        raise FetchError(str(admitted.reason), refused=admitted.refused)
    sock = open_connection(admitted, deadline, timeout)
    if isinstance(sock, str):
        raise FetchError(sock)
    answers: queue.SimpleQueue[bytes | FetchError] = queue.SimpleQueue()
    held = [sock]  # the socket in use (TLS wraps it)

    def get() -> None:
        try:
            answers.put(
                _get(url, scheme, admitted, held=held, deadline=deadline, max_bytes=max_bytes)
            )
        except FetchError as exc:
            answers.put(exc)
        except (OSError, http.client.HTTPException, ValueError) as exc:
            answers.put(FetchError(_why(admitted.host, exc, deadline, timeout)))

    threading.Thread(target=get, name="focused-fetch", daemon=True).start()
    try:
        answer = answers.get(timeout=max(0.0, deadline - time.monotonic()))
    except queue.Empty:
        answer = FetchError(f"{admitted.host} did not send it all within {timeout:g} s")
    finally:
        _abort(held[-1])  # wakes the thread if it still waits (it ends at once)
    if isinstance(answer, FetchError):
        raise answer
    return answer


class _Connection(http.client.HTTPConnection):
    """:class:`http.client.HTTPConnection` over a socket already connected (to the
    address the scope admitted), for the URL's host name."""

    def __init__(
        self, host: str, port: int, sock: socket.socket, timeout: float, *, https: bool = False
    ) -> None:
        # the scheme's default port, so that the Host header names no port for it
        self.default_port = http.client.HTTPS_PORT if https else http.client.HTTP_PORT
        super().__init__(host, port, timeout=timeout)
        self._connected = sock

    def connect(self) -> None:
        self.sock = self._connected


def _get(
    url: str,
    scheme: str,
    admitted: Admitted,
    *,
    held: list[socket.socket],
    deadline: float,
    max_bytes: int,
) -> bytes:
    """The GET itself, on the socket ``held[-1]`` (a TLS one is appended to ``held``);
    every socket operation bounded by ``deadline``."""
    sock = held[-1]
    sock.settimeout(max(0.001, deadline - time.monotonic()))
    if scheme == "https":
        context = ssl.create_default_context()
        sock = context.wrap_socket(sock, server_hostname=admitted.host)
        held.append(sock)
    parts = urlsplit(url)
    target = parts.path or "/"
    if parts.query:
        target += "?" + parts.query
    connection = _Connection(
        admitted.host, admitted.port, sock, sock.gettimeout() or 0.001, https=scheme == "https"
    )
    connection.request("GET", target, headers={"Accept-Encoding": "identity"})
    response = connection.getresponse()
    if response.status != 200:
        where = response.getheader("Location")
        if 300 <= response.status < 400 and where:
            raise FetchError(
                f"answered {response.status} {response.reason}, a redirect to {where},"
                " which is not followed; give that URL"
            )
        raise FetchError(f"answered {response.status} {response.reason}")
    length = response.getheader("Content-Length", "")
    if length.strip().isdigit() and int(length) > max_bytes:
        raise FetchError(f"it is {int(length):,} bytes, over the limit of {max_bytes:,}")
    body = bytearray()
    while True:
        sock.settimeout(max(0.001, deadline - time.monotonic()))
        chunk = response.read1(_CHUNK)
        if not chunk:
            break
        body += chunk
        if len(body) > max_bytes:
            raise FetchError(f"it is over the limit of {max_bytes:,} bytes")
        if time.monotonic() >= deadline:
            raise TimeoutError
    return bytes(body)


def _why(host: str, exc: BaseException, deadline: float, timeout: float) -> str:
    """The few words for an error of the GET."""
    if isinstance(exc, TimeoutError) or time.monotonic() >= deadline:
        return f"{host} did not send it all within {timeout:g} s"
    if isinstance(exc, ssl.SSLError | ssl.CertificateError):
        return f"TLS with {host} failed ({getattr(exc, 'reason', None) or exc})"
    return f"{host}: {exc.__class__.__name__}: {exc}" if str(exc) else f"{host}: {exc!r}"


def _abort(sock: socket.socket) -> None:
    """Shut ``sock`` down for both directions (a read waiting on it returns), then close
    it."""
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)
    sock.close()
