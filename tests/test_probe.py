"""The start-up probe of ``FOCUSED_WEB=auto`` keeps to the crawl's scope and its time limit.

Real sockets on 127.0.0.0/8: a :class:`~tests.loopback.Listener` counts the connections
made to it. The names stand for hosts elsewhere and are mapped by ``FOCUSED_HOSTS``, or
refused before any lookup: no DNS query is made.
"""

from __future__ import annotations

import ipaddress
import time
from collections.abc import Iterator

import pytest

from focused.web.probe import Probe, ProbeScope, probe
from tests.loopback import Listener


@pytest.fixture
def listener() -> Iterator[Listener]:
    server = Listener("127.0.0.2")
    yield server
    server.close()


def test_an_address_the_policy_refuses_gets_no_connection(listener: Listener) -> None:
    url = f"http://127.0.0.2:{listener.port}/"
    answer = probe(url, ProbeScope(), seeds=())  # no seed of its kind: loopback refused
    assert answer == Probe(
        "127.0.0.2 is a loopback address, which FOCUSED_ALLOWED_NETWORKS does not allow",
        refused=True,
    )
    assert listener.connections() == 0
    # the same probe within the policy connects: the listener sees it
    allowed = ProbeScope(networks=(ipaddress.ip_network("127.0.0.2/32"),))
    assert probe(url, allowed, seeds=()) == Probe(None)
    assert listener.connections() == 1


def test_a_name_is_checked_after_it_resolves(listener: Listener) -> None:
    scope = ProbeScope(hosts={"seed.test": "127.0.0.2", "metadata.test": "169.254.169.254"})
    url = f"http://seed.test:{listener.port}/"
    answer = probe(url, scope, seeds=[f"http://other.test:{listener.port}/"])
    assert answer.refused and answer.reason == (
        "seed.test resolves to 127.0.0.2, a loopback address, which"
        " FOCUSED_ALLOWED_NETWORKS does not allow"
    )
    assert listener.connections() == 0
    # a seed's own kind is allowed, as in the crawl (the probed URL is the first seed)
    assert probe(url, scope).answered
    assert listener.connections() == 1
    # a link-local seed allows nothing: the metadata service is never connected to
    metadata = probe("http://metadata.test/latest/", scope)
    assert metadata.refused and "169.254.169.254, a link-local address" in str(metadata.reason)
    literal = probe("http://169.254.169.254/latest/", scope)
    assert literal.refused and "169.254.169.254 is a link-local address" in str(literal.reason)


def test_a_name_off_focused_hosts_or_allowed_domains_is_not_looked_up(
    listener: Listener,
) -> None:
    port = listener.port
    mapped = ProbeScope(hosts={"elsewhere.test": "127.0.0.2"})
    # localhost would resolve (from /etc/hosts) and answer: not looked up, no connection
    answer = probe(f"http://localhost:{port}/", mapped)
    assert answer == Probe(
        "localhost is not in FOCUSED_HOSTS, and with FOCUSED_HOSTS set no other name is looked up",
        refused=True,
    )
    domains = ProbeScope(allowed_domains=("example.org",))
    off = probe(f"http://127.0.0.2:{port}/", domains)
    assert off == Probe("127.0.0.2 is not in FOCUSED_ALLOWED_DOMAINS", refused=True)
    assert listener.connections() == 0
    # a subdomain of an allowed domain is probed
    sub = ProbeScope(hosts={"www.example.org": "127.0.0.2"}, allowed_domains=("example.org",))
    assert probe(f"http://www.example.org:{port}/", sub).answered
    assert listener.connections() == 1


def test_a_host_that_does_not_answer_holds_the_probe_for_its_time_limit_only() -> None:
    hanging = Listener("127.0.0.2", full=True)  # its SYNs dropped: connect() hangs
    try:
        scope = ProbeScope(hosts={"slow.test": "127.0.0.2"})
        started = time.monotonic()
        answer = probe(f"http://slow.test:{hanging.port}/", scope, timeout=0.5)
        took = time.monotonic() - started
    finally:
        hanging.close()
    assert answer == Probe(f"slow.test does not answer on port {hanging.port} within 0.5 s")
    assert 0.4 < took < 1.5
