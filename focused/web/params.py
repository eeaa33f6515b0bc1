"""Query parameters that do not change a host's pages, learnt from its near-duplicates.

Real sites put parameters in their links that name no other page: tracking parameters
(``?utm_campaign=...``, a new value on every page), session ids under a name of the
site's own, sort orders and view options over the same listing. Each value is a new URL
of the same page, so a crawl fetches the page again for every value it meets, and the
near-duplicate check (:mod:`focused.web.neardup`) only spares the store, not the fetch.

The rule (after Bar-Yossef, Keidar & Schonfeld 2009, *Do not crawl in the DUST*): when
a fetched page is a near-duplicate of a page fetched at a URL with the same scheme, host
and path that differs from it only in its query, the query keys whose values differ (or
that only one of the two has) did not make another page there. Once keys have been
seen so on :data:`MIN_PAIRS` such pairs of a host, those keys are *ignored* on that
host: :meth:`IgnoredParams.without` takes them out of the host's links, so every further
link to the page is one URL, which the frontier has seen. One pair alone is not enough:
a listing whose two pages happen to hold the same items would teach its ``page`` key.

Bounded: at most ``max_hosts`` hosts and ``max_keys`` keys per host are remembered, the
least recently seen first forgotten. Pure: no Scrapy.
"""

from __future__ import annotations

from collections import Counter, OrderedDict
from urllib.parse import urlsplit, urlunsplit

from focused.bounded import recent

__all__ = ["MIN_PAIRS", "IgnoredParams", "differing_keys"]

#: near-duplicate pairs of one host that must show a key before it is ignored there
MIN_PAIRS = 2
#: hosts remembered
MAX_HOSTS = 2_000
#: keys counted per host
MAX_KEYS = 64


def _pairs(query: str) -> list[tuple[str, str]]:
    out = []
    for pair in query.split("&"):
        if pair:
            key, _, value = pair.partition("=")
            out.append((key, value))
    return out


def differing_keys(first: str, later: str) -> frozenset[str]:
    """The query keys whose values differ between two URLs of the same scheme, host and
    path (a key that only one of them has, too); empty when the two differ elsewhere
    (another host, path or scheme) or not at all."""
    a, b = urlsplit(first), urlsplit(later)
    if (a.scheme, a.netloc.lower(), a.path) != (b.scheme, b.netloc.lower(), b.path):
        return frozenset()
    if a.query == b.query:
        return frozenset()
    qa, qb = _pairs(a.query), _pairs(b.query)
    keys = {k for k, _ in qa} | {k for k, _ in qb}
    return frozenset(
        k for k in keys if sorted(v for x, v in qa if x == k) != sorted(v for x, v in qb if x == k)
    )


class IgnoredParams:
    """Per host, the query keys that near-duplicate pairs showed make no other page."""

    def __init__(
        self, min_pairs: int = MIN_PAIRS, max_hosts: int = MAX_HOSTS, max_keys: int = MAX_KEYS
    ) -> None:
        self.min_pairs = min_pairs
        self.max_hosts = max_hosts
        self.max_keys = max_keys
        #: host -> key -> near-duplicate pairs that differed in it
        self._seen: OrderedDict[str, Counter[str]] = OrderedDict()
        #: host -> keys ignored there
        self._ignored: OrderedDict[str, set[str]] = OrderedDict()

    def observe(self, first: str, later: str) -> frozenset[str]:
        """``later`` was found a near-duplicate of the page fetched at ``first``: count
        the keys they differ in (:func:`differing_keys`). Returns the keys of the host
        that this pair made ignored (usually none)."""
        keys = differing_keys(first, later)
        if not keys:
            return frozenset()
        host = urlsplit(later).netloc.lower()
        counts = recent(self._seen, host, Counter, self.max_hosts)
        for key in keys:
            if key in counts or len(counts) < self.max_keys:
                counts[key] += 1
        new = {k for k in keys if counts[k] >= self.min_pairs}
        if not new:
            return frozenset()
        ignored = recent(self._ignored, host, set, self.max_hosts)
        new -= ignored
        ignored |= new
        return frozenset(new)

    def without(self, url: str) -> str:
        """``url`` without the query keys ignored on its host (the others keep their
        order and spelling); ``url`` itself when it has none of them."""
        if "?" not in url or not self._ignored:
            return url
        parts = urlsplit(url)
        ignored = self._ignored.get(parts.netloc.lower())
        if not ignored or not parts.query:
            return url
        pairs = parts.query.split("&")
        kept = [p for p in pairs if p.partition("=")[0] not in ignored]
        if len(kept) == len(pairs):
            return url
        return urlunsplit((parts.scheme, parts.netloc, parts.path, "&".join(kept), parts.fragment))
