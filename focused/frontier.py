"""The waiting queue of seed 000 as a compact priority frontier for millions of URLs.

Order: ``priority`` descending, then first found first (FIFO on a sequence number), so a
strategy whose priority is ``-depth`` crawls breadth-first. A URL is queued at most once:
pushed again with a *higher* priority it is **promoted** (it keeps its better score, the
question seed 000 leaves open: "a URL found again keeps the best m"); pushed again with an
equal or lower priority it is ignored.

Entries are packed into one ``bytes`` object each instead of a ``scrapy.Request`` (about
1 KB with its meta dict): a fixed header whose first 16 bytes sort like
``(-priority, seq)`` (so :mod:`heapq` orders the raw bytes directly), the fingerprint,
the strategy's state (value, m, hops, anchor relevance, depth), 16 flag bits, interned ids
of the URL's ``scheme://host`` and of the parent page's URL, then the rest of the URL in
UTF-8.
Promotion pushes a new record and leaves the old one in the heap (lazy deletion): a
record is live only while ``fingerprint -> record`` in the live map points to that very
object, and stale records are skipped on pop (and swept when they outnumber live ones).

:class:`Frontier` is the interface the scheduler uses, so another store (Redis) can be
dropped in; :class:`MemoryFrontier` is the in-process one.

Pure module: no Scrapy import.
"""

from __future__ import annotations

import heapq
import struct
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Protocol

from focused.annealing import Annealer

__all__ = ["Entry", "Frontier", "MemoryFrontier"]

_MAX = (1 << 63) - 1
_MIN = -(1 << 63)
# prio_key, seq, fp, value, m, anchor_relevance, depth, hops, flags, parent id, host id
_HEAD = struct.Struct(">QQqdddHHHII")
_FP = struct.Struct(">q")
_VALUE = struct.Struct(">d")
_FP_AT = 16
_VALUE_AT = 24


@dataclass(slots=True)
class Entry:
    """One waiting URL and what is needed to rebuild its request."""

    url: str
    fp: int  # 64-bit fingerprint (:func:`focused.dedup.url_fingerprint`)
    priority: int = 0  # Scrapy priority, higher first
    value: float = 0.0  # the strategy's link value (annealing compares it)
    depth: int = 0
    m: float = 0.0  # message value (seed 000)
    hops: int = 0
    anchor_relevance: float = 0.0
    parent_url: str = ""
    flags: int = 0  # 16 bits for the scheduler (e.g. dont_filter)
    extra: Any = None  # anything else (kept aside, not packed)
    seq: int = -1  # FIFO order; -1: assigned by the frontier on push


class Frontier(Protocol):
    """What the scheduler needs from a frontier."""

    promoted: int

    def push(self, entry: Entry) -> bool:
        """Queue ``entry``; ``True`` when added or promoted, ``False`` when ignored.

        An ``entry.seq`` of -1 is replaced by the next sequence number (FIFO order).
        """
        ...

    def pop(self) -> Entry | None:
        """Remove and return the best entry (``None`` when empty)."""
        ...

    def pop_annealed(self, annealer: Annealer) -> Entry | None:
        """Remove and return the entry the annealer picks among the top K."""
        ...

    def get(self, fp: int) -> Entry | None:
        """The waiting entry of fingerprint ``fp``, if any."""
        ...

    def __contains__(self, fp: object) -> bool: ...

    def __len__(self) -> int: ...

    def entries(self) -> Iterator[Entry]:
        """Every waiting entry, in no particular order."""
        ...


def _clamp(value: int, low: int, high: int) -> int:
    return low if value < low else high if value > high else value


def _split(url: str) -> tuple[str, str]:
    """``("scheme://host", "/rest")`` of a URL (the prefix is interned)."""
    i = url.find("://")
    if i < 0:
        return "", url
    j = url.find("/", i + 3)
    if j < 0:
        return url, ""
    return url[:j], url[j:]


class MemoryFrontier:
    """In-memory :class:`Frontier`: a binary heap of packed records (see module doc).

    ``push`` and ``pop`` cost O(log n); ``pop_annealed`` pops the top K live records,
    lets the :class:`~focused.annealing.Annealer` choose one and pushes the others back.
    ``promoted`` counts promotions.
    """

    def __init__(self) -> None:
        self._heap: list[bytes] = []
        self._live: dict[int, bytes] = {}
        self._extra: dict[int, Any] = {}
        self._hosts: dict[str, int] = {}
        self._host_list: list[str] = []
        self._parents: dict[str, int] = {"": 0}
        self._parent_list: list[str] = [""]
        self._seq = 0
        self._stale = 0
        self.promoted = 0

    # --- packing --------------------------------------------------------------------
    def _intern(self, table: dict[str, int], items: list[str], s: str) -> int:
        i = table.get(s)
        if i is None:
            i = table[s] = len(items)
            items.append(s)
        return i

    def _pack(self, e: Entry, seq: int) -> bytes:
        prefix, rest = _split(e.url)
        return _HEAD.pack(
            _MAX - _clamp(int(e.priority), _MIN, _MAX),
            seq,
            e.fp,
            float(e.value),
            float(e.m),
            float(e.anchor_relevance),
            _clamp(int(e.depth), 0, 0xFFFF),
            _clamp(int(e.hops), 0, 0xFFFF),
            e.flags & 0xFFFF,
            self._intern(self._parents, self._parent_list, e.parent_url or ""),
            self._intern(self._hosts, self._host_list, prefix),
        ) + rest.encode("utf-8")

    def _unpack(self, rec: bytes) -> Entry:
        key, seq, fp, value, m, anchor, depth, hops, flags, parent, host = _HEAD.unpack_from(rec)
        return Entry(
            url=self._host_list[host] + rec[_HEAD.size :].decode("utf-8"),
            fp=fp,
            priority=_MAX - key,
            value=value,
            depth=depth,
            m=m,
            hops=hops,
            anchor_relevance=anchor,
            parent_url=self._parent_list[parent],
            flags=flags,
            extra=self._extra.get(fp),
            seq=seq,
        )

    # --- the Frontier interface -----------------------------------------------------
    def push(self, entry: Entry) -> bool:
        fp = entry.fp
        old = self._live.get(fp)
        if old is not None:
            if entry.priority <= _MAX - _HEAD.unpack_from(old)[0]:
                return False
            self._stale += 1
            self.promoted += 1
        if entry.seq >= 0:
            seq = entry.seq
            if seq >= self._seq:
                self._seq = seq + 1
        else:
            seq = entry.seq = self._seq
            self._seq += 1
        rec = self._pack(entry, seq)
        self._live[fp] = rec
        if entry.extra is not None:
            self._extra[fp] = entry.extra
        elif old is not None:
            self._extra.pop(fp, None)
        heapq.heappush(self._heap, rec)
        if self._stale > 1024 and self._stale > len(self._live):
            self._sweep()
        return True

    def _take(self, rec: bytes, fp: int) -> Entry:
        entry = self._unpack(rec)
        del self._live[fp]
        if entry.extra is not None:
            del self._extra[fp]
        return entry

    def _pop_live(self) -> bytes | None:
        heap, live = self._heap, self._live
        while heap:
            rec = heapq.heappop(heap)
            if live.get(_FP.unpack_from(rec, _FP_AT)[0]) is rec:
                return rec
            self._stale -= 1
        return None

    def pop(self) -> Entry | None:
        rec = self._pop_live()
        if rec is None:
            return None
        return self._take(rec, _FP.unpack_from(rec, _FP_AT)[0])

    def pop_annealed(self, annealer: Annealer) -> Entry | None:
        if annealer.temperature <= 0 or annealer.k <= 1:
            annealer.cool()
            return self.pop()
        top: list[bytes] = []
        while len(top) < annealer.k:
            rec = self._pop_live()
            if rec is None:
                break
            top.append(rec)
        if not top:
            return None
        i = annealer.choose([_VALUE.unpack_from(rec, _VALUE_AT)[0] for rec in top])
        chosen = top[i]
        heap = self._heap
        for j, rec in enumerate(top):
            if j != i:
                heapq.heappush(heap, rec)
        return self._take(chosen, _FP.unpack_from(chosen, _FP_AT)[0])

    def get(self, fp: int) -> Entry | None:
        rec = self._live.get(fp)
        return None if rec is None else self._unpack(rec)

    def __contains__(self, fp: object) -> bool:
        return fp in self._live

    def __len__(self) -> int:
        return len(self._live)

    def entries(self) -> Iterator[Entry]:
        for rec in list(self._live.values()):
            yield self._unpack(rec)

    def _sweep(self) -> None:
        """Drop stale records (promoted away) from the heap."""
        self._heap = list(self._live.values())
        heapq.heapify(self._heap)
        self._stale = 0
