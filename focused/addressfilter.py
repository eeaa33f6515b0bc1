"""No fetch from inside the network: internal addresses refused before a connection.

Scrapy glue of :mod:`focused.web.addresses`. Two places check, so that no spelling and no
redirect gets through:

- :class:`AddressFilterMiddleware` (downloader middleware, before the robots.txt one)
  refuses a request whose host is a non-public IP address in any spelling, and a host name
  the resolver refused before. Each redirect hop comes back through the downloader
  middlewares, so every hop is checked.
- :class:`ProxyAddressFilterMiddleware` resolves the host name of a request that goes
  through a proxy (which would resolve it where this crawl cannot check) and refuses it
  as the resolver would.
- :class:`FocusedResolver` (``TWISTED_DNS_RESOLVER``) filters the addresses a host name
  resolves to, *after* resolution: a name that resolves to ``169.254.169.254`` or
  ``10.0.0.1`` gets no address, so no connection is attempted (the download fails with
  Twisted's ``DNSLookupError``). It resolves IPv4 and IPv6 (Scrapy's default resolver is
  IPv4 only, so ``http://[::1]:P/`` failed), IPv4 addresses first. ``FOCUSED_HOSTS`` maps
  host names to addresses without a lookup (``{"metadata.test": "169.254.169.254"}``: the
  tests use it, so they never send traffic off loopback).

Stats: ``focused/refused/<kind>`` (``loopback``, ``private``, ``link_local``, ...) per
refused request or resolution.
"""

from __future__ import annotations

import json
import logging
import weakref
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any
from urllib.parse import urljoin, urlsplit

from scrapy import signals
from scrapy.exceptions import IgnoreRequest
from scrapy.resolver import CachingHostnameResolver, HostResolution
from scrapy.utils.httpobj import urlparse_cached
from twisted.internet.address import IPv4Address, IPv6Address
from twisted.internet.defer import Deferred
from twisted.internet.interfaces import (
    IAddress,
    IHostnameResolver,
    IHostResolution,
    IResolutionReceiver,
)
from w3lib.url import safe_url_string
from zope.interface import implementer, provider

from focused.bounded import remember
from focused.defaults import get
from focused.robots import RedirectRefused
from focused.web.addresses import AddressPolicy, localhost_address, parse_host, parse_networks

if TYPE_CHECKING:
    from typing import Self

    from scrapy import Request, Spider
    from scrapy.crawler import Crawler
    from scrapy.http import Response
    from scrapy.statscollectors import StatsCollector
    from twisted.internet.base import ReactorBase

logger = logging.getLogger(__name__)

#: host names checked before a proxy, remembered (the resolver caches their addresses)
CHECKED_NAMES = 65536


class _Active:
    """The policy and stats of the running crawl, shared by the middleware and the
    resolver (the resolver is the reactor's, built before any crawler).

    Several crawls may run in one process (a ``CrawlerProcess`` script that starts two
    spiders): ``crawls`` holds the policy of each open one. The resolver cannot tell
    whose lookup it makes, so a host name gets an address only when every open crawl's
    policy allows it (:meth:`policies`): a sandbox crawl that allows loopback never
    opens loopback to a real-web crawl beside it."""

    policy: AddressPolicy | None = None
    stats: StatsCollector | None = None
    #: id(crawler) -> (the crawler, weakly, its policy and its stats)
    crawls: dict[  # noqa: RUF012
        int, tuple[weakref.ref[Any], AddressPolicy, StatsCollector | None]
    ] = {}

    @classmethod
    def add(cls, crawler: Any, policy: AddressPolicy, stats: StatsCollector | None) -> None:
        cls.crawls[id(crawler)] = (weakref.ref(crawler), policy, stats)
        cls.policy, cls.stats = policy, stats

    @classmethod
    def remove(cls, crawler: Any) -> None:
        cls.crawls.pop(id(crawler), None)

    @classmethod
    def open_crawls(cls) -> list[tuple[AddressPolicy, StatsCollector | None]]:
        """Policy and stats of each crawl open now (from its downloader middlewares until
        its spider closes, the downloads a stop drains included; a crawler that is gone
        does not count); the last crawl's when none is."""
        found = []
        for key, (ref, policy, stats) in list(cls.crawls.items()):
            if ref() is None:
                del cls.crawls[key]
            else:
                found.append((policy, stats))
        if not found and cls.policy is not None:
            found.append((cls.policy, cls.stats))
        return found

    @classmethod
    def any_open(cls) -> bool:
        """Whether a crawl is open now (its crawler still there)."""
        return any(ref() is not None for ref, _, _ in list(cls.crawls.values()))

    @classmethod
    def policies(cls) -> list[AddressPolicy]:
        """The policies of :meth:`open_crawls`."""
        return [policy for policy, _ in cls.open_crawls()]

    @classmethod
    def refused_name(cls, name: str) -> str | None:
        """The kind of address for which an open crawl's policy refused host ``name``
        (the resolver gave it no address), else None: whichever crawl asks, the
        resolver refused it for every crawl while that one is open."""
        for policy in cls.policies():
            kind = policy.refused_names.get(name)
            if kind is not None:
                return kind
        return None


def _settings_dict(settings: Any, name: str) -> dict[str, str]:
    value = settings.get(name, {})
    if isinstance(value, str):
        value = json.loads(value) if value.strip() else {}
    return {str(k).lower().rstrip("."): str(v) for k, v in dict(value).items()}


def _refused(stats: StatsCollector | None, kind: str, what: str, address: str) -> None:
    if stats is not None:
        stats.inc_value(f"focused/refused/{kind}")
    logger.warning(
        "focused: %s is a %s address (%s): not fetched (FOCUSED_ALLOWED_NETWORKS allows"
        " named networks)",
        what,
        kind.replace("_", "-"),
        address,
    )


@provider(IResolutionReceiver)
class _FilteringReceiver:
    """Collects the resolved addresses, then hands on the allowed ones, IPv4 first."""

    def __init__(
        self,
        receiver: IResolutionReceiver,
        name: str,
        crawls: Sequence[tuple[AddressPolicy, StatsCollector | None]],
    ) -> None:
        self.receiver = receiver
        self.name = name.lower().rstrip(".")
        self.crawls = list(crawls)
        self.addresses: list[IAddress] = []

    def resolutionBegan(self, resolution: IHostResolution) -> None:  # noqa: N802
        self.resolution = resolution
        self.receiver.resolutionBegan(resolution)

    def addressResolved(self, address: IAddress) -> None:  # noqa: N802
        self.addresses.append(address)

    def resolutionComplete(self) -> None:  # noqa: N802
        allowed: list[IAddress] = []
        refused: list[tuple[str, str]] = []
        policies = [policy for policy, _ in self.crawls]
        allows_one = [False] * len(policies)  # per policy: an address it allows
        for address in sorted(self.addresses, key=lambda a: isinstance(a, IPv6Address)):
            ip = parse_host(getattr(address, "host", None))
            if ip is None:
                continue
            # every open crawl's verdict (each learns its own seeds' kinds)
            kinds = [policy.resolved(self.name, ip) for policy in policies]
            for i, k in enumerate(kinds):
                allows_one[i] = allows_one[i] or k is None
            kind = next((k for k in kinds if k is not None), None)
            if kind is None:
                allowed.append(address)
            else:
                refused.append((kind, str(ip)))
        if refused and not allowed:
            kind = refused[0][0]
            # remembered by the crawls that refuse it themselves (their requests to it
            # are dropped from now on); the others may get it once the strict one ends
            for (policy, stats), allows in zip(self.crawls, allows_one, strict=True):
                if not allows:
                    policy.refused_names[self.name] = kind
                    if stats is not None:
                        stats.inc_value(f"focused/refused/{kind}")
            _refused(None, kind, self.name, ", ".join(a for _, a in refused))
        for address in allowed:
            self.receiver.addressResolved(address)
        self.receiver.resolutionComplete()


def _encodable(name: str) -> bool:
    """Whether Python's ``getaddrinfo`` can IDNA-encode ``name`` (as it does a ``str``)."""
    try:
        name.encode("idna")
    except UnicodeError:
        return False
    return True


def _answer_here(
    receiver: IResolutionReceiver,
    hostName: str,
    portNumber: int,
    hosts: dict[str, str],  # noqa: N803
) -> IHostResolution | None:
    """Resolve ``hostName`` without a lookup when it need not (or cannot) be looked up,
    handing its address, if any, to ``receiver``; None when it must be looked up."""
    mapped = hosts.get(hostName.lower().rstrip("."))
    # a FOCUSED_HOSTS name's address; or the host itself when it spells one in a way
    # Twisted does not take for an address ("127.0.0.2.", "0x7f.1", "2130706433"):
    # that address, as browsers read it (getaddrinfo would send the trailing-dot
    # form to the DNS servers as a name)
    ip = parse_host(hostName if mapped is None else mapped)
    if ip is None and mapped is None:
        ip = localhost_address(hostName)  # answered here, never looked up (RFC 6761)
    if ip is None and mapped is None and _encodable(hostName):
        return None
    # a name Python's getaddrinfo cannot IDNA-encode (an empty or over-63-character
    # label: "a..b") raised UnicodeError in Twisted's resolver thread, which never
    # completed the resolution (the download hung until DOWNLOAD_TIMEOUT, with
    # "Unhandled error in Deferred"): it resolves to nothing at once, a DNS error
    resolution = HostResolution(hostName)
    receiver.resolutionBegan(resolution)
    if ip is not None:
        kind = IPv6Address if ip.version == 6 else IPv4Address
        receiver.addressResolved(kind("TCP", str(ip), portNumber))
    receiver.resolutionComplete()
    return resolution


class _CheckedResolution:
    """``resolveHostName`` that checks each address a lookup gives (:class:`_FilteringReceiver`,
    under every open crawl's policy, else ``default_policy``), after answering itself
    what needs no lookup (:func:`_answer_here`, ``hosts``: ``FOCUSED_HOSTS``);
    :meth:`_lookup` is the lookup."""

    hosts: dict[str, str]
    default_policy: AddressPolicy
    #: (receiver, name, port, address types, transport semantics) -> the resolution
    _lookup: Callable[..., IHostResolution]
    #: whether lookups made while no crawl is open are checked too (under the last
    #: crawl's policy, else ``default_policy``)
    checks_between_crawls = True

    def resolveHostName(  # noqa: N802 (Twisted's interface)
        self,
        resolutionReceiver: IResolutionReceiver,  # noqa: N803
        hostName: str,  # noqa: N803
        portNumber: int = 0,  # noqa: N803
        addressTypes: Sequence[type[IAddress]] | None = None,  # noqa: N803
        transportSemantics: str = "TCP",  # noqa: N803
    ) -> IHostResolution:
        if not self.checks_between_crawls and not _Active.any_open():
            return self._lookup(
                resolutionReceiver, hostName, portNumber, addressTypes, transportSemantics
            )
        receiver = _FilteringReceiver(
            resolutionReceiver, hostName, _Active.open_crawls() or [(self.default_policy, None)]
        )
        answered = _answer_here(receiver, hostName, portNumber, self.hosts)
        if answered is not None:
            return answered
        return self._lookup(receiver, hostName, portNumber, addressTypes, transportSemantics)


@implementer(IHostnameResolver)
class FocusedResolver(_CheckedResolution, CachingHostnameResolver):
    """Scrapy's caching IPv4/IPv6 resolver that refuses non-public addresses after
    resolution (see the module docstring). Settings: ``FOCUSED_ALLOWED_NETWORKS``,
    ``FOCUSED_HOSTS``, Scrapy's ``DNSCACHE_ENABLED``/``DNSCACHE_SIZE``."""

    def __init__(
        self,
        reactor: ReactorBase,
        cache_size: int,
        hosts: dict[str, str] | None = None,
        policy: AddressPolicy | None = None,
    ) -> None:
        super().__init__(reactor, cache_size)
        self.hosts = dict(hosts or {})
        self.default_policy = policy or AddressPolicy()

    @classmethod
    def from_crawler(cls, crawler: Crawler, reactor: ReactorBase) -> Self:
        settings = crawler.settings
        size = settings.getint("DNSCACHE_SIZE") if settings.getbool("DNSCACHE_ENABLED") else 0
        networks = parse_networks(get(settings, "FOCUSED_ALLOWED_NETWORKS"))
        return cls(
            reactor,
            size,
            _settings_dict(settings, "FOCUSED_HOSTS"),
            AddressPolicy(networks=networks),
        )

    _lookup = CachingHostnameResolver.resolveHostName  # Scrapy's caching lookup


@implementer(IHostnameResolver)
class CheckingResolver(_CheckedResolution):
    """Another resolver (the reactor's when the crawl starts), whose answers are checked as
    :class:`FocusedResolver` checks its own: installed on the reactor by
    :class:`AddressFilterMiddleware` when the crawl's ``TWISTED_DNS_RESOLVER`` is not
    :class:`FocusedResolver` (a script's ``CrawlerProcess({...})`` without the project's
    settings gets Scrapy's resolver; a ``CrawlerRunner`` gets Twisted's), so that a host
    name that resolves to an internal address gets no address there either.
    ``FOCUSED_HOSTS`` and ``localhost`` are answered here, without a lookup. While no
    crawl is open it hands every lookup to the resolver it wraps, unchecked: the rest of
    a program that runs crawls among its own work (a ``CrawlerRunner``) resolves as
    before."""

    checks_between_crawls = False

    def __init__(self, inner: IHostnameResolver, hosts: dict[str, str] | None = None) -> None:
        self.inner = inner
        self.hosts = dict(hosts or {})
        self.default_policy = AddressPolicy()
        self._lookup = inner.resolveHostName


def _reactor_resolver() -> object:
    from twisted.internet import reactor

    return reactor.nameResolver  # type: ignore[attr-defined]


def check_resolutions(hosts: dict[str, str]) -> str | None:
    """Make the reactor's resolver one that checks the addresses it gives: a
    :class:`FocusedResolver` is left as it is; any other is wrapped in a
    :class:`CheckingResolver` (``hosts``: ``FOCUSED_HOSTS``, added to one installed
    before). The name of the resolver wrapped, else None."""
    from twisted.internet import reactor

    current = reactor.nameResolver  # type: ignore[attr-defined]
    if isinstance(current, CheckingResolver):
        current.hosts.update(hosts)
        return None
    if isinstance(current, FocusedResolver):
        return None
    reactor.installNameResolver(CheckingResolver(current, hosts))  # type: ignore[attr-defined]
    inner = getattr(current, "_simpleResolver", current)  # Scrapy's IResolverSimple ones
    return f"{type(inner).__module__}.{type(inner).__qualname__}"


class AddressFilterMiddleware:
    """Downloader middleware: a request to a non-public address is dropped before anything
    is sent (``IgnoreRequest``, ``focused/refused/<kind>``), in every spelling, on every
    redirect hop, robots.txt included (it runs before the robots.txt middleware).

    Allowed: ``FOCUSED_ALLOWED_NETWORKS``, and the kinds of the spider's seeds (a loopback
    seed allows loopback addresses; a link-local seed allows nothing). A spider without
    seeds of its own (``scrapy fetch URL``, ``scrapy shell URL``) has ``FOCUSED_SEEDS``'s.
    Host names are checked after resolution by :class:`FocusedResolver`; a name it
    refused is dropped here from then on. Under another resolver (``TWISTED_DNS_RESOLVER``
    of a script without the project's settings) it installs a :class:`CheckingResolver`
    around the reactor's, which checks the same way.
    """

    def __init__(
        self,
        policy: AddressPolicy,
        stats: StatsCollector | None = None,
        seeds: Sequence[str] = (),
    ) -> None:
        self.policy = policy
        self.stats = stats
        self.seeds = list(seeds)  # FOCUSED_SEEDS: for a spider without its own
        self.hosts: dict[str, str] = {}  # FOCUSED_HOSTS, for a CheckingResolver
        self.resolver: object = None  # the reactor's resolver, once checked

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        networks = parse_networks(get(crawler.settings, "FOCUSED_ALLOWED_NETWORKS"))
        seeds = [str(url) for url in get(crawler.settings, "FOCUSED_SEEDS") or ()]
        mw = cls(AddressPolicy(networks=networks), crawler.stats, seeds)
        _Active.add(crawler, mw.policy, crawler.stats)
        mw.hosts = _settings_dict(crawler.settings, "FOCUSED_HOSTS")
        crawler.signals.connect(mw.spider_opened, signal=signals.spider_opened)

        def closed() -> None:  # its lookups are over: its policy no longer counts
            _Active.remove(crawler)

        crawler.signals.connect(closed, signal=signals.spider_closed, weak=False)
        crawler.signals.connect(closed, signal=signals.engine_stopped, weak=False)
        return mw

    def spider_opened(self, spider: Spider) -> None:
        """The seeds' kinds are allowed: ``spider.web.seeds``, ``spider.seeds``,
        ``spider.start_urls`` or else ``FOCUSED_SEEDS``."""
        web = getattr(spider, "web", None)
        seeds = (
            getattr(web, "seeds", None)
            or getattr(spider, "seeds", None)
            or getattr(spider, "start_urls", None)
            or self.seeds
        )
        for url in seeds:
            try:  # the host that is fetched: Scrapy's Request maps full-width digits
                self.policy.add_seed(urlsplit(safe_url_string(str(url))).hostname)
            except ValueError:
                continue
        if self.policy.allowed_kinds or self.policy.seed_hosts:
            logger.info(
                "focused: seed address kinds allowed: %s",
                ", ".join(sorted(self.policy.allowed_kinds)) or "(learnt on resolution)",
            )

    def _check_resolver(self) -> None:
        """Wrap the reactor's resolver when it is not a checking one: done before the
        first download (Scrapy installs ``TWISTED_DNS_RESOLVER`` when the process starts,
        after the crawler's components are built), and again if it is replaced."""
        from twisted.internet import reactor

        wrapped = check_resolutions(self.hosts)
        self.resolver = reactor.nameResolver  # type: ignore[attr-defined]
        if wrapped is not None:
            logger.info(
                "focused: the reactor's resolver %s is not %s.FocusedResolver: the addresses"
                " it gives are checked on their way (a host name that resolves to an"
                " internal address gets none)",
                wrapped,
                __name__,
            )

    def process_request(self, request: Request) -> None:
        if self.resolver is not _reactor_resolver():
            self._check_resolver()
        host = urlparse_cached(request).hostname
        if not host:
            return
        address = parse_host(host)
        if address is not None:
            kind = self.policy.refusal(address)
            if kind is None:
                return
            _refused(self.stats, kind, request.url, str(address))
            raise IgnoreRequest(f"{kind} address {address} refused")
        kind = self.policy.refused_names.get(host.lower().rstrip("."))
        if kind is not None:
            if self.stats is not None:
                self.stats.inc_value(f"focused/refused/{kind}")
            raise IgnoreRequest(f"{host} resolves to a {kind} address: refused")

    def process_exception(self, request: Request, exception: Exception) -> None:
        """A download whose host name the resolver just refused failed as a DNS error:
        it becomes ``IgnoreRequest`` (for robots.txt: no error logged, no retry).
        :class:`focused.network.QuietNetworkGiveUp` raises it first (above
        RetryMiddleware: no retry, no "DNS lookup failed"); this is the fallback."""
        refusal = name_refusal(request, self.policy)
        if refusal is not None:
            raise refusal


def name_refusal(request: Request, policy: AddressPolicy | None = None) -> IgnoreRequest | None:
    """The ``IgnoreRequest`` for a request whose host name the resolver refused (it
    resolves to an internal address) under ``policy``, or (default) under any open
    crawl's (:meth:`_Active.refused_name`), else None."""
    host = (urlparse_cached(request).hostname or "").lower().rstrip(".")
    kind = policy.refused_names.get(host) if policy is not None else None
    if kind is None:
        kind = _Active.refused_name(host)
    if kind is None:
        return None
    return IgnoreRequest(f"{host} resolves to a {kind} address: refused")


class RedirectAddressFilterMiddleware:
    """Downloader middleware before Scrapy's ``RedirectMiddleware`` (650 > 600): a 3xx
    answer whose ``Location`` is a refused address is dropped there (``IgnoreRequest``:
    the redirecting URL fails), so no request to the internal address is even made; one
    that is off-site would otherwise be dropped by Scrapy's ``OffsiteMiddleware`` before
    the scheduler sees it. The redirect to a host name is checked when it is resolved."""

    def __init__(self, stats: StatsCollector | None = None) -> None:
        self.stats = stats

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler.stats)

    def process_response(self, request: Request, response: Response) -> Response:
        if not 300 <= response.status < 400 or _Active.policy is None:
            return response
        location = response.headers.get(b"Location")
        if not location:
            return response
        try:
            target = urljoin(response.url, location.decode("latin-1").strip())
            address = parse_host(urlsplit(target).hostname)
        except ValueError:
            return response
        kinds = [] if address is None else [p.refusal(address) for p in _Active.policies()]
        kind = next((k for k in kinds if k is not None), None)
        if kind is not None:
            _refused(self.stats, kind, f"redirect to {target}", str(address))
            raise RedirectRefused(f"redirect to a {kind} address {address} refused", target)
        return response


@provider(IResolutionReceiver)
class _Collected:
    """Collects what a resolution hands on, then fires ``done`` with the addresses."""

    def __init__(self) -> None:
        self.addresses: list[IAddress] = []
        self.done: Deferred[list[IAddress]] = Deferred()

    def resolutionBegan(self, resolution: IHostResolution) -> None:  # noqa: N802
        pass

    def addressResolved(self, address: IAddress) -> None:  # noqa: N802
        self.addresses.append(address)

    def resolutionComplete(self) -> None:  # noqa: N802
        self.done.callback(self.addresses)


class ProxyAddressFilterMiddleware:
    """Downloader middleware after Scrapy's ``HttpProxyMiddleware`` (760 > 750): a request
    sent through a proxy (``http_proxy``/``https_proxy`` in the environment, or
    ``request.meta["proxy"]``) is resolved by the proxy, not here, so the resolver's check
    (:class:`FocusedResolver`) never sees where it goes. Its host name is resolved here
    first, with the crawl's resolver, and refused (``IgnoreRequest``,
    ``focused/refused/<kind>``) when it resolves only to refused addresses, or to none at
    all (``focused/refused/unresolved``: the proxy might reach a host this machine cannot
    check; ``FOCUSED_PROXY_RESOLVES=True`` sends such a name to a proxy trusted to reach
    public hosts only). A literal IP address was checked already by
    :class:`AddressFilterMiddleware`. A name once checked is not resolved again
    (bounded)."""

    def __init__(self, stats: StatsCollector | None = None, proxy_resolves: bool = False) -> None:
        self.stats = stats
        self.proxy_resolves = proxy_resolves
        self.checked: dict[str, str | None] = {}  # host name -> refused kind (None: allowed)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler.stats, bool(get(crawler.settings, "FOCUSED_PROXY_RESOLVES")))

    def process_request(self, request: Request) -> Deferred[None] | None:
        if not request.meta.get("proxy") or _Active.policy is None:
            return None
        host = urlparse_cached(request).hostname
        if not host or parse_host(host) is not None:
            return None
        name = host.lower().rstrip(".")
        if name in self.checked:
            kind = self.checked[name]
            if kind is None:
                return None
            self._refuse(name, kind)
        collected = _Collected()
        from twisted.internet import reactor

        reactor.nameResolver.resolveHostName(collected, name, 0)  # type: ignore[attr-defined]
        return collected.done.addCallback(lambda addresses: self._verdict(request, name, addresses))

    def _verdict(self, request: Request, name: str, addresses: list[IAddress]) -> None:
        # refused for any open crawl: the resolver gave no address for all of them
        kind = _Active.refused_name(name) if _Active.policies() else "unchecked"
        if kind is None and not addresses and not self.proxy_resolves:
            kind = "unresolved"
            logger.warning(
                "focused: %s does not resolve here: not fetched through the proxy %s (its"
                " address cannot be checked; FOCUSED_PROXY_RESOLVES=True sends it)",
                name,
                request.meta.get("proxy"),
            )
        remember(self.checked, name, kind, CHECKED_NAMES)
        if kind is not None:
            self._refuse(name, kind)

    def _refuse(self, name: str, kind: str) -> None:
        if self.stats is not None:
            self.stats.inc_value(f"focused/refused/{kind}")
        raise IgnoreRequest(f"{name}: {kind} address, refused before the proxy")
