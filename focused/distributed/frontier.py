"""The shared frontier in Redis: a pure client (no Scrapy, no Twisted).

:class:`RedisFrontier` keeps the waiting queue, the seen-URL set and the in-flight / done /
error bookkeeping of the four queues of Liu, Xia & Xu (2010) under one key prefix:

``<key>:queue``     sorted set, the waiting URLs: score ``-priority``, member
                    ``%015d`` sequence number + 8-byte fingerprint, so equal priorities
                    come out first-found first (Redis orders equal scores by member)
``<key>:data``      hash fingerprint -> member + packed entry (link value, priority,
                    flags, m, hops, anchor relevance, depth, URL, parent URL, extra);
                    kept while the URL waits or is in flight
``<key>:inflight``  sorted set fingerprint -> lease deadline (ms, Redis server clock)
``<key>:seen``      set of the fingerprints ever queued (the shared dupefilter)
``<key>:stats``     hash: ``seq``, ``picks``, ``done``, ``error``, ``promoted``,
                    ``reclaimed``, ``accepted_worse``

An entry with rescoring evidence (``learning``) keeps it at the end of its packed entry
(flag bit 0x80 on the extra's kind, then the evidence and its length, u16), so that the
rescoring of :mod:`focused.distributed.model` can value it again; the model itself lives
under ``<key>:model:*``.

Every change is one Lua script run atomically on the server (``pick.lua`` next to this
module, read with :mod:`importlib.resources`, so it works from a zipped egg): it applies a
batch of staged operations (push with promotion, done, error, release, lease renewal),
hands expired leases back to the queue, and optionally picks the next URL: the best one,
or the simulated-annealing choice with tunneling of He, Cheng & Cai (2009) between the
best and a uniformly drawn one of the top ``K`` (Metropolis test ``u < exp(-(v_best -
v_cand) / T)``). The temperature is shared: ``T = max(T_min, T0 * alpha**picks)`` with
``picks`` the crawl's global pick counter, so it cools once per pick of any worker, as
the paper cools once per pick. The worker supplies the two uniform numbers from its
seeded :class:`~focused.ranking.annealing.Annealer`. Because the pick and the move to
in-flight are one script, two workers never get the same URL.

Entries and their ``extra`` are pickled into Redis: the Redis server must be trusted,
as with scrapy-redis.
"""

from __future__ import annotations

import os
import pickle
import struct
from collections.abc import Callable, Collection, Iterator
from dataclasses import dataclass, field
from importlib.resources import files
from pathlib import Path
from typing import Any

import redis

from focused.distributed.connection import REDIS_DOWN, unreachable_message
from focused.distributed.model import EVIDENCE_FLAG
from focused.errors import RedisUnavailable
from focused.frontier.hostaware import DEFAULT_SCAN
from focused.frontier.memory import Entry
from focused.ranking.annealing import Annealer

__all__ = [
    "ADDED",
    "ANNEAL",
    "BEST",
    "COPIED",
    "IGNORED_GONE",
    "IGNORED_WAITING",
    "LOST",
    "NO_PICK",
    "PROMOTED",
    "REQUEUED",
    "STEP_LUA",
    "clamp_priority",
    "Counts",
    "RedisFrontier",
    "Step",
]

# --- the packed entry ------------------------------------------------------------------
# value, priority, flags, m, anchor relevance, depth, hops, extra kind, len(url),
# len(parent). The Lua script reads value and priority (positions 24 and 32 of the hash
# value, after the 23-byte member).
_HEAD = struct.Struct(">ddHddIIBII")
_MEMBER = 23  # 15 digits of sequence number + 8 bytes of fingerprint
_FP = struct.Struct(">q")
_PRIORITY_LIMIT = float(2**53)  # priorities are exact doubles up to here
#: what follows the URLs in a packed entry: no extra, an extra, one that could not be
#: serialised, an extra that holds the whole request (kept when a duplicate promotes it)
_EXTRA_NONE, _EXTRA_BLOB, _EXTRA_LOST, _EXTRA_WHOLE = 0, 1, 2, 3

#: pick modes of :meth:`RedisFrontier.sync`
NO_PICK, BEST, ANNEAL = 0, 1, 2
#: push results (the codes the script returns); COPIED: queued as a copy with a
#: fingerprint of its own (a ``dont_filter`` request for a URL that waits or is in flight)
IGNORED_GONE, ADDED, PROMOTED, REQUEUED, IGNORED_WAITING, COPIED = 0, 1, 2, 3, 4, 5

#: the step script (``pick.lua``)
STEP_LUA = files("focused.distributed").joinpath("pick.lua").read_text(encoding="utf-8")


@dataclass(slots=True)
class Counts:
    """Sizes of the shared queues (the four queues of Liu, Xia & Xu 2010)."""

    waiting: int = 0
    in_flight: int = 0
    done: int = 0
    error: int = 0

    @property
    def pending(self) -> int:
        return self.waiting + self.in_flight


@dataclass(slots=True)
class Step:
    """What one :meth:`RedisFrontier.sync` round trip did."""

    entry: Entry | None = None
    #: ``(op, fingerprint, code)`` of each staged operation sent, in order
    results: list[tuple[str, int, int]] = field(default_factory=list)
    counts: Counts = field(default_factory=Counts)
    temperature: float = 0.0
    accepted_worse: bool = False
    picks: int = -1


def _pickle(extra: Any) -> bytes | None:
    return None if extra is None else pickle.dumps(extra, protocol=pickle.HIGHEST_PROTOCOL)


def _unpickle(blob: bytes | None) -> Any:
    return None if blob is None else pickle.loads(blob)  # noqa: S301 - trusted Redis


class RedisFrontier:
    """The shared frontier in Redis, with the :class:`~focused.frontier.memory.Frontier` interface.

    The interface methods (``push``, ``pop``, ``pop_annealed``, ``get``, ``in``,
    ``len``, ``entries``) each take one round trip and send staged operations first.
    :class:`~focused.distributed.scheduler.RedisScheduler` uses the batched form:
    :meth:`stage_push`, :meth:`stage_finish`, :meth:`stage_release`, :meth:`stage_renew`,
    then one :meth:`sync` (staged operations + optional pick, one Lua call).

    ``dump_extra`` / ``load_extra`` turn an entry's ``extra`` into bytes and back
    (default: pickle; the scheduler passes its own, which serialise whole requests).
    A ``dump_extra`` that returns ``b""`` marks the extra as lost (unserialisable): such
    an entry comes back from a pick with ``extra`` = :data:`LOST`. ``whole`` tells an
    entry that keeps its whole request in ``extra``: when a duplicate with a higher
    priority promotes such a waiting entry, or when the duplicate is such an entry, the
    waiting one is kept with the new priority (as the in-memory scheduler does); two
    other entries: the duplicate's replaces it.
    """

    def __init__(
        self,
        server: redis.Redis,
        key: str,
        *,
        lease: float = 60.0,
        dump_extra: Callable[[Any], bytes | None] = _pickle,
        load_extra: Callable[[bytes | None], Any] = _unpickle,
        whole: Callable[[Entry], bool] | None = None,
        batch: int = 2000,
    ) -> None:
        if lease <= 0:
            raise ValueError(f"lease must be > 0 s, got {lease}")
        self.server = server
        self.key = key
        self.lease_ms = int(lease * 1000)
        self.dump_extra = dump_extra
        self.load_extra = load_extra
        self.whole = whole
        self.batch = batch
        self.keys = [f"{key}:{name}" for name in ("queue", "data", "inflight", "seen", "stats")]
        self.outbox: list[tuple[str, bytes, bytes, bytes]] = []
        self._sha: str | None = None
        #: promotions this client caused (the crawl's total is in ``<key>:stats``)
        self.promoted = 0
        #: round trips made (for the stats)
        self.round_trips = 0
        self.counts = Counts()

    # --- connection -----------------------------------------------------------------
    def open(self) -> None:
        """Check that Redis answers and load the script; :class:`RedisUnavailable` if not."""
        try:
            self.server.ping()
            self._sha = self.server.script_load(STEP_LUA)
        except REDIS_DOWN as exc:
            raise RedisUnavailable(unreachable_message(self.server, exc)) from None

    def close(self) -> None:
        """Disconnect. The shared frontier stays in Redis (see :meth:`clear`)."""
        self.server.close()

    def clear(self) -> int:
        """Delete every key of this frontier (never called by a crawl); the number deleted."""
        return int(self.server.delete(*self.keys))

    # --- packing --------------------------------------------------------------------
    def _payload(self, e: Entry) -> bytes:
        url = e.url.encode("utf-8")
        parent = (e.parent_url or "").encode("utf-8")
        blob = self.dump_extra(e.extra) if e.extra is not None else None
        kind = _EXTRA_NONE if blob is None else _EXTRA_BLOB if blob else _EXTRA_LOST
        if kind == _EXTRA_BLOB and self.whole is not None and self.whole(e):
            kind = _EXTRA_WHOLE
        evidence = e.evidence if 0 < len(e.evidence) <= 0xFFFF else b""
        if evidence:
            kind |= EVIDENCE_FLAG
        head = _HEAD.pack(
            float(e.value),
            float(clamp_priority(e.priority)),
            int(e.flags) & 0xFFFF,
            float(e.m),
            float(e.anchor_relevance),
            max(0, int(e.depth)),
            max(0, int(e.hops)),
            kind,
            len(url),
            len(parent),
        )
        tail = evidence + struct.pack(">H", len(evidence)) if evidence else b""
        return head + url + parent + (blob or b"") + tail

    def _entry(self, fp: bytes, stored: bytes) -> Entry:
        payload = memoryview(stored)[_MEMBER:]
        value, priority, flags, m, anchor, depth, hops, kind, nu, np_ = _HEAD.unpack_from(payload)
        at = _HEAD.size
        url = bytes(payload[at : at + nu]).decode("utf-8")
        parent = bytes(payload[at + nu : at + nu + np_]).decode("utf-8")
        end = len(payload)
        evidence = b""
        if kind & EVIDENCE_FLAG:
            n_ev = struct.unpack_from(">H", payload, end - 2)[0]
            evidence = bytes(payload[end - 2 - n_ev : end - 2])
            end -= 2 + n_ev
            kind &= ~EVIDENCE_FLAG
        blob = bytes(payload[at + nu + np_ : end])
        extra: Any = None
        if kind in (_EXTRA_BLOB, _EXTRA_WHOLE):
            extra = self.load_extra(blob)
        elif kind == _EXTRA_LOST:
            extra = LOST
        return Entry(
            url=url,
            fp=_FP.unpack(fp)[0],
            priority=int(priority),
            value=value,
            depth=depth,
            m=m,
            hops=hops,
            anchor_relevance=anchor,
            parent_url=parent,
            flags=flags,
            extra=extra,
            seq=int(stored[:15]),
            evidence=evidence,
        )

    # --- staging (no round trip) ----------------------------------------------------
    def stage_push(self, entry: Entry, dont_filter: bool = False) -> None:
        """Queue ``entry`` at the next :meth:`sync`: added if never seen, promoted if it
        waits with a lower priority; with ``dont_filter`` also queued again when it is
        in flight (a retry) or finished."""
        self.outbox.append(
            (
                "P" if dont_filter else "p",
                _FP.pack(entry.fp),
                repr(float(clamp_priority(entry.priority))).encode(),
                self._payload(entry),
            )
        )

    def stage_copy(self, entry: Entry) -> None:
        """Queue ``entry`` (a ``dont_filter`` request that is not a retry) at the next
        :meth:`sync`, never filtered: as itself when its URL neither waits nor is in
        flight (new, or finished: queued again), else as a copy with a fingerprint of its
        own (code :data:`COPIED`; the picked entry's ``fp`` is the copy's)."""
        self.outbox.append(
            (
                "C",
                _FP.pack(entry.fp),
                repr(float(clamp_priority(entry.priority))).encode(),
                self._payload(entry),
            )
        )

    def stage_finish(self, fp: int, error: bool = False) -> None:
        """Move an in-flight (or re-queued) URL to the done (or the error) queue."""
        self.outbox.append(("e" if error else "d", _FP.pack(fp), b"", b""))

    def stage_release(self, fp: int) -> None:
        """Give an in-flight URL back to the queue, in its old place (not fetched)."""
        self.outbox.append(("r", _FP.pack(fp), b"", b""))

    def stage_renew(self, fps: Iterator[int] | list[int] | set[int]) -> None:
        """Extend the leases of these in-flight URLs to ``now + lease``."""
        self.outbox.extend(("l", _FP.pack(fp), b"", b"") for fp in fps)

    @property
    def pending(self) -> int:
        """Staged operations not sent yet."""
        return len(self.outbox)

    # --- the round trip -------------------------------------------------------------
    def sync(
        self,
        mode: int = NO_PICK,
        annealer: Annealer | None = None,
        busy_hosts: Collection[str] = (),
        scan: int = DEFAULT_SCAN,
        delayed_hosts: Collection[str] = (),
    ) -> Step:
        """Send the staged operations and (``BEST`` / ``ANNEAL``) pick the next URL.

        ``busy_hosts``: host names (lower case) the worker cannot fetch now; the pick then
        takes the best entry (or draws among the top K) of the other hosts, looking at no
        more than ``scan`` waiting entries (:mod:`focused.frontier.hostaware`). When none
        of those is free, it takes the best of a busy host not in ``delayed_hosts`` (one
        only full, whose request waits in its slot for a transfer, not for a delay), and
        nothing when there is none. An entry's host is its URL's, whatever
        ``download_slot`` its meta names.

        One round trip (a pipeline of Lua calls when more than ``batch`` operations are
        staged). On a connection error the staged operations are kept for the next call
        and the error is raised; they are idempotent, so sending them twice is harmless.
        """
        if self._sha is None:
            self.open()
        ops = self.outbox
        chunks = [ops[i : i + self.batch] for i in range(0, len(ops), self.batch)] or [[]]
        u1 = u2 = 0.0
        k, t0, alpha, t_min = 1, 0.0, 1.0, 0.0
        if mode == ANNEAL:
            if annealer is None:
                raise ValueError("mode ANNEAL needs an annealer")
            k, t0, alpha, t_min = annealer.k, annealer.t0, annealer.alpha, annealer.t_min
            u1, u2 = annealer.rng.random(), annealer.rng.random()
        tail: list[Any] = []
        if mode != NO_PICK and busy_hosts:
            delayed = [h for h in delayed_hosts if h in busy_hosts]
            full = [h for h in busy_hosts if h not in delayed_hosts]
            tail = [max(1, int(scan)), len(full), *full, len(delayed), *delayed]
        params = (k, t0, alpha, t_min, u1, u2)
        try:
            replies = self._execute(chunks, mode, *params, tail=tail)
        except redis.exceptions.NoScriptError:  # the server restarted: load it again
            self._sha = self.server.script_load(STEP_LUA)
            replies = self._execute(chunks, mode, *params, tail=tail)
        self.outbox = []
        self.round_trips += 1
        step = Step()
        for chunk, reply in zip(chunks, replies, strict=True):
            for (op, fp, _, _), code in zip(chunk, reply[0], strict=True):
                step.results.append((op, _FP.unpack(fp)[0], int(code)))
                if code == PROMOTED:
                    self.promoted += 1
        last = replies[-1]
        picked, temp, worse, picks, waiting, in_flight, done, error = last[1:9]
        step.counts = self.counts = Counts(int(waiting), int(in_flight), int(done), int(error))
        step.temperature = float(temp)
        step.accepted_worse = bool(worse)
        step.picks = int(picks)
        if picked:
            step.entry = self._entry(picked[0], picked[1])
        if mode == ANNEAL and annealer is not None and step.picks >= 0:
            annealer.picks = step.picks + 1
            annealer.temperature = step.temperature
            annealer.accepted_worse += int(step.accepted_worse)
        return step

    def _execute(
        self, chunks: list[list], mode: int, *params: float, tail: list[Any] | None = None
    ) -> list[Any]:
        pipe = self.server.pipeline(transaction=False)
        last = len(chunks) - 1
        for i, chunk in enumerate(chunks):
            args: list[Any] = [
                self.lease_ms,
                mode if i == last else NO_PICK,
                *(repr(float(p)) if isinstance(p, float) else p for p in params),
                len(chunk),
            ]
            for op in chunk:
                args.extend(op)
            if i == last and tail:
                args.extend(tail)  # the busy hosts of the pick
            pipe.evalsha(self._sha, len(self.keys), *self.keys, *args)
        return pipe.execute()

    # --- the Frontier interface (one round trip each) -------------------------------
    def push(self, entry: Entry) -> bool:
        self.stage_push(entry)
        code = self.sync().results[-1][2]
        return code in (ADDED, PROMOTED, REQUEUED)

    def pop(self) -> Entry | None:
        return self.sync(BEST).entry

    def pop_annealed(self, annealer: Annealer) -> Entry | None:
        return self.sync(ANNEAL, annealer).entry

    def pop_free(
        self,
        busy_hosts: Collection[str],
        annealer: Annealer | None = None,
        scan: int = DEFAULT_SCAN,
        delayed_hosts: Collection[str] | None = None,
    ) -> Entry | None:
        """The best entry (the annealing pick with ``annealer``) whose URL's host is not
        in ``busy_hosts``; else the best one not in ``delayed_hosts`` (default: all the
        busy ones); ``None`` when there is none within ``scan`` entries."""
        mode = ANNEAL if annealer is not None else BEST
        delayed = busy_hosts if delayed_hosts is None else delayed_hosts
        return self.sync(mode, annealer, busy_hosts, scan, delayed).entry

    def get(self, fp: int) -> Entry | None:
        key = _FP.pack(fp)
        stored = self.server.hget(self.keys[1], key)
        if stored is None or self.server.zscore(self.keys[2], key) is not None:
            return None
        return self._entry(key, stored)

    def __contains__(self, fp: object) -> bool:
        return isinstance(fp, int) and self.get(fp) is not None

    def __len__(self) -> int:
        return int(self.server.zcard(self.keys[0]))

    def entries(self) -> Iterator[Entry]:
        in_flight = {fp for fp, _ in self.server.zscan_iter(self.keys[2])}
        for fp, stored in self.server.hscan_iter(self.keys[1]):
            if fp not in in_flight:
                yield self._entry(fp, stored)

    # --- inspection -----------------------------------------------------------------
    def status(self) -> dict[str, int]:
        """Queue sizes and counters of the shared crawl (one round trip)."""
        pipe = self.server.pipeline(transaction=False)
        pipe.zcard(self.keys[0])
        pipe.zcard(self.keys[2])
        pipe.scard(self.keys[3])
        pipe.hgetall(self.keys[4])
        waiting, in_flight, seen, stats = pipe.execute()
        out = {"waiting": int(waiting), "in_flight": int(in_flight), "seen": int(seen)}
        for name in ("done", "error", "promoted", "reclaimed", "picks", "accepted_worse"):
            out[name] = int(stats.get(name.encode(), 0))
        return out

    # --- outbox on disk (Redis down at the close) -----------------------------------
    def save_outbox(self, path: str | os.PathLike[str]) -> int:
        """Append the staged operations to ``path``; the number written."""
        path = Path(path)
        ops = [op for op in self.outbox if op[0] != "l"]  # leases die with this worker
        saved = load_outbox_file(path, self.key) + ops
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_bytes(pickle.dumps({"key": self.key, "ops": saved}))
        os.replace(tmp, path)
        self.outbox = []
        return len(ops)

    def restore_outbox(self, path: str | os.PathLike[str]) -> int:
        """Stage the operations a previous run saved in ``path`` (same key); the number."""
        ops = load_outbox_file(Path(path), self.key)
        self.outbox = ops + self.outbox
        return len(ops)


#: ``extra`` of an entry whose extra could not be serialised when it was pushed
LOST = object()


def load_outbox_file(path: Path, key: str) -> list[tuple[str, bytes, bytes, bytes]]:
    if not path.exists():
        return []
    saved = pickle.loads(path.read_bytes())  # noqa: S301 - our own output folder
    return list(saved["ops"]) if saved.get("key") == key else []


def clamp_priority(priority: int) -> int:
    """``priority`` within what a Redis score holds exactly (+-2**53)."""
    return int(max(-_PRIORITY_LIMIT, min(_PRIORITY_LIMIT, priority)))
