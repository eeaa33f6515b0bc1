"""Internal addresses in every spelling (focused.web.addresses, focused.addressfilter)."""

from __future__ import annotations

import ipaddress
import time

import pytest
from scrapy import Request
from scrapy.exceptions import IgnoreRequest

from focused.addressfilter import AddressFilterMiddleware
from focused.web.addresses import (
    AddressPolicy,
    canonical_host,
    classify,
    parse_host,
    parse_networks,
)
from focused.web.sanitize import canonical_ip_url

LOOPBACK_SPELLINGS = [
    "127.0.0.1",
    "0x7f000001",
    "0X7F000001",
    "2130706433",
    "0177.0.0.1",
    "0x7f.0.0.1",
    "0x7f.1",
    "127.1",
    "127.0.1",
    "127.0.0.1.",
    "[::ffff:127.0.0.1]",
    "::ffff:7f00:1",
    "[::1]",
    "::1%lo",
    "[::1%25lo]",
]


@pytest.mark.parametrize("host", LOOPBACK_SPELLINGS)
def test_every_spelling_of_loopback_is_loopback(host):
    address = parse_host(host)
    assert address is not None, host
    assert classify(address) == "loopback", host
    if address.version == 4:
        assert address == ipaddress.IPv4Address("127.0.0.1") or address.is_loopback


@pytest.mark.parametrize(
    ("host", "kind"),
    [
        ("169.254.169.254", "link_local"),
        ("0xa9fea9fe", "link_local"),  # 169.254.169.254
        ("2852039166", "link_local"),
        ("[::ffff:169.254.169.254]", "link_local"),
        ("fe80::1%eth0", "link_local"),
        ("0.0.0.0", "unspecified"),
        ("0", "unspecified"),
        ("[::]", "unspecified"),
        ("10.0.0.1", "private"),
        ("012.0.0.1", "private"),  # octal 10.0.0.1
        ("10.1", "private"),
        ("172.16.5.4", "private"),
        ("192.168.1.1", "private"),
        ("100.64.0.1", "private"),  # shared address space (carrier-grade NAT)
        ("fd12:3456::1", "private"),
        ("fec0::1", "private"),  # deprecated site-local (RFC 3879)
        ("[fefe::1]", "private"),
        # 6to4 (2002::/16) has the kind of the IPv4 address it embeds
        ("[2002:a00:1::1]", "private"),  # 10.0.0.1
        ("2002:a9fe:a9fe::", "link_local"),  # 169.254.169.254
        ("2002:7f00:1::", "loopback"),
        ("2002::1", "unspecified"),
        ("2002:c0a8:101::", "private"),  # 192.168.1.1
        # Teredo and NAT64: no public address behind them is reachable here
        ("2001:0:4136:e378:8000:63bf:3fff:fdd2", "reserved"),
        ("64:ff9b::a00:1", "reserved"),
        ("::a00:1", "reserved"),  # IPv4-compatible (deprecated)
        ("224.0.0.1", "multicast"),
        ("ff02::1", "multicast"),
        ("240.0.0.1", "reserved"),
        ("192.0.2.1", "reserved"),  # documentation
        # IETF protocol assignments 192.0.0.0/24, global to Python 3.11.7's ipaddress
        ("192.0.0.192", "reserved"),  # Oracle Cloud's metadata service
        ("0xc00000c0", "reserved"),  # 192.0.0.192
        ("[::ffff:192.0.0.192]", "reserved"),
        ("2002:c000:c0::", "reserved"),  # 6to4 of 192.0.0.192
        ("192.0.0.9", "reserved"),
        ("192.0.0.255", "reserved"),
        ("255.255.255.255", "reserved"),
    ],
)
def test_internal_kinds(host, kind):
    address = parse_host(host)
    assert address is not None, host
    assert classify(address) == kind


@pytest.mark.parametrize(
    "host", ["93.184.215.14", "8.8.8.8", "2606:4700::1111", "0x5db8d70e", "2002:808:808::1"]
)
def test_public_addresses_are_public(host):
    address = parse_host(host)
    assert address is not None and classify(address) is None


@pytest.mark.parametrize(
    "host", ["example.org", "0x7f.example", "127.0.0.1.example", "1.2.3.4.5", "256.1.1.1", "", None]
)
def test_names_and_bad_numbers_are_not_addresses(host):
    assert parse_host(host) is None


def test_policy_seed_kinds_and_networks():
    policy = AddressPolicy()
    loopback, private = parse_host("127.0.0.1"), parse_host("10.0.0.1")
    metadata = parse_host("169.254.169.254")
    assert loopback and private and metadata
    assert policy.refusal(loopback) == "loopback"
    policy.add_seed("127.0.0.1")
    assert policy.refusal(loopback) is None
    assert policy.refusal(private) == "private"  # a loopback seed allows only loopback
    assert policy.refusal(parse_host("0.0.0.0")) == "unspecified"
    policy.add_seed("169.254.10.10")  # a link-local seed allows nothing
    assert policy.refusal(metadata) == "link_local"
    policy.add_seed("www.example.org")
    assert policy.seed_hosts == {"www.example.org"}
    allowed = AddressPolicy(networks=parse_networks(["10.0.0.0/8", "169.254.169.254"]))
    assert allowed.refusal(private) is None and allowed.refusal(metadata) is None
    assert allowed.refusal(parse_host("[::ffff:10.1.2.3]")) is None
    assert allowed.refusal(parse_host("[2002:a00:1::1]")) is None  # 6to4 of 10.0.0.1
    assert allowed.refusal(parse_host("[2002:c0a8:1::]")) == "private"  # of 192.168.0.1
    assert allowed.refusal(parse_host("192.168.0.1")) == "private"
    # a private seed (an intranet crawl) does not allow 192.0.0.0/24
    intranet = AddressPolicy()
    intranet.add_seed("10.0.0.1")
    assert intranet.refusal(private) is None
    assert intranet.refusal(parse_host("192.0.0.192")) == "reserved"
    with pytest.raises(ValueError):
        parse_networks(["not a network"])


def test_middleware_refuses_literal_spellings_without_a_loopback_seed():
    mw = AddressFilterMiddleware(AddressPolicy(networks=parse_networks(["127.0.0.1/32"])))
    mw.process_request(Request("http://127.0.0.1:8080/ok"))  # the named network
    mw.process_request(Request("http://example.org/"))  # a name: the resolver checks it
    for host in ("0x7f000002", "2130706434", "0177.0.0.2", "127.2", "[::ffff:127.0.0.2]"):
        with pytest.raises(IgnoreRequest):
            mw.process_request(Request(f"http://{host}:8080/"))
    for host in (
        "169.254.169.254",
        "[fe80::1%25eth0]",
        "10.0.0.1",
        "0.0.0.0",
        "[::1]",
        "[2002:a00:1::1]",
        "[2002:a9fe:a9fe::]",
        "[fec0::1]",
        "192.0.0.192",  # Oracle Cloud's metadata service, and its spellings
        "0xc00000c0",
        "[::ffff:192.0.0.192]",
    ):
        with pytest.raises(IgnoreRequest):
            mw.process_request(Request(f"http://{host}/latest/meta-data/"))
    mw.policy.refused_names["metadata.test"] = "link_local"  # the resolver refused it
    with pytest.raises(IgnoreRequest):
        mw.process_request(Request("http://metadata.test/"))


def test_a_name_that_does_not_resolve_here_is_not_sent_through_a_proxy(monkeypatch):
    """Its address could not be checked: refused before the proxy, counted (no lookup is
    made here: the verdict on an empty resolution)."""
    from scrapy.statscollectors import MemoryStatsCollector
    from scrapy.utils.test import get_crawler

    from focused import addressfilter
    from focused.web.addresses import AddressPolicy

    monkeypatch.setattr(addressfilter._Active, "policy", AddressPolicy())
    stats = MemoryStatsCollector(get_crawler())
    mw = addressfilter.ProxyAddressFilterMiddleware(stats)
    request = Request("http://unknown.test/", meta={"proxy": "http://127.0.0.2:3128"})
    with pytest.raises(IgnoreRequest, match="unresolved"):
        mw._verdict(request, "unknown.test", [])
    assert stats.get_value("focused/refused/unresolved") == 1
    # the refusal is remembered: the next request to the name is refused without a lookup
    with pytest.raises(IgnoreRequest, match="unresolved"):
        mw.process_request(Request("http://unknown.test/again", meta={"proxy": "p"}))
    assert stats.get_value("focused/refused/unresolved") == 2
    # resolved to an allowed address: let through, and not resolved again
    mw._verdict(request, "known.test", [object()])
    assert mw.process_request(Request("http://known.test/x", meta={"proxy": "p"})) is None
    # a proxy trusted to resolve (FOCUSED_PROXY_RESOLVES) gets the name
    trusting = addressfilter.ProxyAddressFilterMiddleware(stats, proxy_resolves=True)
    trusting._verdict(request, "unknown.test", [])
    assert trusting.process_request(Request("http://unknown.test/", meta={"proxy": "p"})) is None
    # without a proxy nothing is resolved here (the resolver checks at connection)
    assert mw.process_request(Request("http://unknown.test/")) is None


def test_a_name_resolves_only_where_every_running_crawl_allows_it(monkeypatch):
    """Two crawls in one process (a ``CrawlerProcess`` script) share the reactor's
    resolver, which cannot tell whose lookup it makes: a host name gets an address only
    when every running crawl's policy allows it, so the loopback that a sandbox crawl's
    seeds allow is not opened to a crawl beside it whose seeds do not."""
    from scrapy.utils.test import get_crawler
    from twisted.internet import reactor

    from focused import addressfilter
    from focused.web.addresses import AddressPolicy

    monkeypatch.setattr(addressfilter._Active, "crawls", {})
    monkeypatch.setattr(addressfilter._Active, "policy", None)
    resolver = addressfilter.FocusedResolver(reactor, 0, hosts={"inside.test": "127.0.0.1"})

    def resolve(name: str) -> list[str]:
        got = addressfilter._Collected()
        resolver.resolveHostName(got, name, 80)  # a FOCUSED_HOSTS name: no lookup made
        assert got.done.called
        return [a.host for a in got.addresses]

    sandbox, other = get_crawler(), get_crawler()
    allows_loopback, strict = AddressPolicy(), AddressPolicy()
    allows_loopback.add_seed("127.0.0.1")
    addressfilter._Active.add(sandbox, allows_loopback, None)
    assert resolve("inside.test") == ["127.0.0.1"]

    addressfilter._Active.add(other, strict, None)
    loose = get_crawler()  # a third crawl, made last, that allows loopback
    addressfilter._Active.add(loose, AddressPolicy(allowed_kinds={"loopback"}), None)
    other.crawling = False  # stopping: its queued downloads still resolve under its policy
    assert resolve("inside.test") == []  # refused while the strict crawl is open
    assert strict.refused_names["inside.test"] == "loopback"  # its requests dropped
    assert "inside.test" not in allows_loopback.refused_names  # this one's not

    # the strict crawl's request through a proxy: refused although the crawl made last
    # (the loose one) does not refuse the name itself
    proxied = Request("http://inside.test/", meta={"proxy": "http://127.0.0.2:3128"})
    trusting = addressfilter.ProxyAddressFilterMiddleware(None, proxy_resolves=True)
    with pytest.raises(IgnoreRequest, match="loopback"):
        trusting._verdict(proxied, "inside.test", [])
    assert addressfilter.name_refusal(proxied) is not None

    addressfilter._Active.remove(other)  # the strict crawl's spider closed
    monkeypatch.setattr(addressfilter._Active, "policy", allows_loopback)
    assert resolve("inside.test") == ["127.0.0.1"]


@pytest.mark.parametrize("name", ["a..b", ".h.test", "h.test..", "a" * 64 + ".test"])
def test_a_name_getaddrinfo_cannot_encode_fails_at_once(name):
    """Python's ``getaddrinfo`` IDNA-encodes the name; for an empty or over-63-character
    label it raised ``UnicodeError`` in Twisted's resolver thread, which never completed
    the resolution: the download hung until ``DOWNLOAD_TIMEOUT`` and "Unhandled error in
    Deferred" was logged. It resolves to nothing at once (no lookup is made)."""
    from twisted.internet import reactor

    from focused import addressfilter

    resolver = addressfilter.FocusedResolver(reactor, 0)
    got = addressfilter._Collected()
    resolver.resolveHostName(got, name, 80)
    assert got.done.called
    assert got.addresses == []


@pytest.mark.parametrize(
    ("name", "address"),
    [("127.0.0.2.", "127.0.0.2"), ("0x7f.1", "127.0.0.1"), ("2130706433", "127.0.0.1")],
)
def test_an_address_in_another_spelling_is_that_address_without_a_lookup(
    monkeypatch, name: str, address: str
) -> None:
    """A host that spells an address Twisted does not take for one is that address, as
    browsers read it, at once: getaddrinfo sent ``127.0.0.2.`` to the DNS servers as a
    name (a lookup off this machine, then a DNS error). Resolved synchronously: no
    lookup thread."""
    from twisted.internet import reactor

    from focused import addressfilter
    from focused.web.addresses import AddressPolicy

    monkeypatch.setattr(addressfilter._Active, "crawls", {})
    monkeypatch.setattr(addressfilter._Active, "policy", None)
    loopback = AddressPolicy(allowed_kinds={"loopback"})
    resolver = addressfilter.FocusedResolver(reactor, 0, policy=loopback)
    got = addressfilter._Collected()
    resolver.resolveHostName(got, name, 80)
    assert got.done.called
    assert [a.host for a in got.addresses] == [address]
    refused = addressfilter._Collected()
    addressfilter.FocusedResolver(reactor, 0).resolveHostName(refused, name, 80)
    assert refused.done.called and refused.addresses == []  # loopback not allowed


@pytest.mark.parametrize("name", ["localhost", "LocalHost.", "shop.localhost"])
def test_localhost_is_loopback_without_a_lookup(monkeypatch, name: str) -> None:
    """``localhost`` (and names under ``.localhost``) is 127.0.0.1 at once (RFC 6761,
    as browsers do): the hostile sandbox links it, and its lookup asked the system
    resolver, which answers it from /etc/hosts only where /etc/hosts has it (else a DNS
    query). Under the tests' DNS guard a lookup would fail; the probe does the same."""
    from twisted.internet import reactor

    from focused import addressfilter
    from focused.web.addresses import AddressPolicy, localhost_address
    from focused.web.probe import ProbeScope, _resolve

    monkeypatch.setattr(addressfilter._Active, "crawls", {})
    monkeypatch.setattr(addressfilter._Active, "policy", None)
    loopback = AddressPolicy(allowed_kinds={"loopback"})
    got = addressfilter._Collected()
    addressfilter.FocusedResolver(reactor, 0, policy=loopback).resolveHostName(got, name, 80)
    assert got.done.called
    assert [a.host for a in got.addresses] == ["127.0.0.1"]
    # FOCUSED_HOSTS still maps it; a name that merely ends in "localhost" is a name
    mapped = addressfilter._Collected()
    hosts = {"localhost": "127.0.0.2"}
    addressfilter.FocusedResolver(reactor, 0, hosts, loopback).resolveHostName(mapped, name, 80)
    assert [a.host for a in mapped.addresses] == (
        ["127.0.0.2"] if name.lower().rstrip(".") == "localhost" else ["127.0.0.1"]
    )
    assert localhost_address("notlocalhost") is None
    assert [str(a) for a in _resolve(name, 80, ProbeScope(), time.monotonic() + 1)] == ["127.0.0.1"]


@pytest.mark.parametrize(
    ("host", "written"),
    [
        ("0x7f000001", "127.0.0.1"),
        ("2130706433", "127.0.0.1"),
        ("0177.0.0.1", "127.0.0.1"),
        ("00177.0.0.1", "127.0.0.1"),
        ("127.1", "127.0.0.1"),
        ("0x7f.1", "127.0.0.1"),
        ("127.0.0.2.", "127.0.0.2"),
        ("[::FFFF:127.0.0.1]", "[::ffff:7f00:1]"),
        ("[0:0:0:0:0:0:0:1]", "[::1]"),
        # written so already, a name, no address: as they are
        ("127.0.0.1", None),
        ("[::1]", None),
        ("[fe80::1%25eth0]", None),
        ("3com.com", None),
        ("123.com", None),
        ("1.2.3.999", None),
        ("1.2.3.4.5", None),
    ],
)
def test_an_ip_host_is_written_as_browsers_write_it(host: str, written: str | None) -> None:
    assert canonical_host(host) == written


def test_canonical_ip_url_keeps_the_rest_of_the_url() -> None:
    assert canonical_ip_url("http://0x7f000002:8080/a?b=1#c") == "http://127.0.0.2:8080/a?b=1#c"
    assert canonical_ip_url("https://2130706434/") == "https://127.0.0.2/"
    assert canonical_ip_url("http://[::FFFF:127.0.0.2]:80/x") == "http://[::ffff:7f00:2]:80/x"
    for url in ("http://127.0.0.2:8080/a", "https://en.wikipedia.org/wiki/Acid", "mailto:x@y"):
        assert canonical_ip_url(url) == url
