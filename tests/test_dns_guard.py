"""The tests' DNS guard (``tests/dnsguard``): a lookup of a name that is no IP literal
fails loudly, in the test process and in the crawls it starts, before any query.

The names are under ``.invalid`` (RFC 6761: they never resolve), so even a broken guard
would learn nothing from a DNS server; the crawl is started only once a plain child
process has shown that the guard is on in children.
"""

from __future__ import annotations

import errno
import os
import socket
import subprocess
import sys
import urllib.request
from pathlib import Path

import focused_dns_guard
import pytest
from focused_dns_guard import DNSGuardError, Refusals

from tests.crawling import crawl_real_web

NAME = "dns-guard-probe.invalid"


@pytest.mark.parametrize(
    "lookup",
    [
        lambda: socket.getaddrinfo(NAME, 80),
        lambda: socket.getaddrinfo(NAME.encode(), 80, socket.AF_INET, socket.SOCK_STREAM),
        lambda: socket.gethostbyname(NAME),
        lambda: socket.gethostbyname_ex(NAME),
        lambda: socket.create_connection((NAME, 80), timeout=1),
        lambda: socket.socket().connect((NAME, 80)),
        lambda: socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b"x", (NAME, 53)),
        lambda: urllib.request.urlopen(f"http://{NAME}/", timeout=1),
    ],
    ids=["getaddrinfo", "bytes", "gethostbyname", "_ex", "create", "connect", "sendto", "url"],
)
def test_a_name_lookup_in_the_test_process_raises(dns_refusals: Refusals, lookup) -> None:
    with pytest.raises(OSError, match=NAME) as raised:  # urllib wraps it in a URLError
        lookup()
    assert isinstance(raised.value, DNSGuardError) or isinstance(
        getattr(raised.value, "reason", None), DNSGuardError
    )
    assert [NAME in line for line in dns_refusals.take()] == [True]


def test_localhost_and_reverse_lookups_are_refused_literals_are_not(
    dns_refusals: Refusals,
) -> None:
    """``localhost`` is a name (its answer depends on /etc/hosts and nsswitch.conf), a
    reverse lookup a PTR query; an IP literal, in any spelling the C library reads, is no
    lookup."""
    with pytest.raises(DNSGuardError, match="'localhost'"):
        socket.getaddrinfo("localhost", 80)
    with pytest.raises(DNSGuardError, match="127.0.0.2"):
        socket.gethostbyaddr("127.0.0.2")
    with pytest.raises(DNSGuardError, match="127.0.0.2"):
        socket.getnameinfo(("127.0.0.2", 80), 0)
    assert len(dns_refusals.take()) == 3
    assert socket.getnameinfo(("127.0.0.2", 80), socket.NI_NUMERICHOST | socket.NI_NUMERICSERV)
    assert socket.getfqdn("127.0.0.2") == "127.0.0.2"  # http.server asks it: no lookup
    for literal in ("127.0.0.2", "::1", "127.1", "0x7f.0.0.1"):
        assert socket.getaddrinfo(literal, 80, type=socket.SOCK_STREAM)
    assert socket.gethostbyname("127.0.0.3") == "127.0.0.3"
    assert socket.getaddrinfo(None, 80)  # the local address
    with socket.socket() as sock:
        sock.bind(("", 0))  # any address: no lookup
    assert dns_refusals.take() == []


def test_a_child_with_an_environment_of_its_own_is_guarded(dns_refusals: Refusals) -> None:
    """A child started with ``env=`` (no ``PYTHONPATH``, as several tests build it) runs
    with the guard too, and its refusal reaches the test."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "FOCUSED_DNS_GUARD")}
    code = f"import socket; socket.getaddrinfo({NAME!r}, 80)"
    child = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60
    )
    assert child.returncode == 1
    assert f"DNSGuardError: [Errno {socket.EAI_NONAME}] DNS guard: getaddrinfo('{NAME}')" in (
        child.stderr
    )
    assert [NAME in line for line in dns_refusals.take()] == [True]


@pytest.mark.parametrize(
    "resolver",
    [
        "focused.addressfilter.FocusedResolver",  # the project's: Twisted's GAIResolver
        "scrapy.resolver.CachingThreadedResolver",  # Scrapy's default: gethostbyname
    ],
)
def test_a_crawl_subprocess_refuses_a_host_name(
    tmp_path: Path,
    project_root: Path,
    venv_scrapy: list[str],
    dns_refusals: Refusals,
    resolver: str,
) -> None:
    """A real crawl of a host name: its resolver's lookup is refused (the crawl sees
    a name that does not resolve), and says so in its log and to the test."""
    test_a_child_with_an_environment_of_its_own_is_guarded(dns_refusals)  # the guard is on
    result = crawl_real_web(
        project_root,
        venv_scrapy,
        tmp_path / "out",
        f"http://{NAME}:9/",
        f"TWISTED_DNS_RESOLVER={resolver}",
        "RETRY_TIMES=0",
    )
    log = result.stderr + result.stdout
    assert f"DNS guard: {'getaddrinfo' if 'Focused' in resolver else 'gethostbyname'}" in log
    assert "refused: tests use IP literals in 127.0.0.0/8 only" in log
    assert f"DNS lookup failed for {NAME}" in log
    refused = dns_refusals.take()
    assert refused and all(NAME in line for line in refused)
    assert focused_dns_guard.ENV in os.environ


def test_a_name_the_guard_answers_is_no_query(
    dns_refusals: Refusals, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``FOCUSED_DNS_GUARD_HOSTS`` stands in for ``/etc/hosts`` in a child: its names get
    their loopback literal from every lookup function, with no refusal; another name is
    still refused, and a name the table leads off loopback stays refused."""
    code = (
        "import socket\n"
        "print(socket.gethostbyname('sneaky.test'), socket.gethostbyname_ex('SNEAKY.test.')[2],"
        " socket.getaddrinfo('sneaky.test', 80, socket.AF_INET)[0][4][0])\n"
        "try:\n    socket.gethostbyname('other.test')\n"
        "except socket.gaierror:\n    print('refused')\n"
    )
    monkeypatch.setenv("FOCUSED_DNS_GUARD_HOSTS", '{"sneaky.test": "127.0.0.9"}')
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=dict(os.environ)
    )
    assert done.stdout.split("\n")[:2] == ["127.0.0.9 ['127.0.0.9'] 127.0.0.9", "refused"]
    assert len(dns_refusals.take()) == 1  # other.test
    monkeypatch.setenv("FOCUSED_DNS_GUARD_HOSTS", '{"sneaky.test": "10.0.0.1"}')
    done = subprocess.run(
        [sys.executable, "-c", "import socket\nsocket.gethostbyname('sneaky.test')"],
        capture_output=True,
        text=True,
        env=dict(os.environ),
    )
    assert done.returncode != 0 and "DNSGuardError" in done.stderr
    refusals = dns_refusals.take()
    assert any("sneaky.test -> 10.0.0.1" in x for x in refusals), refusals


@pytest.mark.parametrize("host", ["10.0.0.1", "169.254.169.254", "0.0.0.0", "0xa9fea9fe"])
def test_a_connection_off_loopback_is_refused_before_any_packet(
    dns_refusals: Refusals, host: str
) -> None:
    """A test whose crawl slipped past the scope checks tries to connect off loopback:
    the guard refuses it before anything is sent, and the test fails. The socket call
    the guard would make is recorded here, not made (were the guard broken, this test
    must not send the packet itself)."""
    made: list[tuple[str, object]] = []

    def call(how: str) -> object:
        def real(sock: socket.socket, *args: object) -> int:
            made.append((how, args[-1]))
            return 0

        return focused_dns_guard._address_method(real, how, False, True)

    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        assert call("connect_ex")(s, (host, 80)) == errno.ECONNREFUSED
        with pytest.raises(ConnectionRefusedError):
            call("connect")(s, (host, 80))
        with pytest.raises(ConnectionRefusedError):
            call("sendto")(s, b"x", (host, 53))
        assert made == []
        refusals = dns_refusals.take()
        assert len(refusals) == 3 and "never another address" in refusals[0], refusals
        # loopback, in any spelling the C library reads, is let through
        for loopback in ("127.0.0.1", "127.1", "0x7f000001", "127.0.0.2"):
            call("sendto")(s, b"x", (loopback, 9))
        assert [m[1][0] for m in made] == ["127.0.0.1", "127.1", "0x7f000001", "127.0.0.2"]
        assert dns_refusals.take() == []
    # the guard is the one installed on the socket class
    assert socket.socket.connect_ex.__name__ == "connect_ex"
    assert socket.socket.connect_ex is not focused_dns_guard._socket.socket.connect_ex
