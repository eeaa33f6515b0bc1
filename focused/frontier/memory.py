"""The waiting queue of the m-value rule (Liu, Xia & Xu 2010), as a compact priority
frontier for millions of URLs.

Order: ``priority`` descending, then first found first (FIFO on a sequence number), so a
strategy whose priority is ``-depth`` crawls breadth-first. A URL is queued at most once:
pushed again with a *higher* priority it is **promoted** (it keeps its better score, the
question the paper leaves open: "a URL found again keeps the best m"); pushed again with an
equal or lower priority it is ignored.

Storage (about 110-130 bytes per URL instead of ~1 KB for a ``scrapy.Request`` with its
meta dict, and ~200 for one Python object per entry): strategies give integer priorities
that many URLs share (the m-value rule quantises m and r, best-first scores all links of
a page alike, breadth-first uses the depth), so the frontier is a **bucket queue**: one
bucket per priority, a heap of the priorities, and in each bucket the entries in FIFO
(``seq``) order, packed back to back in one ``bytearray``. A record is a fixed header
(size, seq, fingerprint, the strategy's state: value, m, anchor relevance, depth, hops,
16 flag bits, interned ids of the parent page's URL and of the URL's ``scheme://host``)
then the rest of the URL in UTF-8. A :class:`~focused.frontier.seen.FingerprintTable` maps each
waiting fingerprint to ``(bucket id, seq)`` of its live record in 16 bytes per slot.
Popping the best entry deletes from the front of the best bucket (O(1): CPython's
``bytearray`` moves its start); an annealing pick reads the top K records in place and
removes the chosen one, nothing else moves. A host-aware pick (:meth:`MemoryFrontier.pop_available`,
:mod:`focused.frontier.hostaware`) walks the records the same way and takes the best one
whose host may be fetched now, reading the host id in place.

A strategy that learns during the crawl (``learning``) also gives each entry a few
bytes of ``evidence`` (its link's hashed terms and parent label), packed in the record
between the header and the URL; :meth:`MemoryFrontier.rescore` hands the evidence of
every waiting entry to the strategy in one batch and rebuilds the buckets with the new
priorities (down as well as up). Paper strategies give none: their records carry two
more bytes (the evidence length, 0), their order is unchanged.

Promotion appends a new record and leaves the old one in its bucket (lazy deletion): a
record is live only while the table points to its bucket and seq; stale records are
dropped when they reach the front of their bucket, with the bucket when it has no live
record left, or by a sweep when they outnumber the live ones.

:class:`Frontier` is the interface the scheduler uses, so another store (Redis) can be
dropped in; :class:`MemoryFrontier` is the in-process one.

Pure module: no Scrapy import.
"""

from __future__ import annotations

import heapq
import struct
from collections.abc import Hashable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from focused.frontier.hostaware import DEFAULT_SCAN, HostCheck, HostMemo, choose, wanted
from focused.frontier.seen import FingerprintTable
from focused.meta import EVIDENCE
from focused.ranking.annealing import Annealer

__all__ = ["META_EVIDENCE", "Entry", "Frontier", "MemoryFrontier", "Rescorer"]

_MAX = (1 << 63) - 1
_MIN = -(1 << 63)
# size (| _DEAD), seq, fp, value, m, anchor_relevance, depth, hops, flags, parent id, host id,
# evidence length (the strategy's bytes for a rescore, between the header and the URL)
_REC = struct.Struct("<IQqdddHHHIIH")
_VALUE_AT = 20  # offset of ``value`` in a record
#: At most this many bytes of rescoring evidence per entry (more is dropped).
MAX_EVIDENCE = 0xFFFF
#: The request meta key whose bytes the scheduler keeps as :attr:`Entry.evidence`.
META_EVIDENCE = EVIDENCE
_PEEK = struct.Struct("<IQqd")  # size, seq, fp, value: what a scan of a bucket reads
# size, seq, fp and the evidence length (which ends the header): what a rescore reads
_HEAD = struct.Struct(f"<IQq{_REC.size - 22}xH")
_SIZE = struct.Struct("<I")
_HOST = struct.Struct("<I")  # the interned ``scheme://host`` id of a record
_HOST_AT = struct.calcsize("<IQqdddHHHI")  # offset of the host id in a record
_DEAD = 1 << 31  # size bit: the record was taken from the middle of its bucket
_SIZE_MASK = _DEAD - 1
# the table's value for a live record: bucket id << _SEQ_BITS | seq
_SEQ_BITS = 40
_SEQ_MASK = (1 << _SEQ_BITS) - 1
_MAX_BUCKETS = 1 << (63 - _SEQ_BITS)


@dataclass(slots=True)
class Entry:
    """One waiting URL and what is needed to rebuild its request."""

    url: str
    fp: int  # 64-bit fingerprint (:func:`focused.frontier.seen.url_fingerprint`)
    priority: int = 0  # Scrapy priority, higher first
    value: float = 0.0  # the strategy's link value (annealing compares it)
    depth: int = 0
    m: float = 0.0  # message value of the m-value rule
    hops: int = 0
    anchor_relevance: float = 0.0
    parent_url: str = ""
    flags: int = 0  # 16 bits for the scheduler (e.g. dont_filter)
    extra: Any = None  # anything else (kept aside, not packed)
    seq: int = -1  # FIFO order; -1: assigned by the frontier on push
    #: what the strategy needs to score the link again (packed; see ``rescore``)
    evidence: bytes = b""


class Frontier(Protocol):
    """What the scheduler needs from a frontier.

    A frontier that can pick among the hosts that may be fetched now also has
    ``pop_available(available, annealer, scan, key)`` (:meth:`MemoryFrontier.pop_available`);
    the scheduler uses it when it has one (the Redis frontier's is ``pop_free``).
    """

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


class Rescorer(Protocol):
    """``(evidence of each entry) -> (new priorities, new values)``, in that order.

    A frontier that can re-order its waiting entries has ``rescore(rescorer) -> int``
    (:meth:`MemoryFrontier.rescore`); one that cannot (the Redis frontier) has none.
    """

    def __call__(self, evidence: list[bytes]) -> tuple[Sequence[int], Sequence[float]]: ...


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


class _Bucket:
    """The records of one priority, in ``seq`` order, back to back in ``data``."""

    __slots__ = ("data", "id", "last_seq", "live", "prio", "stale")

    def __init__(self, prio: int, id_: int) -> None:
        self.prio = prio
        self.id = id_
        self.data = bytearray()
        self.live = 0  # live records
        self.stale = 0  # records promoted away, still in data
        self.last_seq = -1


class MemoryFrontier:
    """In-memory :class:`Frontier`: a bucket queue of packed records (see module doc).

    ``push`` costs O(1) plus O(log b) for a new priority (b buckets); ``pop`` takes the
    front of the best bucket; ``pop_annealed`` reads the top K live records in place, lets
    the :class:`~focused.ranking.annealing.Annealer` choose one and removes only that one (the
    others keep their place, as if pushed back). ``promoted`` counts promotions.
    """

    def __init__(self) -> None:
        self._buckets: dict[int, _Bucket] = {}
        self._by_id: list[_Bucket | None] = []
        self._free_ids: list[int] = []
        self._prios: list[int] = []  # heap of -priority (may hold dropped ones)
        self._table = FingerprintTable(values=True)
        self._extra: dict[int, Any] = {}
        self._hosts: dict[str, int] = {}
        self._host_list: list[str] = []
        self._parents: dict[str, int] = {"": 0}
        self._parent_list: list[str] = [""]
        self._seq = 0
        self._stale = 0
        self.promoted = 0
        # the host-aware picks that found nothing: their key -> how much of ``_pushed``
        # they had seen; ``_pushed``: (host id, fp) of every push since the first of them
        self._nothing_for: dict[Hashable, int] = {}
        self._pushed: list[tuple[int, int]] = []
        #: host-aware picks answered "nothing" from that memo, without a walk
        self.remembered = 0

    # --- packing --------------------------------------------------------------------
    def _intern(self, table: dict[str, int], items: list[str], s: str) -> int:
        i = table.get(s)
        if i is None:
            i = table[s] = len(items)
            items.append(s)
        return i

    def _pack(self, e: Entry, seq: int) -> bytes:
        prefix, rest = _split(e.url)
        tail = rest.encode("utf-8")
        evidence = e.evidence if len(e.evidence) <= MAX_EVIDENCE else b""
        return (
            _REC.pack(
                _REC.size + len(evidence) + len(tail),
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
                len(evidence),
            )
            + evidence
            + tail
        )

    def _unpack(self, data: bytes | bytearray, at: int, priority: int) -> Entry:
        size, seq, fp, value, m, anchor, depth, hops, flags, parent, host, n_ev = _REC.unpack_from(
            data, at
        )
        end = at + (size & _SIZE_MASK)
        tail = at + _REC.size + n_ev
        return Entry(
            url=self._host_list[host] + data[tail:end].decode("utf-8"),
            fp=fp,
            priority=priority,
            value=value,
            depth=depth,
            m=m,
            hops=hops,
            anchor_relevance=anchor,
            parent_url=self._parent_list[parent],
            flags=flags,
            extra=self._extra.get(fp),
            seq=seq,
            evidence=bytes(data[at + _REC.size : tail]) if n_ev else b"",
        )

    # --- buckets --------------------------------------------------------------------
    def _bucket(self, prio: int) -> _Bucket:
        b = self._buckets.get(prio)
        if b is None:
            if self._free_ids:
                id_ = self._free_ids.pop()
            else:
                id_ = len(self._by_id)
                if id_ >= _MAX_BUCKETS:
                    raise OverflowError("too many distinct priorities waiting at once")
                self._by_id.append(None)
            b = self._buckets[prio] = self._by_id[id_] = _Bucket(prio, id_)
            heapq.heappush(self._prios, -prio)
        return b

    def _drop(self, b: _Bucket) -> None:
        """Forget a bucket without live records (its stale records go with it)."""
        self._stale -= b.stale
        del self._buckets[b.prio]
        self._by_id[b.id] = None
        self._free_ids.append(b.id)

    def _is_live(self, b: _Bucket, seq: int, fp: int) -> bool:
        return self._table.get(fp) == (b.id << _SEQ_BITS) | seq

    def _live_records(self, b: _Bucket, limit: int) -> list[tuple[int, int, int, float]]:
        """``(offset, size, fp, value)`` of the first ``limit`` live records of ``b``;
        dead and stale records met at the front are deleted on the way."""
        data = b.data
        out: list[tuple[int, int, int, float]] = []
        at = 0
        end = len(data)
        while at < end and len(out) < limit:
            size, seq, fp, value = _PEEK.unpack_from(data, at)
            if size & _DEAD:
                size &= _SIZE_MASK
            elif not b.stale or self._is_live(b, seq, fp):
                out.append((at, size, fp, value))
                at += size
                continue
            else:
                b.stale -= 1
                self._stale -= 1
            if at == 0 and not out:  # garbage at the front: drop it
                del data[:size]
                end -= size
            else:
                if not size & _DEAD:  # a stale record behind live ones: mark it dead
                    _SIZE.pack_into(data, at, size | _DEAD)
                at += size
        return out

    def _best(self) -> _Bucket | None:
        prios, buckets = self._prios, self._buckets
        while prios:
            b = buckets.get(-prios[0])
            if b is not None:
                return b
            heapq.heappop(prios)
        return None

    def _take(self, b: _Bucket, at: int, size: int, fp: int) -> Entry:
        """Remove the live record at ``at`` of ``b`` and return its entry."""
        self._forget_nothing()
        entry = self._unpack(b.data, at, b.prio)
        if at == 0:
            del b.data[:size]
        else:
            _SIZE.pack_into(b.data, at, size | _DEAD)
        b.live -= 1
        if not b.live:
            self._drop(b)
        self._table.discard(fp)
        if entry.extra is not None:
            del self._extra[fp]
        return entry

    # --- the Frontier interface -----------------------------------------------------
    def push(self, entry: Entry) -> bool:
        fp = entry.fp
        prio = _clamp(int(entry.priority), _MIN, _MAX)
        table = self._table
        old = table.get(fp)
        if old >= 0:
            ob = self._by_id[old >> _SEQ_BITS]
            assert ob is not None
            if prio <= ob.prio:
                return False
            ob.live -= 1
            ob.stale += 1
            self._stale += 1
            self.promoted += 1
            if not ob.live:
                self._drop(ob)
        if entry.seq >= 0:
            seq = entry.seq
            if seq >= self._seq:
                self._seq = seq + 1
        else:
            seq = entry.seq = self._seq
            self._seq += 1
        if seq > _SEQ_MASK:
            raise OverflowError(f"sequence number {seq} too large")
        rec = self._pack(entry, seq)
        self._note_push(rec, fp)
        b = self._bucket(prio)
        if seq > b.last_seq:
            b.data += rec
            b.last_seq = seq
        else:
            self._insert(b, rec, seq)
        b.live += 1
        table.set(fp, (b.id << _SEQ_BITS) | seq)
        if entry.extra is not None:
            self._extra[fp] = entry.extra
        elif old >= 0:
            self._extra.pop(fp, None)
        if self._stale > 1024 and self._stale > len(table):
            self._sweep()
        return True

    def _insert(self, b: _Bucket, rec: bytes, seq: int) -> None:
        """Put ``rec`` before the first record of ``b`` with a larger seq (an entry
        restored with its old seq: rare, O(bucket))."""
        data = b.data
        at = 0
        while at < len(data):
            size, other = _PEEK.unpack_from(data, at)[:2]
            if other > seq:
                break
            at += size & _SIZE_MASK
        data[at:at] = rec

    def pop(self) -> Entry | None:
        while (b := self._best()) is not None:
            found = self._live_records(b, 1)
            if found:
                at, size, fp, _value = found[0]
                return self._take(b, at, size, fp)
            self._drop(b)  # pragma: no cover - a bucket with live > 0 has a live record
        return None

    def pop_annealed(self, annealer: Annealer) -> Entry | None:
        if annealer.temperature <= 0 or annealer.k <= 1:
            annealer.cool()
            return self.pop()
        k = annealer.k
        b = self._best()
        if b is None:
            return None
        if b.live >= k:  # the usual case: the top K are in the best bucket
            found = self._live_records(b, k)
            i = annealer.choose([c[3] for c in found])
            at, size, fp, _value = found[i]
            return self._take(b, at, size, fp)
        # the top K span several buckets: take their priorities off the heap, put back
        prios, buckets = self._prios, self._buckets
        taken: list[int] = []
        cands: list[tuple[_Bucket, int, int, int, float]] = []
        while len(cands) < k and prios:
            p = heapq.heappop(prios)
            b = buckets.get(-p)
            if b is None or p in taken:
                continue
            taken.append(p)
            for at, size, fp, value in self._live_records(b, k - len(cands)):
                cands.append((b, at, size, fp, value))
        for p in taken:
            heapq.heappush(prios, p)
        if not cands:
            return None
        i = annealer.choose([c[4] for c in cands])
        b, at, size, fp, _value = cands[i]
        return self._take(b, at, size, fp)

    def pop_available(
        self,
        available: HostCheck,
        annealer: Annealer | None = None,
        scan: int = DEFAULT_SCAN,
        key: Hashable = None,
    ) -> Entry | None:
        """The pick of :mod:`focused.frontier.hostaware`: the best entry (or the annealing
        choice among the top K, He, Cheng & Cai 2009) among the entries whose host
        ``available(scheme://host, extra)`` says may be fetched now.

        Walks the buckets best first and each bucket first found first, at most ``scan``
        live records; asks each host once (an entry with ``extra`` each time). Only the
        chosen record is removed. With every host available it takes what :meth:`pop`
        (no annealer) or :meth:`pop_annealed` would, and draws the same random numbers.

        ``key`` names the predicate (the same key: the same answers, e.g. the set of
        busy hosts that ``available`` refuses). A pick that found nothing is remembered
        under its key until an entry is taken or the frontier is rescored; the next pick
        with that key asks only about the entries pushed since, and finds nothing again
        without a walk when none of them is available (the walk would see the same
        entries, and the new ones, refused, only push others further down).
        """
        if (
            key is not None
            and key in self._nothing_for
            and not self._any_pushed_available(key, available)
        ):
            self.remembered += 1
            return None
        want = wanted(annealer)
        memo = HostMemo(available)
        hosts, extras = self._host_list, self._extra
        prios, buckets = self._prios, self._buckets
        # popped off the heap, pushed back below; a set: with a priority per entry the
        # walk goes up to ``scan`` buckets deep
        walked: set[int] = set()
        cands: list[tuple[_Bucket, int, int, int, float]] = []
        looked = 0
        while len(cands) < want and looked < scan and prios:
            p = heapq.heappop(prios)
            b = buckets.get(-p)
            if b is None or p in walked:
                continue
            walked.add(p)
            data = b.data
            for at, size, fp, value in self._scan(b):
                looked += 1
                host = _HOST.unpack_from(data, at + _HOST_AT)[0]
                extra = extras.get(fp) if extras else None
                if memo(host, lambda h=host: hosts[h], extra):
                    cands.append((b, at, size, fp, value))
                    if len(cands) >= want:
                        break
                if looked >= scan:
                    break
        for p in walked:
            heapq.heappush(prios, p)
        if not cands:
            if key is not None:
                self._nothing_for[key] = len(self._pushed)
            return None
        i = choose([c[4] for c in cands], annealer)
        b, at, size, fp, _value = cands[i]
        return self._take(b, at, size, fp)

    #: pushes remembered for the picks that found nothing; beyond, they are forgotten
    _MAX_PUSHED = 8192

    def _note_push(self, rec: bytes, fp: int) -> None:
        """Remember the push of record ``rec`` for the picks that found nothing."""
        if not self._nothing_for:
            return
        pushed = self._pushed
        if len(pushed) >= self._MAX_PUSHED:
            self._forget_nothing()
        else:
            pushed.append((_HOST.unpack_from(rec, _HOST_AT)[0], fp))

    def _forget_nothing(self) -> None:
        if self._nothing_for:
            self._nothing_for.clear()
            self._pushed.clear()

    def _any_pushed_available(self, key: Hashable, available: HostCheck) -> bool:
        """Whether an entry pushed since the pick of ``key`` found nothing, and still
        waiting, is ``available`` (then a walk is needed); else the memo moves on."""
        pushed = self._pushed
        since = self._nothing_for[key]
        if since < len(pushed):
            memo = HostMemo(available)
            hosts, extras, table = self._host_list, self._extra, self._table
            for host, fp in pushed[since:]:
                if fp in table and memo(
                    host, lambda h=host: hosts[h], extras.get(fp) if extras else None
                ):
                    return True
            self._nothing_for[key] = len(pushed)
        return False

    def _scan(self, b: _Bucket) -> Iterator[tuple[int, int, int, float]]:
        """``(offset, size, fp, value)`` of the live records of ``b`` in order, lazily:
        :meth:`_live_records` without a limit (garbage at the front is deleted before
        the first record is yielded, so the offsets yielded stay valid)."""
        data = b.data
        at = 0
        seen_live = False
        while at < len(data):
            size, seq, fp, value = _PEEK.unpack_from(data, at)
            if size & _DEAD:
                size &= _SIZE_MASK
            elif not b.stale or self._is_live(b, seq, fp):
                seen_live = True
                yield at, size, fp, value
                at += size
                continue
            else:
                b.stale -= 1
                self._stale -= 1
            if at == 0 and not seen_live:  # garbage at the front: drop it
                del data[:size]
            else:
                if not size & _DEAD:  # a stale record behind live ones: mark it dead
                    _SIZE.pack_into(data, at, size | _DEAD)
                at += size

    def ignores(self, fp: int, priority: int) -> bool:
        """Whether :meth:`push` of ``fp`` at ``priority`` would be ignored because
        ``fp`` waits at a priority at least as high (it would be no promotion)."""
        val = self._table.get(fp)
        if val < 0:
            return False
        b = self._by_id[val >> _SEQ_BITS]
        return b is not None and _clamp(int(priority), _MIN, _MAX) <= b.prio

    def get(self, fp: int) -> Entry | None:
        found = self._find(fp)
        return None if found is None else self._unpack(found[0].data, found[1], found[0].prio)

    def _find(self, fp: int) -> tuple[_Bucket, int] | None:
        """Bucket and offset of the live record of ``fp`` (a scan of its bucket)."""
        val = self._table.get(fp)
        if val < 0:
            return None
        b = self._by_id[val >> _SEQ_BITS]
        assert b is not None
        seq = val & _SEQ_MASK
        data, at = b.data, 0
        while at < len(data):
            size, other, other_fp = _PEEK.unpack_from(data, at)[:3]
            if other == seq and other_fp == fp and not size & _DEAD:
                return b, at
            at += size & _SIZE_MASK
        raise AssertionError("a waiting fingerprint without its record")  # pragma: no cover

    def __contains__(self, fp: object) -> bool:
        return fp in self._table

    def __len__(self) -> int:
        return len(self._table)

    def entries(self) -> Iterator[Entry]:
        for b in list(self._buckets.values()):
            data = bytes(b.data)
            for at, _size, _fp, _value in self._live_records_of(b, data):
                yield self._unpack(data, at, b.prio)

    def _live_records_of(
        self, b: _Bucket, data: bytes | bytearray
    ) -> Iterator[tuple[int, int, int, float]]:
        """Every live record of ``b`` (read only)."""
        at = 0
        while at < len(data):
            size, seq, fp, value = _PEEK.unpack_from(data, at)
            if not size & _DEAD and (not b.stale or self._is_live(b, seq, fp)):
                yield at, size, fp, value
            at += size & _SIZE_MASK

    def _sweep(self) -> None:
        """Drop stale and dead records (promoted away) from every bucket."""
        for b in self._buckets.values():
            if b.stale:
                data = b.data
                b.data = bytearray().join(
                    data[at : at + size] for at, size, _fp, _v in self._live_records_of(b, data)
                )
                b.stale = 0
        self._stale = 0

    def rescore(self, rescorer: Rescorer) -> int:
        """Score every waiting entry that has ``evidence`` again (one ``rescorer`` call
        on all of them) and re-order the frontier: priorities move up or down, first
        found first within a priority (``seq`` is kept). Entries without evidence keep
        their priority. Returns the number of entries whose priority changed.

        O(n log n) for n waiting entries: one pass in Python reads each live record
        (stale and dead ones are dropped on the way); the new order, the new values
        written into the records and the fingerprint table's new positions are numpy
        over all of them.
        """
        prios, seqs, fps, recs, evidence, scored = self._copy_live_records()
        if not evidence:
            return 0
        self._forget_nothing()
        new_prios, new_values = rescorer(evidence)
        # checked before anything changes: a rescorer's bad answer leaves the frontier as is
        at = np.asarray(scored, dtype=np.int64)
        old = np.asarray(prios, dtype=np.int64)
        given = np.asarray([_clamp(int(p), _MIN, _MAX) for p in new_prios], dtype=np.int64)
        values = np.asarray([float(v) for v in new_values], dtype=np.float64)
        if given.shape != at.shape or values.shape != at.shape:
            raise ValueError("the rescorer must give one priority and one value per evidence")
        changed = int(np.count_nonzero(given != old[at]))
        prio = old.copy()
        prio[at] = given
        self._rebuild(prio, np.asarray(seqs, dtype=np.int64), fps, recs, at=at, values=values)
        return changed

    def _copy_live_records(
        self,
    ) -> tuple[list[int], list[int], list[int], list[bytes], list[bytes], list[int]]:
        """The priority, seq, fingerprint and bytes of every live record, plus the
        evidence of the records that have some and those records' indexes."""
        head = _HEAD.unpack_from  # size, seq, fp, evidence length
        ev_at = _REC.size
        is_live = self._is_live
        prios: list[int] = []
        seqs: list[int] = []
        fps: list[int] = []
        recs: list[bytes] = []
        evidence: list[bytes] = []
        scored: list[int] = []  # indexes of the records with evidence
        for b in self._buckets.values():
            data, prio, check = bytes(b.data), b.prio, b.stale
            at, end = 0, len(data)
            while at < end:
                size, seq, fp, n_ev = head(data, at)
                if size & _DEAD:
                    at += size & _SIZE_MASK
                    continue
                nxt = at + size
                if not check or is_live(b, seq, fp):
                    if n_ev:
                        scored.append(len(recs))
                        evidence.append(data[at + ev_at : at + ev_at + n_ev])
                    recs.append(data if at == 0 and nxt == end else data[at:nxt])
                    prios.append(prio)
                    seqs.append(seq)
                    fps.append(fp)
                at = nxt
        return prios, seqs, fps, recs, evidence, scored

    def _rebuild(
        self,
        prio: np.ndarray,
        seq: np.ndarray,
        fps: list[int],
        recs: list[bytes],
        *,
        at: np.ndarray,
        values: np.ndarray,
    ) -> None:
        """Replace the frontier by ``recs`` (emptied on the way) with priorities
        ``prio``: one bucket per priority, records in seq order, the value of record
        ``at[i]`` set to ``values[i]``, the table pointing at them."""
        n = len(recs)
        order = np.lexsort((seq, prio))  # by priority, then seq
        sorted_prio = prio[order]
        first = np.flatnonzero(np.r_[True, sorted_prio[1:] != sorted_prio[:-1]])
        if len(first) > _MAX_BUCKETS:
            raise OverflowError("too many distinct priorities waiting at once")
        last = np.r_[first[1:], n] - 1
        # the old buckets go first, and the copies once joined: at most two copies of
        # the records are held at any time, as many as before the rescore
        self._buckets.clear()
        self._by_id = []
        self._free_ids.clear()
        self._stale = 0
        sizes = np.fromiter(map(len, recs), dtype=np.int64, count=n)[order]
        ends = np.cumsum(sizes)
        starts = ends - sizes
        data = bytearray().join([recs[j] for j in order.tolist()])
        recs.clear()
        # the new values, written into the joined records in one numpy step
        rank = np.empty(n, dtype=np.int64)
        rank[order] = np.arange(n, dtype=np.int64)
        where = starts[rank[at]] + _VALUE_AT
        view = np.frombuffer(data, dtype=np.uint8)
        view[where[:, None] + np.arange(8)] = values.astype("<f8").view(np.uint8).reshape(-1, 8)
        del view  # the bytearray is sliced below
        by_id: list[_Bucket | None] = []
        buckets = self._buckets
        byte_from, byte_to = starts[first].tolist(), ends[last].tolist()
        group_prios = sorted_prio[first].tolist()
        last_seqs = seq[order[last]].tolist()
        lives = (last - first + 1).tolist()
        for id_, (p, lo, hi, live, last_seq) in enumerate(
            zip(group_prios, byte_from, byte_to, lives, last_seqs, strict=True)
        ):
            b = _Bucket(p, id_)
            b.data = data[lo:hi]
            b.live = live
            b.last_seq = last_seq
            buckets[p] = b
            by_id.append(b)
        del data
        self._by_id = by_id
        # ascending -priority: a heap already
        self._prios = [-p for p in reversed(group_prios)]
        ids = np.repeat(np.arange(len(first), dtype=np.int64), last - first + 1)
        self._table.update(np.asarray(fps, dtype=np.int64)[order], (ids << _SEQ_BITS) | seq[order])
