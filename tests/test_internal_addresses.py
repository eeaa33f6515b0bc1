"""No connection to an internal address: real crawls (Scrapy in a subprocess, the
project's downloader middlewares and resolver) against loopback servers.

Traffic never leaves 127.0.0.0/8: the "internal" victim is a server on 127.0.0.2 that
logs every request, the crawl may fetch only 127.0.0.1/32 (``FOCUSED_ALLOWED_NETWORKS``),
and the host names that stand for the metadata service or an intranet are mapped by
``FOCUSED_HOSTS`` (no DNS query).
"""

from __future__ import annotations

import socket
import weakref
from collections.abc import Iterator

import pytest

from tests.loopback import RUN_PROBE, LoopbackServer, run_probe

pytestmark = pytest.mark.integration

SCRIPT = (
    """
import json, sys
import scrapy
from scrapy.crawler import CrawlerProcess
from focused import settings as project

args = json.loads(sys.argv[1])

class Probe(scrapy.Spider):
    name = "address-probe"
    if args["seeds"]:  # what the policy reads as seeds; else no seed kind is allowed
        start_urls = args["start"]

    async def start(self):
        for url in args["start"]:
            yield scrapy.Request(url)

    def parse(self, response):
        for href in response.xpath("//a/@href").getall():
            yield response.follow(href, callback=self.leaf, errback=self.failed)

    def leaf(self, response):
        print("FETCHED", response.url, flush=True)

    def failed(self, failure):
        pass

process = CrawlerProcess({
    "ROBOTSTXT_OBEY": True,
    "DOWNLOADER_MIDDLEWARES": project.DOWNLOADER_MIDDLEWARES,
    "TWISTED_DNS_RESOLVER": project.TWISTED_DNS_RESOLVER,
    "RETRY_TIMES": 0,
    "DOWNLOAD_TIMEOUT": 5,
    "TELNETCONSOLE_ENABLED": False,
    "LOG_LEVEL": "INFO",
    **args["settings"],
})
"""
    + RUN_PROBE
)


class Server(LoopbackServer):
    """A loopback server that logs its requests; ``pages`` maps a path to (status,
    headers, body), read at each request."""

    def __init__(self, host: str, pages: dict[str, tuple[int, dict[str, str], bytes]]) -> None:
        super().__init__(host, lambda path: pages.get(path, (404, {}, b"not found")))


def page(*hrefs: str) -> tuple[int, dict[str, str], bytes]:
    links = "".join(f'<a href="{h}">link</a>' for h in hrefs)
    return 200, {}, f"<html><body>{links}</body></html>".encode()


def crawl(
    start: list[str], settings: dict[str, object], seeds: bool = True
) -> tuple[dict[str, object], str]:
    """Crawl ``start`` and the links of its pages; ``seeds``: the spider shows ``start``
    as its ``start_urls`` (the seeds whose address kind is allowed)."""
    args = {"start": start, "settings": settings, "seeds": seeds}
    stats, proc = run_probe(SCRIPT, args)
    return stats, proc.stdout + proc.stderr


@pytest.fixture
def victim() -> Iterator[Server]:
    server = Server("127.0.0.2", {"/robots.txt": (404, {}, b""), "/secret": page()})
    yield server
    server.close()


def test_no_spelling_and_no_redirect_reaches_an_internal_address(victim: Server) -> None:
    v = victim.port
    spellings = ["0x7f000002", "2130706434", "0177.0.0.2", "127.2", "[::ffff:127.0.0.2]"]
    hrefs = [f"http://{host}:{v}/secret" for host in spellings]
    hrefs += [
        f"http://sneaky.test:{v}/secret",  # a name that resolves to 127.0.0.2
        f"http://sneaky.test.:{v}/secret",
        "http://metadata.test/latest/meta-data/",  # -> 169.254.169.254: never connected
        "http://intranet.test/",  # -> 10.0.0.1
        "http://169.254.169.254/latest/meta-data/",
        "http://0xa9fea9fe/latest/meta-data/",
        "http://10.0.0.1/",
        "http://[fe80::1%25eth0]/",
        "/redirect-internal",
        "/redirect-metadata",
        "/redirect-name",
        "http://ok.test:{port}/ok",  # a name that resolves to the allowed 127.0.0.1
        "/ok",
    ]
    pages: dict[str, tuple[int, dict[str, str], bytes]] = {"/robots.txt": (404, {}, b"")}
    site = Server("127.0.0.1", pages)
    try:
        hrefs = [h.replace("{port}", str(site.port)) for h in hrefs]
        pages["/"] = page(*hrefs)
        pages["/ok"] = page()
        pages["/redirect-internal"] = (302, {"Location": f"http://127.2:{v}/secret"}, b"")
        pages["/redirect-metadata"] = (302, {"Location": "http://169.254.169.254/"}, b"")
        pages["/redirect-name"] = (302, {"Location": f"http://sneaky.test:{v}/secret"}, b"")
        hosts = {
            "sneaky.test": "127.0.0.2",
            "metadata.test": "169.254.169.254",
            "intranet.test": "10.0.0.1",
            "ok.test": "127.0.0.1",
        }
        stats, log = crawl(
            [f"http://127.0.0.1:{site.port}/"],
            {"FOCUSED_ALLOWED_NETWORKS": ["127.0.0.1/32"], "FOCUSED_HOSTS": hosts},
            seeds=False,
        )
    finally:
        site.close()
    assert victim.log == []  # not even robots.txt
    fetched = {line.split()[1] for line in log.splitlines() if line.startswith("FETCHED")}
    assert fetched == {f"http://127.0.0.1:{site.port}/ok", f"http://ok.test:{site.port}/ok"}
    # Counted per refusal: a name is refused when its robots.txt is resolved and again
    # when the request that waited for it is. 5 literal spellings, sneaky.test (with and
    # without its trailing dot: one name), the redirects to 127.2 and sneaky.test.
    assert stats["focused/refused/loopback"] >= 5 + 1 + 2
    # metadata.test, 169.254.169.254, 0xa9fea9fe, fe80::1, the redirect to the metadata IP
    assert stats["focused/refused/link_local"] >= 5
    assert stats["focused/refused/private"] >= 2  # intranet.test, 10.0.0.1
    assert "downloader/exception_type_count/twisted.internet.error.ConnectError" not in stats
    assert "is a link-local address (169.254.169.254)" in log
    # a refused name fails as a DNS error inside Twisted: it is a refusal, not a DNS
    # failure (no "DNS lookup failed" line, no focused/errors/dns, robots.txt not
    # reported unreachable)
    assert "DNS lookup failed" not in log
    assert "focused/errors/dns" not in stats
    assert "focused/robotstxt/unreachable" not in stats


def test_a_loopback_seed_allows_loopback_only() -> None:
    """The sandbox's case: seeds on 127.0.0.1 may reach other loopback spellings, never
    an unspecified, private or link-local address."""
    pages: dict[str, tuple[int, dict[str, str], bytes]] = {"/robots.txt": (404, {}, b"")}
    site = Server("127.0.0.1", pages)
    try:
        p = site.port
        pages["/"] = page(
            f"http://0x7f000001:{p}/a",
            f"http://127.1:{p}/a",
            f"http://0.0.0.0:{p}/a",
            f"http://[::ffff:10.0.0.1]:{p}/a",
            "http://169.254.169.254/a",
        )
        pages["/a"] = page()
        stats, log = crawl([f"http://127.0.0.1:{p}/"], {})
    finally:
        site.close()
    fetched = {line.split()[1] for line in log.splitlines() if line.startswith("FETCHED")}
    assert fetched == {f"http://0x7f000001:{p}/a", f"http://127.1:{p}/a"}
    assert stats["focused/refused/unspecified"] == 1
    assert stats["focused/refused/private"] == 1
    assert stats["focused/refused/link_local"] == 1
    assert "focused/refused/loopback" not in stats


def _has_ipv6_loopback() -> bool:
    try:
        with socket.socket(socket.AF_INET6) as s:
            s.bind(("::1", 0))
        return True
    except OSError:
        return False


@pytest.mark.skipif(not _has_ipv6_loopback(), reason="no IPv6 loopback on this machine")
def test_an_ipv6_literal_seed_is_fetched() -> None:
    pages: dict[str, tuple[int, dict[str, str], bytes]] = {"/robots.txt": (404, {}, b"")}
    site = Server("::1", pages)
    try:
        pages["/"] = page("/six")
        pages["/six"] = page()
        stats, log = crawl([f"http://[::1]:{site.port}/"], {})
    finally:
        site.close()
    assert f"FETCHED http://[::1]:{site.port}/six" in log
    assert "/six" in site.log
    assert not any(k.startswith("focused/refused/") for k in stats)


def test_a_name_sent_through_a_proxy_is_checked_before_the_proxy_sees_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Through a proxy (``http_proxy``), the proxy resolves a link's host name, out of
    the resolver's sight: the crawl resolves it first and refuses an internal one. The
    proxy is a loopback server that answers every URL itself (it forwards nothing) and
    logs the absolute URLs it is asked for."""
    pages: dict[str, tuple[int, dict[str, str], bytes]] = {}
    proxy = Server("127.0.0.2", pages)
    try:
        pages["http://site.test/"] = page(
            "http://intranet.test/secret",  # -> 10.0.0.9
            "http://metadata.test/latest/meta-data/",  # -> 169.254.169.254
            "http://other.test/ok",  # -> 127.0.0.4: loopback, as the seed
        )
        pages["http://other.test/ok"] = page()
        for name in ("site", "intranet", "metadata", "other"):
            pages[f"http://{name}.test/robots.txt"] = (404, {}, b"")
        hosts = {
            "site.test": "127.0.0.3",
            "intranet.test": "10.0.0.9",
            "metadata.test": "169.254.169.254",
            "other.test": "127.0.0.4",
        }
        monkeypatch.setenv("http_proxy", proxy.url)
        monkeypatch.delenv("no_proxy", raising=False)
        monkeypatch.delenv("NO_PROXY", raising=False)
        settings = {"FOCUSED_HOSTS": hosts, "FOCUSED_ALLOWED_NETWORKS": ["127.0.0.0/8"]}
        stats, log = crawl(["http://site.test/"], settings)
    finally:
        proxy.close()
    asked = set(proxy.log)
    assert "http://site.test/" in asked and "http://other.test/ok" in asked
    assert not any("intranet.test" in u or "metadata.test" in u for u in asked), asked
    assert stats["focused/refused/private"] >= 1
    assert stats["focused/refused/link_local"] >= 1
    assert "FETCHED http://other.test/ok" in log


@pytest.mark.parametrize(
    "resolver",
    [
        "scrapy.resolver.CachingThreadedResolver",  # Scrapy's default: gethostbyname
        "scrapy.resolver.CachingHostnameResolver",  # getaddrinfo
    ],
)
def test_a_crawl_on_another_resolver_checks_what_it_resolves(
    victim: Server, resolver: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A script whose ``TWISTED_DNS_RESOLVER`` is not the project's (Scrapy's default,
    as in ``CrawlerProcess({...})`` without the project's settings) fetched a link whose
    host name resolves to an address the crawl may not reach: the address filter saw
    only the name. The address filter now wraps the reactor's resolver in a checking
    one. Here the system resolver answers ``sneaky.test`` with 127.0.0.2, the victim
    (the tests' DNS guard stands in for ``/etc/hosts``: no query), which the crawl may
    not fetch (``FOCUSED_ALLOWED_NETWORKS``: 127.0.0.1 only)."""
    monkeypatch.setenv("FOCUSED_DNS_GUARD_HOSTS", '{"sneaky.test": "127.0.0.2"}')
    v = victim.port
    pages: dict[str, tuple[int, dict[str, str], bytes]] = {"/robots.txt": (404, {}, b"")}
    site = Server("127.0.0.1", pages)
    try:
        pages["/"] = page(f"http://sneaky.test:{v}/secret", "/ok")
        pages["/ok"] = page()
        stats, log = crawl(
            [f"http://127.0.0.1:{site.port}/"],
            {"FOCUSED_ALLOWED_NETWORKS": ["127.0.0.1/32"], "TWISTED_DNS_RESOLVER": resolver},
            seeds=False,
        )
    finally:
        site.close()
    assert victim.log == []  # not even its robots.txt
    assert f"FETCHED http://127.0.0.1:{site.port}/ok" in log
    assert stats["focused/refused/loopback"] >= 1
    assert f"the reactor's resolver {resolver} is not" in log


def test_the_checking_resolver_checks_while_a_crawl_is_open_only() -> None:
    """The checking wrapper stays on the reactor after the crawl: it checked every
    lookup of the program after it (a ``CrawlerRunner`` program could no longer reach its
    own services). It checks while a crawl is open, and hands lookups on unchecked
    otherwise. The wrapped resolver stands for the system's (no query is made)."""
    from twisted.internet import defer
    from twisted.internet._resolver import SimpleResolverComplexifier

    from focused.addressfilter import CheckingResolver, _Active
    from focused.web.addresses import AddressPolicy

    class Intranet:  # what the system's resolver answers for every name
        def getHostByName(self, name: str, timeout: object = None) -> object:  # noqa: N802
            return defer.succeed("10.0.0.1")

    def resolve(resolver: CheckingResolver) -> list[str]:
        got: list[str] = []

        class Receiver:
            def resolutionBegan(self, resolution: object) -> None:  # noqa: N802
                pass

            def addressResolved(self, address: object) -> None:  # noqa: N802
                got.append(address.host)  # type: ignore[attr-defined]

            def resolutionComplete(self) -> None:  # noqa: N802
                pass

        resolver.resolveHostName(Receiver(), "intranet.test", 80)
        return got

    resolver = CheckingResolver(SimpleResolverComplexifier(Intranet()))
    saved = dict(_Active.crawls)
    _Active.crawls.clear()
    try:
        assert resolve(resolver) == ["10.0.0.1"]  # no crawl open: as the system answers

        class Crawl:
            pass

        crawl = Crawl()
        _Active.crawls[id(crawl)] = (weakref.ref(crawl), AddressPolicy(), None)
        assert resolve(resolver) == []  # a crawl open: the private address is refused
        del crawl
        assert resolve(resolver) == ["10.0.0.1"]
    finally:
        _Active.crawls.clear()
        _Active.crawls.update(saved)
