"""Where a shared frontier's keys live: one partition per host group, one hash tag each.

With ``FOCUSED_REDIS_PARTITIONS = N`` (> 1), or on a Redis Cluster, a crawl's frontier is
split by host: a URL belongs to partition ``crc32(host) mod N`` (a stable hash, the same
in every worker and every run; not Python's ``hash``), so a host's URLs, its seen tests and
the host-aware pick's scan of its URLs all stay in one partition. Each partition's keys
share one hash tag, ``{<key>:p<i>}``, so that its Lua script touches one cluster slot and
runs on one node:

``{<key>:p3}:queue``, ``{<key>:p3}:data``, ``{<key>:p3}:inflight``, ``{<key>:p3}:seen``,
``{<key>:p3}:stats``, and its rescoring lease ``{<key>:p3}:rescore:lock`` / ``:rescore``.

For ``N`` up to 64 the tag of partition ``i`` gets a suffix (``{<key>:p3.17}``) when
needed so that its slot falls in the middle of the ``i``-th ``N``-th of the 16 384 slots:
``redis-cli --cluster create`` gives each master one contiguous range, so ``N`` equal to
(a multiple of) the number of masters puts the same number of partitions on each master.
The shared learnt model, and the record of ``N`` itself, live under ``{<key>}``.

``N = 1`` on a single server is the layout of one key prefix (``<key>:queue``, ...), as
before partitions existed.
"""

from __future__ import annotations

import contextlib
import zlib
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from redis.crc import REDIS_CLUSTER_HASH_SLOTS, key_slot

__all__ = ["FRONTIER_NAMES", "Layout", "host_of", "partition_of"]

#: the frontier's keys of one partition, in the order the step script takes them
FRONTIER_NAMES = ("queue", "data", "inflight", "seen", "stats")
_BALANCE_UP_TO = 64


def host_of(url: str) -> str:
    """The host name of ``url``: lower case, no port, no brackets; IDNA-encoded when it
    is not ASCII (so that ``bücher.test`` and ``xn--bcher-kva.test`` agree)."""
    try:
        host = urlsplit(url).hostname or ""
    except ValueError:
        return ""
    if not host.isascii():
        with contextlib.suppress(UnicodeError):
            host = host.encode("idna").decode("ascii")
    return host


def partition_of(host: str, partitions: int) -> int:
    """The partition of ``host``: ``crc32(host) mod partitions``."""
    if partitions <= 1:
        return 0
    return zlib.crc32(host.encode("utf-8")) % partitions


def _balanced_tag(key: str, p: int, n: int) -> str:
    """``<key>:p<p>``, suffixed so that its slot lies in the middle half of the ``p``-th
    ``n``-th of the slots (for ``n`` <= 64; above, the plain tag)."""
    tag = f"{key}:p{p}"
    if n <= 1 or n > _BALANCE_UP_TO:
        return tag
    width = REDIS_CLUSTER_HASH_SLOTS / n
    lo, hi = p * width + width / 4, p * width + 3 * width / 4
    for j in range(1, 100_000):
        if lo <= key_slot(tag.encode()) < hi:
            return tag
        tag = f"{key}:p{p}.{j}"
    return f"{key}:p{p}"  # pragma: no cover - 100 000 misses do not happen


@dataclass(frozen=True)
class Layout:
    """The key names of one crawl's frontier: ``partitions`` partitions under ``key``;
    ``tagged`` (forced for more than one partition) puts them under hash tags."""

    key: str
    partitions: int = 1
    tagged: bool = False
    tags: tuple[str, ...] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        if self.partitions < 1:
            raise ValueError(f"partitions must be >= 1, got {self.partitions}")
        if self.partitions > 1 and not self.tagged:
            object.__setattr__(self, "tagged", True)
        n = self.partitions
        tags = tuple(_balanced_tag(self.key, p, n) for p in range(n)) if self.tagged else ()
        object.__setattr__(self, "tags", tags)

    def _prefix(self, p: int) -> str:
        return "{" + self.tags[p] + "}" if self.tagged else self.key

    @property
    def base(self) -> str:
        """The prefix of the crawl-wide keys (model, partition count)."""
        return "{" + self.key + "}" if self.tagged else self.key

    def frontier_keys(self, p: int) -> list[str]:
        """The step script's keys of partition ``p``."""
        prefix = self._prefix(p)
        return [f"{prefix}:{name}" for name in FRONTIER_NAMES]

    def rescore_keys(self, p: int) -> list[str]:
        """The rescoring lease and scan state of partition ``p``."""
        prefix = self._prefix(p)
        return [f"{prefix}:rescore:lock", f"{prefix}:rescore"]

    def model_keys(self) -> list[str]:
        """The shared model's keys (``counts``, ``sums``, ``meta``, ``terms``, ``log``)."""
        return [f"{self.base}:model:{n}" for n in ("counts", "sums", "meta", "terms", "log")]

    @property
    def partitions_key(self) -> str:
        """The record of the crawl's partition count (a string; absent for one partition
        on a single server): ``{<key>}:partitions`` whatever the layout, so that a worker
        started with another count finds it."""
        return "{" + self.key + "}:partitions"

    @property
    def crawl_key(self) -> str:
        """The record of what the crawl is (a hash: spider, topic, strategy), written by
        its first worker and compared by every later one: ``{<key>}:crawl``."""
        return "{" + self.key + "}:crawl"

    def partition_of_url(self, url: str) -> int:
        return partition_of(host_of(url), self.partitions) if self.partitions > 1 else 0
