"""Query parameters that do not change a host's pages, learnt from its near-duplicates.

Real sites put parameters in their links that name no other page: tracking parameters
(``?utm_campaign=...``, a new value on every page), session ids under a name of the
site's own, sort orders and view options over the same listing. Each value is a new URL
of the same page, so a crawl fetches the page again for every value it meets, and the
near-duplicate check (:mod:`focused.web.neardup`) only spares the store, not the fetch.

The rule (after Bar-Yossef, Keidar & Schonfeld 2009, *Do not crawl in the DUST*): when
a fetched page is a near-duplicate of a page fetched at a URL with the same scheme, host
and path that differs from it only in its query, the query keys whose values differ (or
that only one of the two has) did not make another page there. Once such pairs of a
host showed a key on :data:`MIN_PAIRS` different pages (the URL each pair names once
the keys it differs in are taken out), that key is *ignored* on the host:
:meth:`IgnoredParams.without` takes it out of the host's links, so every further link
to the page is one URL, which the frontier has seen.

A key that does name pages must never be learnt so: the whole host would collapse into
one URL (``/item?id=5`` crawled as ``/item``). Its near-duplicates are one page at many
URLs (a "no such item" answered for every id that is gone, an "out of stock" stub):
taking the key out of them gives one URL, ``/item``, whatever the pairs, so they count
once (and a listing whose two pages happen to hold the same items teaches nothing
either). Counter-evidence guards the rest (:meth:`IgnoredParams.distinct`): when two
pages of one scheme, host and path that differ in the query are both kept as pages of
their own (not near-duplicates), the keys they differ in cannot all be ignored there;
when they differ in one key only, it is *meaningful* on the host and never ignored
again (un-ignored when it was). Links stripped while a key was ignored are not
recovered. The keys of the seed URLs are meaningful from the start
(:meth:`IgnoredParams.protect`): the user named those pages with them.

Bounded: at most ``max_hosts`` hosts and ``max_keys`` keys per host are remembered, the
least recently seen first forgotten; :data:`MAX_APART` sets of keys per host and
:data:`MAX_PATHS` paths. Pure: no Scrapy.
"""

from __future__ import annotations

from collections import OrderedDict
from urllib.parse import urlsplit, urlunsplit

from focused.bounded import recent

__all__ = ["MIN_PAIRS", "IgnoredParams", "differing_keys"]

#: different pages (near-duplicate pairs with the key out) that must show a key before
#: it is ignored on their host
MIN_PAIRS = 2
#: hosts remembered
MAX_HOSTS = 2_000
#: keys counted per host (also: meaningful keys per host)
MAX_KEYS = 64
#: sets of keys in which two pages of the host kept as pages of their own differ
MAX_APART = 16
#: (scheme, host, path) whose last page kept as a page of its own is remembered
MAX_PATHS = 20_000


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


def _collapsed(url: str, keys: frozenset[str]) -> str:
    """The page ``url`` names once ``keys`` are out of its query: its path and the other
    pairs, sorted (two URLs that differ only in ``keys`` give the same)."""
    parts = urlsplit(url)
    kept = sorted(p for p in parts.query.split("&") if p and p.partition("=")[0] not in keys)
    return f"{parts.path}?{'&'.join(kept)}"


class IgnoredParams:
    """Per host, the query keys that near-duplicate pairs showed make no other page, and
    the keys that pages kept as pages of their own showed do."""

    def __init__(
        self,
        min_pairs: int = MIN_PAIRS,
        max_hosts: int = MAX_HOSTS,
        max_keys: int = MAX_KEYS,
        max_paths: int = MAX_PATHS,
    ) -> None:
        self.min_pairs = min_pairs
        self.max_hosts = max_hosts
        self.max_keys = max_keys
        self.max_paths = max_paths
        #: host -> key -> the different pages (hashes of :func:`_collapsed`) of the
        #: near-duplicate pairs that differed in it, at most ``min_pairs``
        self._seen: OrderedDict[str, dict[str, set[int]]] = OrderedDict()
        #: host -> keys ignored there
        self._ignored: OrderedDict[str, set[str]] = OrderedDict()
        #: host -> keys that name pages there: never ignored
        self._meaningful: OrderedDict[str, set[str]] = OrderedDict()
        #: host -> sets of keys two of its distinct pages differ in (not all ignored)
        self._apart: OrderedDict[str, list[frozenset[str]]] = OrderedDict()
        #: (scheme, host, path) -> the last URL there kept as a page of its own
        self._last: OrderedDict[tuple[str, str, str], str] = OrderedDict()

    def observe(self, first: str, later: str) -> frozenset[str]:
        """``later`` was found a near-duplicate of the page fetched at ``first``: count
        the keys they differ in (:func:`differing_keys`) for the page the two name
        without them. Returns the keys of the host that this pair made ignored (usually
        none)."""
        keys = differing_keys(first, later)
        if not keys:
            return frozenset()
        host = urlsplit(later).netloc.lower()
        meaningful = self._meaningful.get(host, set())
        page = hash(_collapsed(later, keys))
        counts = recent(self._seen, host, dict, self.max_hosts)
        for key in keys:
            if key in meaningful:
                continue
            pages = counts.get(key)
            if pages is None:
                if len(counts) >= self.max_keys:
                    continue
                pages = counts[key] = set()
            if len(pages) < self.min_pairs:
                pages.add(page)
        ready = sorted(
            (k for k in keys if k in counts and len(counts[k]) >= self.min_pairs),
            key=lambda k: (-len(counts[k]), k),
        )
        if not ready:
            return frozenset()
        ignored = recent(self._ignored, host, set, self.max_hosts)
        apart = self._apart.get(host, [])
        new = set()
        for key in ready:
            if key in ignored or key in meaningful:
                continue
            # two pages kept apart would become one URL
            if any(key in a and a <= ignored | {key} for a in apart):
                continue
            ignored.add(key)
            new.add(key)
        return frozenset(new)

    def distinct(self, url: str) -> frozenset[str]:
        """The page at ``url`` was kept as a page of its own (not a near-duplicate of a
        page seen before): the keys in which it differs from the last such page of its
        scheme, host and path name pages there. One key alone is made meaningful on the
        host; several are remembered as a set that is never ignored whole. Returns the
        keys that were ignored on the host and no longer are (usually none)."""
        parts = urlsplit(url)
        host = parts.netloc.lower()
        where = (parts.scheme, host, parts.path)
        last = self._last.get(where)
        if last is None:
            recent(self._last, where, lambda: url, self.max_paths)
        else:
            self._last[where] = url
            self._last.move_to_end(where)
        keys = differing_keys(last, url) if last is not None else frozenset()
        if not keys:
            return frozenset()
        ignored = self._ignored.get(host, set())
        if len(keys) == 1 or keys <= ignored:
            # (a set of keys all ignored: which of them names the pages is unknown)
            meaningful = recent(self._meaningful, host, set, self.max_hosts)
            if len(keys) == 1 and len(meaningful) < self.max_keys:
                meaningful |= keys
            back = keys & ignored
            ignored -= back
        else:
            back = frozenset()
        if len(keys) > 1:
            apart = recent(self._apart, host, list, self.max_hosts)
            if keys in apart:
                apart.remove(keys)
            apart.append(keys)
            del apart[:-MAX_APART]
        return frozenset(back)

    def protect(self, url: str) -> None:
        """The keys of ``url`` (a seed: the user named its page with them) are
        meaningful on its host."""
        parts = urlsplit(url)
        keys = {k for k, _ in _pairs(parts.query)}
        if keys:
            meaningful = recent(self._meaningful, parts.netloc.lower(), set, self.max_hosts)
            meaningful |= set(sorted(keys)[: max(0, self.max_keys - len(meaningful))])

    def is_meaningful(self, host: str, key: str) -> bool:
        """Whether ``key`` was shown to name pages of ``host`` (or is a seed's)."""
        return key in self._meaningful.get(host.lower(), ())

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
