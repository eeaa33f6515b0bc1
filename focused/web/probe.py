"""The start-up probe of ``FOCUSED_WEB = "auto"`` (and ``"real"``): does the host of the
topic's first seed accept a TCP connection?

Pure module (sockets and :mod:`focused.web.addresses`, no Scrapy). The probe keeps to
the crawl's scope (:class:`ProbeScope`), so it never looks up or connects to what the
crawl itself would not:

- a host outside ``FOCUSED_ALLOWED_DOMAINS`` (when set) is not probed;
- with ``FOCUSED_HOSTS`` set, a host name is resolved through it alone: a name it does
  not map is not looked up (no DNS query leaves the machine), and a mapped one needs no
  lookup;
- every address the host resolves to is checked with the crawl's address policy
  (:class:`~focused.web.addresses.AddressPolicy`: ``FOCUSED_ALLOWED_NETWORKS`` and the
  kinds of the crawl's seeds, never link-local) before any connection, and a refused one
  gets none.

A host that is out of scope is "not reachable" (:attr:`Probe.refused`, with the reason),
and so is one that does not resolve or answer. The whole probe, DNS lookup included,
ends within ``timeout`` seconds: a lookup that takes longer is left to finish in a
daemon thread, unheeded.

:func:`admit` (the scope checks and the lookup) and :func:`open_connection` are the
probe's two halves; the fetch of the labels (:mod:`focused.web.fetch`) uses them too.
"""

from __future__ import annotations

import queue
import socket
import threading
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from focused.web.addresses import (
    AddressPolicy,
    IPAddress,
    IPNetwork,
    localhost_address,
    parse_host,
)

__all__ = ["PROBE_TIMEOUT", "Admitted", "Probe", "ProbeScope", "admit", "open_connection", "probe"]

#: seconds the whole probe (lookup and connections) may take
PROBE_TIMEOUT = 3.0


@dataclass(frozen=True)
class ProbeScope:
    """What the crawl may reach: ``networks`` (``FOCUSED_ALLOWED_NETWORKS``), ``hosts``
    (``FOCUSED_HOSTS``: when not empty, the only names that may be resolved) and
    ``allowed_domains`` (``FOCUSED_ALLOWED_DOMAINS``: when not empty, the only hosts, a
    domain with its subdomains)."""

    networks: tuple[IPNetwork, ...] = ()
    hosts: Mapping[str, str] = field(default_factory=dict)
    allowed_domains: tuple[str, ...] = ()

    def policy(self, seeds: Iterable[str]) -> AddressPolicy:
        """The crawl's address policy for a crawl of ``seeds``: their kinds are allowed
        (a literal address's now, a name's when it resolves)."""
        policy = AddressPolicy(networks=self.networks)
        for url in seeds:
            try:
                policy.add_seed(urlsplit(url).hostname)
            except ValueError:
                continue
        return policy

    def off_domains(self, host: str) -> bool:
        """True when ``FOCUSED_ALLOWED_DOMAINS`` is set and ``host`` is in none of them."""
        domains = [d.strip().lower().rstrip(".") for d in self.allowed_domains if d.strip()]
        name = host.lower().rstrip(".")
        return bool(domains) and not any(name == d or name.endswith("." + d) for d in domains)


@dataclass(frozen=True)
class Probe:
    """The probe's answer: ``reason`` is None when the host answered, else why not, in a
    few words; ``refused``: the scope forbade the lookup or the connection, so none was
    made."""

    reason: str | None
    refused: bool = False

    @property
    def answered(self) -> bool:
        return self.reason is None


def probe(
    url: str,
    scope: ProbeScope | None = None,
    *,
    seeds: Iterable[str] | None = None,
    timeout: float = PROBE_TIMEOUT,
) -> Probe:
    """Whether the host of ``url`` accepts a TCP connection within ``timeout`` seconds,
    looked up and connected to only within ``scope`` (default: no allowed network, no
    host map, any domain). ``seeds``: the crawl's seeds, whose address kinds the policy
    allows (default: ``url`` alone).

    A name under ``.invalid`` is refused at once, without asking any resolver (RFC 6761,
    section 6.4: such names never resolve, and libraries should answer them negatively
    themselves).
    """
    deadline = time.monotonic() + timeout
    admitted = admit(url, scope, seeds=seeds, deadline=deadline)
    if isinstance(admitted, Probe):
        return admitted
    sock = open_connection(admitted, deadline, timeout)
    if isinstance(sock, str):
        return Probe(sock)
    sock.close()
    return Probe(None)


@dataclass(frozen=True)
class Admitted:
    """A URL's ``host`` and ``port``, and the ``addresses`` of the host the crawl's scope
    lets a connection go to (at least one)."""

    host: str
    port: int
    addresses: tuple[IPAddress, ...]


def admit(
    url: str,
    scope: ProbeScope | None = None,
    *,
    seeds: Iterable[str] | None = None,
    deadline: float,
) -> Admitted | Probe:
    """The addresses of the host of ``url`` that the crawl's ``scope`` allows a
    connection to (:func:`probe`'s rules; ``seeds`` as there), looked up (through
    ``FOCUSED_HOSTS`` when set) only when the host is in scope, before the monotonic
    ``deadline``; else the :class:`Probe` saying why not (``refused`` when the scope
    forbade it). Nothing is connected to."""
    scope = scope or ProbeScope()
    parts = urlsplit(url)
    try:
        host = parts.hostname or ""
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        return Probe(f"{url!r} is not a valid URL")
    name = host.lower().rstrip(".")
    if not name or name.endswith(".invalid") or name == "invalid":
        return Probe(f"DNS lookup failed for {host or url}")
    if scope.off_domains(host):
        return Probe(f"{host} is not in FOCUSED_ALLOWED_DOMAINS", refused=True)
    literal = parse_host(host)
    addresses = [literal] if literal is not None else _resolve(host, port, scope, deadline)
    if isinstance(addresses, Probe):
        return addresses
    policy = scope.policy([url] if seeds is None else seeds)
    allowed: list[IPAddress] = []
    refused: list[tuple[str, IPAddress]] = []
    for address in addresses:
        kind = policy.resolved(name, address) if literal is None else policy.refusal(address)
        if kind is None:
            allowed.append(address)
        else:
            refused.append((kind, address))
    if not allowed:
        kind, address = refused[0]
        what = f"{host} is" if literal is not None else f"{host} resolves to {address},"
        return Probe(
            f"{what} a {kind.replace('_', '-')} address, which FOCUSED_ALLOWED_NETWORKS"
            " does not allow",
            refused=True,
        )
    return Admitted(host, port, tuple(allowed))


def _resolve(host: str, port: int, scope: ProbeScope, deadline: float) -> list[IPAddress] | Probe:
    """The addresses of the host name ``host``: through ``FOCUSED_HOSTS`` when it is
    set (a name it does not map is refused, not looked up), else from the system
    resolver; at least one, or the :class:`Probe` saying why there is none."""
    name = host.lower().rstrip(".")
    hosts = {str(k).lower().rstrip("."): str(v) for k, v in scope.hosts.items()}
    if hosts and name not in hosts:
        return Probe(
            f"{host} is not in FOCUSED_HOSTS, and with FOCUSED_HOSTS set no other name is"
            " looked up",
            refused=True,
        )
    if hosts:
        mapped = parse_host(hosts[name])
        addresses: list[IPAddress] | str = [] if mapped is None else [mapped]
    elif (local := localhost_address(name)) is not None:  # never looked up (RFC 6761)
        addresses = [local]
    else:
        addresses = _lookup(host, port, deadline)
    if isinstance(addresses, str):
        return Probe(addresses)
    return addresses or Probe(f"DNS lookup failed for {host}")


def _lookup(host: str, port: int, deadline: float) -> list[IPAddress] | str:
    """The addresses of ``host`` from the system resolver (IPv4 first), or why there are
    none; a lookup still running at ``deadline`` is given up."""
    answers: queue.SimpleQueue[list[IPAddress] | None] = queue.SimpleQueue()

    def resolve() -> None:
        try:
            infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except (OSError, UnicodeError):
            answers.put(None)
            return
        found = [parse_host(str(info[4][0])) for info in infos]
        answers.put([a for a in dict.fromkeys(found) if a is not None])

    threading.Thread(target=resolve, name="focused-probe-dns", daemon=True).start()
    try:
        addresses = answers.get(timeout=max(0.0, deadline - time.monotonic()))
    except queue.Empty:
        return f"DNS lookup for {host} took too long"
    if addresses is None:
        return f"DNS lookup failed for {host}"
    return sorted(addresses, key=lambda a: a.version)


def open_connection(admitted: Admitted, deadline: float, timeout: float) -> socket.socket | str:
    """A TCP connection to one of the ``admitted`` addresses (in their order), made
    before the monotonic ``deadline`` (``timeout``: the limit, for the message), else
    why there is none."""
    host, port = admitted.host, admitted.port
    for address in admitted.addresses:
        left = deadline - time.monotonic()
        if left <= 0:
            break
        family = socket.AF_INET6 if address.version == 6 else socket.AF_INET
        sock = socket.socket(family, socket.SOCK_STREAM)
        try:
            sock.settimeout(left)
            sock.connect((str(address), port))
        except OSError:
            sock.close()
            continue
        return sock
    if time.monotonic() >= deadline:
        return f"{host} does not answer on port {port} within {timeout:g} s"
    return f"{host} does not answer on port {port}"
