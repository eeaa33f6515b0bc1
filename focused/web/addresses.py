"""Which IP addresses a crawl may connect to: no loopback, private or link-local ones.

Pure module (the standard library's :mod:`ipaddress`, no Scrapy). A page on the real web
that links ``http://169.254.169.254/`` (the cloud metadata service), ``http://10.0.0.1/``
or ``http://127.0.0.1:6379/`` would otherwise make the crawler fetch from inside the
network it runs in (server-side request forgery). :func:`parse_host` reads every spelling
of an address that ``inet_aton`` and browsers accept (hex ``0x7f000001``, octal
``0177.0.0.1``, one decimal integer ``2130706433``, short forms ``127.1``, IPv4-mapped IPv6
``[::ffff:127.0.0.1]``, IPv6 zone ids ``fe80::1%eth0``, a trailing dot), and
:func:`classify` names the kind of a non-public address (a 6to4 address
``2002:a00:1::`` has the kind of the IPv4 address it embeds, ``10.0.0.1``; the deprecated
site-local ``fec0::/10`` is private). :class:`AddressPolicy` decides: a kind is allowed
only when the crawl's seeds are of that kind (a loopback seed allows loopback, as the
sandbox needs) or when ``FOCUSED_ALLOWED_NETWORKS`` names its network; link-local
addresses are allowed only by that setting.
"""

from __future__ import annotations

import functools
import ipaddress
from collections.abc import Iterable
from dataclasses import dataclass, field

__all__ = [
    "KINDS",
    "AddressPolicy",
    "IPAddress",
    "IPNetwork",
    "canonical_host",
    "classify",
    "localhost_address",
    "parse_host",
    "parse_networks",
]

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network

#: The kinds :func:`classify` returns (the stat key is ``focused/refused/<kind>``).
KINDS = ("unspecified", "loopback", "link_local", "multicast", "private", "reserved")
#: Private networks (RFC 1918, shared address space RFC 6598, unique local IPv6 RFC 4193,
#: the deprecated IPv6 site-local RFC 3879, which :mod:`ipaddress` calls global).
_PRIVATE = tuple(
    ipaddress.ip_network(n)
    for n in (
        "10.0.0.0/8",
        "172.16.0.0/12",
        "192.168.0.0/16",
        "100.64.0.0/10",
        "fc00::/7",
        "fec0::/10",
    )
)
#: Networks that are "reserved" whatever the Python: the IETF protocol assignments
#: 192.0.0.0/24 (RFC 6890; 192.0.0.192 is Oracle Cloud's metadata service), which
#: Python 3.11.7's :mod:`ipaddress` calls global except 192.0.0.0/29 and 192.0.0.170/31
#: (later versions call all of it private but 192.0.0.9 and 192.0.0.10).
_RESERVED = tuple(ipaddress.ip_network(n) for n in ("192.0.0.0/24",))
#: A seed of one of these kinds does not allow the kind (only the setting does).
_NEVER_FROM_SEEDS = frozenset({"link_local"})


def _inet_aton_part(text: str) -> int | None:
    """One dotted part as ``inet_aton`` reads it: ``0x`` hex, leading ``0`` octal, decimal."""
    if not text:
        return None
    try:
        if text[:2].lower() == "0x":
            return int(text[2:], 16) if len(text) > 2 else 0
        if len(text) > 1 and text[0] == "0":
            return int(text[1:], 8)
        return int(text, 10) if text.isdigit() else None
    except ValueError:
        return None


def _inet_aton(text: str) -> ipaddress.IPv4Address | None:
    """``a``, ``a.b``, ``a.b.c`` or ``a.b.c.d`` as ``inet_aton`` (and browsers) read them:
    the last part fills the remaining bytes. None when ``text`` is not such a number."""
    parts = text.split(".")
    if not 1 <= len(parts) <= 4:
        return None
    numbers = [_inet_aton_part(p) for p in parts]
    if any(n is None for n in numbers):
        return None
    *head, last = [n for n in numbers if n is not None]
    if any(n > 255 for n in head) or last >= 1 << (8 * (4 - len(head))):
        return None
    value = last
    for i, n in enumerate(head):
        value |= n << (8 * (3 - i))
    return ipaddress.IPv4Address(value)


#: the address of ``localhost`` and of any name under ``.localhost``
LOCALHOST = ipaddress.IPv4Address("127.0.0.1")


def localhost_address(host: str | None) -> IPAddress | None:
    """:data:`LOCALHOST` for ``localhost`` and names under ``.localhost`` (any case, a
    trailing dot), else None: such a name is answered without a lookup (RFC 6761,
    section 6.3, as browsers do), so it never reaches DNS, whatever ``/etc/hosts``
    says."""
    name = (host or "").strip().lower().rstrip(".")
    if name == "localhost" or name.endswith(".localhost"):
        return LOCALHOST
    return None


def parse_host(host: str | None) -> IPAddress | None:
    """The IP address that the URL host ``host`` spells, or None when it is a name.

    Accepts brackets (``[::1]``), an IPv6 zone id (``%eth0``, also URL-encoded ``%25eth0``),
    trailing dots and every ``inet_aton`` spelling of an IPv4 address. An IPv4-mapped IPv6
    address (``::ffff:127.0.0.1``) is returned as its IPv4 address.
    """
    if not host:
        return None
    text = host.strip().lower()
    if text.startswith("[") and text.endswith("]"):
        text = text[1:-1]
    if "%" in text:
        text = text.split("%", 1)[0]
    text = text.rstrip(".")
    if not text:
        return None
    address: IPAddress | None
    try:
        address = ipaddress.ip_address(text)
    except ValueError:
        address = _inet_aton(text) if ":" not in text else None
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


@functools.lru_cache(maxsize=4096)  # every link of a page on an IP host asks again
def canonical_host(host: str) -> str | None:
    """``host`` as browsers write it (the WHATWG URL host serializer) when it spells an
    IP address in another way, else None (a name, or the address written so already).

    An IPv4 address in any ``inet_aton`` spelling (``0x7f000001``, ``2130706433``,
    ``0177.0.0.1``, ``127.1``, a trailing dot) is dotted decimal; an IPv6 literal is
    compressed and lower case (``[::FFFF:127.0.0.1]`` is ``[::ffff:7f00:1]``); one with a
    zone id is left as it is. Two spellings of one address are one host then: one
    download slot, one robots.txt, one ``Crawl-delay``, one page per URL.
    """
    if host.startswith("["):
        text = host[1:-1] if host.endswith("]") else ""
        if not text or "%" in text:
            return None
        try:
            written = f"[{ipaddress.IPv6Address(text).compressed}]"
        except ValueError:
            return None
        return written if written != host else None
    text = host.lower()
    text = text[:-1] if text.endswith(".") else text
    last = text.rsplit(".", 1)[-1]
    if not last or not last[0].isdigit():  # a name: its last label is no number
        return None
    address = _inet_aton(text)
    if address is None:
        return None
    written = str(address)
    return written if written != host else None


def _embedded(address: IPAddress) -> IPAddress:
    """The IPv4 address that an IPv4-mapped (``::ffff:a.b.c.d``) or 6to4 (``2002::/16``)
    IPv6 address stands for, else ``address``."""
    if isinstance(address, ipaddress.IPv6Address):
        for embedded in (address.ipv4_mapped, address.sixtofour):
            if embedded is not None:
                return embedded
    return address


def classify(address: IPAddress) -> str | None:
    """The kind of a non-public ``address`` (one of :data:`KINDS`), or None when public.
    An IPv4-mapped or 6to4 address has the kind of the IPv4 address it embeds."""
    address = _embedded(address)
    special = _special_kind(address)
    if special is not None:
        return special
    if any(address in net for net in _PRIVATE if net.version == address.version):
        return "private"
    if address.is_reserved or address.is_private or not address.is_global:
        return "reserved"
    if any(address in net for net in _RESERVED if net.version == address.version):
        return "reserved"
    return None


def _special_kind(address: IPAddress) -> str | None:
    """The kind of an address that no network may route to the crawler's peers: the
    unspecified, loopback, link-local and multicast addresses; None for the rest."""
    if address.is_unspecified:
        return "unspecified"
    if address.is_loopback:
        return "loopback"
    if address.is_link_local:
        return "link_local"
    if address.is_multicast:
        return "multicast"
    return None


def parse_networks(values: Iterable[str]) -> tuple[IPNetwork, ...]:
    """``FOCUSED_ALLOWED_NETWORKS``: CIDR strings (``10.0.0.0/8``, ``fd00::/8``, a bare
    address). Raises ValueError on a bad one."""
    return tuple(ipaddress.ip_network(v.strip(), strict=False) for v in values if v.strip())


@dataclass
class AddressPolicy:
    """What a crawl may connect to.

    ``networks`` are always allowed (``FOCUSED_ALLOWED_NETWORKS``); a non-public kind is
    allowed when a seed is of that kind (:meth:`learn_seed`), except ``link_local``.
    ``seed_hosts`` are the seeds' host names: the resolver calls :meth:`learn_seed` with
    the addresses they resolve to. ``refused_names`` remembers host names whose every
    address was refused, so that their further requests are dropped before a lookup.
    """

    networks: tuple[IPNetwork, ...] = ()
    allowed_kinds: set[str] = field(default_factory=set)
    seed_hosts: set[str] = field(default_factory=set)
    refused_names: dict[str, str] = field(default_factory=dict)

    def refusal(self, address: IPAddress) -> str | None:
        """None when ``address`` may be fetched, else its kind (why it is refused)."""
        kind = classify(address)
        if kind is None:
            return None
        addresses = {address, _embedded(address)}
        if any(a in net for a in addresses for net in self.networks if net.version == a.version):
            return None
        return None if kind in self.allowed_kinds else kind

    def resolved(self, name: str, address: IPAddress) -> str | None:
        """``refusal`` of an ``address`` that the host ``name`` resolved to: a seed's
        name first allows its address's kind (:meth:`learn_seed`)."""
        if name.lower().rstrip(".") in self.seed_hosts:
            self.learn_seed(address)
        return self.refusal(address)

    def learn_seed(self, address: IPAddress) -> None:
        """A seed is on ``address``: its kind is allowed (link-local never is)."""
        kind = classify(address)
        if kind is not None and kind not in _NEVER_FROM_SEEDS:
            self.allowed_kinds.add(kind)

    def add_seed(self, host: str | None) -> None:
        """A seed URL's host: an address is learnt now, a name when it resolves."""
        if not host:
            return
        address = parse_host(host)
        if address is not None:
            self.learn_seed(address)
        else:
            self.seed_hosts.add(host.lower().rstrip("."))
