"""A DNS resolver for test crawls that never leaves the machine.

Tests must send no packet outside 127.0.0.0/8, and a lookup of a name, even one under
``.invalid`` (RFC 6761: it never resolves), goes to the system's resolver, which may be
on another host. Passed to a test crawl as ``-s TWISTED_DNS_RESOLVER=tests.loopback_dns.
LoopbackResolver``, this resolver answers loopback addresses as Scrapy's does, ``localhost``
with ``127.0.0.1`` (RFC 6761, as :class:`focused.addressfilter.FocusedResolver` does:
no lookup), and fails every other name at once with Twisted's ``DNSLookupError``, the error a
name that does not resolve gives (RFC 6761, section 6.4: "return immediately with a
negative response").
"""

from __future__ import annotations

import ipaddress
from collections.abc import Sequence
from typing import Any

from scrapy.resolver import CachingThreadedResolver
from twisted.internet import defer
from twisted.internet.error import DNSLookupError


def is_loopback(name: str) -> bool:
    try:
        return ipaddress.ip_address(name.strip("[]")).is_loopback
    except ValueError:
        return False


class LoopbackResolver(CachingThreadedResolver):
    """Scrapy's resolver for loopback names; any other name fails without a lookup."""

    def getHostByName(self, name: str, timeout: Sequence[int] = ()) -> Any:  # noqa: N802
        if name.rstrip(".").lower() == "localhost":  # as the project's resolver, no lookup
            return defer.succeed("127.0.0.1")
        if is_loopback(name):
            return super().getHostByName(name, timeout)
        return defer.fail(DNSLookupError(f"{name}: not looked up (tests stay on loopback)"))
