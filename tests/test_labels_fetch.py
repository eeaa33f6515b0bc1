"""``FOCUSED_LABELS`` as a URL is fetched within the crawl's scope, a time and a size limit.

Real sockets on 127.0.0.0/8: a :class:`~tests.loopback.LoopbackServer` on 127.0.0.2
counts the connections made to it. The names stand for hosts elsewhere and are mapped
by ``FOCUSED_HOSTS``, or refused before any lookup: no DNS query is made.
"""

from __future__ import annotations

import ipaddress
import socket
import threading
import time
from collections.abc import Iterator

import pytest

from focused.web.probe import ProbeScope
from focused.web.sites import LabelsError, load_labels
from tests.loopback import Answer, LoopbackServer

LABELS = b"# path\tcategory\n/wiki/Acid.htm\tsubject.Science.Chemistry\n"
TSV = {"Content-Type": "text/tab-separated-values"}


def answer(path: str) -> Answer:
    if path == "/labels.tsv":
        return 200, TSV, LABELS
    if path == "/moved.tsv":
        return 301, {"Location": "http://127.0.0.1:9/labels.tsv"}, b""
    if path == "/big.tsv":
        return 200, TSV, LABELS * 100
    return 404, {}, b"not found"


@pytest.fixture
def server() -> Iterator[LoopbackServer]:
    served = LoopbackServer("127.0.0.2", answer)
    yield served
    served.close()


def test_labels_in_scope_are_fetched(server: LoopbackServer) -> None:
    url = f"{server.url}/labels.tsv"
    # the seeds' own kind (loopback) is allowed, as in the crawl
    labels = load_labels(url, ProbeScope(), seeds=[f"{server.url}/"])
    assert labels == {"/wiki/Acid.htm": ["subject.Science.Chemistry"]}
    # a name FOCUSED_HOSTS maps is resolved from the map and fetched from its address
    mapped = ProbeScope(hosts={"labels.test": "127.0.0.2"})
    named = f"http://labels.test:{server.port}/labels.tsv"
    assert load_labels(named, mapped, seeds=[named]) == labels
    assert server.log == ["/labels.tsv", "/labels.tsv"]


@pytest.mark.parametrize(
    ("host", "scope", "seeds", "why"),
    [
        (
            "127.0.0.2",
            ProbeScope(allowed_domains=("127.0.0.1",)),
            ["http://127.0.0.1/"],
            "127.0.0.2 is not in FOCUSED_ALLOWED_DOMAINS",
        ),
        (
            "localhost",  # it would resolve (from /etc/hosts); it is not looked up
            ProbeScope(hosts={"seed.test": "127.0.0.2"}),
            ["http://seed.test/"],
            "localhost is not in FOCUSED_HOSTS, and with FOCUSED_HOSTS set no other name is"
            " looked up",
        ),
        (
            "127.0.0.2",
            ProbeScope(),
            ["http://seed.test/"],  # a name: no kind allowed before it resolves
            "127.0.0.2 is a loopback address, which FOCUSED_ALLOWED_NETWORKS does not allow",
        ),
        (
            "labels.test",
            ProbeScope(hosts={"labels.test": "127.0.0.2", "seed.test": "192.0.2.1"}),
            ["http://seed.test/"],
            "labels.test resolves to 127.0.0.2, a loopback address, which"
            " FOCUSED_ALLOWED_NETWORKS does not allow",
        ),
    ],
    ids=["allowed domains", "hosts", "address policy", "resolved address"],
)
def test_labels_out_of_scope_get_no_connection(
    server: LoopbackServer, host: str, scope: ProbeScope, seeds: list[str], why: str
) -> None:
    url = f"http://{host}:{server.port}/labels.tsv"
    with pytest.raises(LabelsError) as refused:
        load_labels(url, scope, seeds=seeds)
    assert str(refused.value) == (
        f"FOCUSED_LABELS: {url!r} is out of the crawl's scope ({why}); nothing was fetched"
    )
    assert server.connections == 0
    assert server.log == []


def test_a_link_local_address_is_never_fetched() -> None:
    """Not even with a seed there, nor inside FOCUSED_ALLOWED_NETWORKS' other networks."""
    url = "http://169.254.169.254/latest/meta-data/"
    scope = ProbeScope(networks=(ipaddress.ip_network("127.0.0.0/8"),))
    with pytest.raises(LabelsError, match=r"169\.254\.169\.254 is a link-local address"):
        load_labels(url, scope, seeds=[url])


def test_a_redirect_a_failure_and_too_many_bytes_are_one_line(server: LoopbackServer) -> None:
    seeds = [f"{server.url}/"]
    with pytest.raises(LabelsError) as moved:
        load_labels(f"{server.url}/moved.tsv", ProbeScope(), seeds=seeds)
    assert str(moved.value) == (
        f"FOCUSED_LABELS: '{server.url}/moved.tsv' cannot be fetched (answered 301 Moved"
        " Permanently, a redirect to http://127.0.0.1:9/labels.tsv, which is not followed;"
        " give that URL)"
    )
    with pytest.raises(LabelsError, match=r"cannot be fetched \(answered 404 Not Found\)$"):
        load_labels(f"{server.url}/absent.tsv", ProbeScope(), seeds=seeds)
    with pytest.raises(LabelsError) as tls:  # TLS with a server that speaks plain HTTP
        load_labels(f"https://127.0.0.2:{server.port}/labels.tsv", ProbeScope(), seeds=seeds)
    assert str(tls.value).endswith("(TLS with 127.0.0.2 failed (WRONG_VERSION_NUMBER))")
    size = len(LABELS * 100)
    with pytest.raises(LabelsError) as big:
        load_labels(f"{server.url}/big.tsv", ProbeScope(), seeds=seeds, max_bytes=1000)
    assert str(big.value).endswith(f"(it is {size:,} bytes, over the limit of 1,000)")
    assert server.log == ["/moved.tsv", "/absent.tsv", "/big.tsv"]


class Endless:
    """A raw HTTP server on 127.0.0.2 whose one answer has no ``Content-Length`` and
    never ends: ``gap`` seconds between chunks of ``chunk`` bytes."""

    def __init__(self, chunk: bytes, gap: float) -> None:
        self.sock = socket.create_server(("127.0.0.2", 0))
        self.port: int = self.sock.getsockname()[1]
        self.chunk, self.gap = chunk, gap
        self.sent = 0
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.serve, daemon=True)
        self.thread.start()

    def serve(self) -> None:
        try:
            conn, _ = self.sock.accept()
        except OSError:  # closed before any connection
            return
        with conn:
            conn.recv(65536)
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\n")
            while not self.stop.is_set():
                try:
                    conn.sendall(self.chunk)
                except OSError:  # the client gave up
                    return
                self.sent += len(self.chunk)
                time.sleep(self.gap)

    def close(self) -> None:
        self.stop.set()
        self.sock.close()
        self.thread.join(timeout=5)


def test_an_endless_answer_is_cut_at_the_size_limit() -> None:
    endless = Endless(b"x" * 65536, 0.0)
    try:
        url = f"http://127.0.0.2:{endless.port}/labels.tsv"
        with pytest.raises(LabelsError) as big:
            load_labels(url, ProbeScope(), seeds=[url], max_bytes=1_000_000)
    finally:
        endless.close()
    assert str(big.value).endswith("(it is over the limit of 1,000,000 bytes)")
    # the client stopped reading near the limit (the rest: the sockets' buffers)
    assert endless.sent < 32_000_000


def test_a_dripping_answer_is_given_up_at_the_time_limit() -> None:
    endless = Endless(b"/a\tb\n", 0.05)  # small lines, forever
    try:
        url = f"http://127.0.0.2:{endless.port}/labels.tsv"
        started = time.monotonic()
        with pytest.raises(LabelsError) as slow:
            load_labels(url, ProbeScope(), seeds=[url], timeout=0.5)
        took = time.monotonic() - started
    finally:
        endless.close()
    assert str(slow.value) == (
        f"FOCUSED_LABELS: {url!r} cannot be fetched (127.0.0.2 did not send it all within 0.5 s)"
    )
    assert 0.4 < took < 1.5


def test_the_host_header_names_no_port_for_its_scheme_s_default() -> None:
    """An https labels URL on port 443 sent ``Host: name:443`` (http.client's default
    port is 80's); a port that is not the scheme's stays named."""
    import socket

    from focused.web.fetch import _Connection

    for port, https, host in (
        (443, True, "labels.test"),
        (8443, True, "labels.test:8443"),
        (80, False, "labels.test"),
        (443, False, "labels.test:443"),
    ):
        ours, theirs = socket.socketpair()
        try:
            _Connection("labels.test", port, ours, 1.0, https=https).request("GET", "/l.tsv")
            assert f"\r\nHost: {host}\r\n" in theirs.recv(4096).decode()
        finally:
            ours.close()
            theirs.close()


def test_a_labels_file_with_a_byte_order_mark_keeps_its_first_row(tmp_path) -> None:
    """A labels TSV saved with a UTF-8 byte-order mark, as a file or as a URL: its first
    row's path was ``\\ufeff/wiki/Acid.htm``, so that page was never a target."""
    rows = b"/wiki/Acid.htm\tsubject.Science.Chemistry\n/wiki/Base.htm\tsubject.Science\n"
    expected = {
        "/wiki/Acid.htm": ["subject.Science.Chemistry"],
        "/wiki/Base.htm": ["subject.Science"],
    }
    path = tmp_path / "labels.tsv"
    path.write_bytes(b"\xef\xbb\xbf" + rows)
    assert load_labels(str(path)) == expected
    served = LoopbackServer("127.0.0.2", lambda _: (200, TSV, b"\xef\xbb\xbf" + rows))
    try:
        url = f"{served.url}/labels.tsv"
        assert load_labels(url, ProbeScope(), seeds=[f"{served.url}/"]) == expected
    finally:
        served.close()
