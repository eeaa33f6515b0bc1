"""In-link consensus: what the fetched pages that link to a URL say about it.

A crawl sees a waiting URL again each time another fetched page links to it. Each of
those pages has a label (its relevance, :func:`focused.ranking.learning.label`), and the
mean label of a URL's in-linking pages estimates how likely the URL is on the topic:
co-citation by topic pages (Small 1973) is evidence that no anchor text carries.

The *count* of in-links is not: ordering a crawl by backlink count (Cho, Garcia-Molina &
Page 1998) favours the pages every page links to (a country, a year, a unit), whatever
the topic. So the consensus is the **mean** label of the in-linking pages, shrunk to the
crawl's mean label with ``prior`` pseudo-links: ``(sum + prior * mean) / (n + prior)``.
A URL linked from one topic page and twenty others is worth little; one linked from
five topic pages and nothing else is worth much.

URLs are hashed to ``2 ** bits`` buckets (two ``float32`` arrays: 8 MiB at the default
20 bits); a collision mixes two URLs' evidence, rare below a million URLs.

Pure module: no Scrapy import.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import mmh3
import numpy as np

#: Hashed buckets, as a power of two (2**20 buckets: 8 MiB).
BITS = 20


def url_key(url: str, bits: int = BITS) -> int:
    """The bucket of ``url`` (MurmurHash3 of the URL as the crawl sees it)."""
    return mmh3.hash(url, signed=False) & ((1 << bits) - 1)


class LinkConsensus:
    """Mean label of the fetched pages linking to each URL, shrunk to the crawl's mean."""

    def __init__(self, prior: float = 1.0, bits: int = BITS) -> None:
        self.prior = max(1e-6, float(prior))
        self.bits = bits
        self.n = np.zeros(1 << bits, dtype=np.float32)  # in-links seen per bucket
        self.sums = np.zeros(1 << bits, dtype=np.float32)  # their labels, summed
        self.links = 0  # in-links counted

    def keys(self, urls: Sequence[str]) -> np.ndarray:
        """The buckets of ``urls`` (int64)."""
        bits = self.bits
        return np.fromiter((url_key(u, bits) for u in urls), dtype=np.int64, count=len(urls))

    def add(self, keys: np.ndarray, y: float) -> None:
        """A fetched page of label ``y`` links to the URLs of ``keys`` (each counted once)."""
        if not len(keys):
            return
        keys = np.unique(keys)
        self.n[keys] += 1.0
        self.sums[keys] += y
        self.links += len(keys)

    def values(self, keys: np.ndarray, mean: float) -> np.ndarray:
        """The consensus of the URLs of ``keys``: their in-links' mean label, shrunk to
        ``mean`` (a URL no fetched page links to yet gets ``mean``)."""
        keys = np.asarray(keys, dtype=np.int64) & ((1 << self.bits) - 1)
        n = self.n[keys].astype(np.float64)
        sums = self.sums[keys].astype(np.float64)
        return (sums + self.prior * mean) / (n + self.prior)

    def state(self) -> dict[str, Any]:
        """The touched buckets, for a crawl's saved model."""
        touched = np.flatnonzero(self.n)
        return {
            "consensus_keys": touched.astype(np.int64),
            "consensus_n": self.n[touched],
            "consensus_sums": self.sums[touched],
        }

    def load_state(self, state: Mapping[str, Any]) -> None:
        """Continue from a :meth:`state` (a state without one leaves this empty)."""
        self.n[:] = 0.0
        self.sums[:] = 0.0
        keys = np.asarray(state.get("consensus_keys", np.zeros(0)), dtype=np.int64)
        ok = (keys >= 0) & (keys < self.n.size)
        self.n[keys[ok]] = np.asarray(state.get("consensus_n", []), dtype=np.float32)[ok]
        self.sums[keys[ok]] = np.asarray(state.get("consensus_sums", []), dtype=np.float32)[ok]
        self.links = int(self.n.sum())
