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
                    ``reclaimed``, ``accepted_worse``; and what every round trip checks
                    (:class:`FrontierLost`): ``epoch`` (set by the first client),
                    ``sizes`` (of the four keys above, as the last script left them) and
                    ``rev`` (+ 1 by every script that changes the partition)

An entry with rescoring evidence (``learning``) keeps it at the end of its packed entry
(flag bit 0x80 on the extra's kind, then the evidence and its length, u16), so that the
rescoring of :mod:`focused.distributed.model` can value it again; the model itself lives
under ``<key>:model:*``.

Every change is one Lua script run atomically on the server (``pick.lua`` next to this
module, read with :mod:`importlib.resources`, so it works from a zipped egg): it applies a
batch of staged operations (push with promotion, done, error, release, lease renewal,
the re-queue at the bottom of a picked entry whose URL shape became wasteful),
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

import contextlib
import os
import pickle
import struct
import time
import uuid
from collections.abc import Callable, Collection, Iterator
from dataclasses import dataclass, field
from importlib.resources import files
from pathlib import Path
from typing import Any

import redis

try:
    import fcntl
except ImportError:  # pragma: no cover - not on POSIX
    fcntl = None  # type: ignore[assignment]

from focused.distributed.connection import (
    CLUSTER_DOWN,
    REDIS_DOWN,
    REFUSED,
    describe,
    is_cluster,
    refused_message,
    unreachable_message,
    writes_refused,
)
from focused.distributed.model import EVIDENCE_FLAG
from focused.distributed.partition import Layout
from focused.errors import (
    FrontierLost,
    RedisLayoutError,
    RedisUnavailable,
)
from focused.frontier.hostaware import DEFAULT_SCAN
from focused.frontier.memory import Entry
from focused.output import atomic
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
    "WASTE_REQUEUED",
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
_URL_LEN, _URL_LEN_AT = struct.Struct(">I"), 43  # len(url) in the packed entry
_PRIORITY_LIMIT = float(2**53)  # priorities are exact doubles up to here
#: what follows the URLs in a packed entry: no extra, an extra, one that could not be
#: serialised, an extra that holds the whole request (kept when a duplicate promotes it)
_EXTRA_NONE, _EXTRA_BLOB, _EXTRA_LOST, _EXTRA_WHOLE = 0, 1, 2, 3

#: entry flag bit: re-queued once at the bottom as waste (:meth:`RedisFrontier.stage_waste`);
#: the script keeps it when a duplicate promotes the entry (bits 0-7 are the scheduler's)
WASTE_REQUEUED = 0x100
#: the staged operations of a waste re-queue (plain, an annealing pick taken back, one that
#: had accepted a worse candidate)
_WASTE_OPS = frozenset("wWV")
#: the staged operations that act on this client's leases (renew, release, waste re-queue):
#: never saved in the outbox nor restored from it; sent at a later start, after the lease
#: ran out, they would act on a URL handed to another worker since (its lease hands it back)
_LEASED_OPS = frozenset("lr") | _WASTE_OPS

#: pick modes of :meth:`RedisFrontier.sync`
NO_PICK, BEST, ANNEAL = 0, 1, 2
#: push results (the codes the script returns); COPIED: queued as a copy with a
#: fingerprint of its own (a ``dont_filter`` request for a URL that waits or is in flight)
IGNORED_GONE, ADDED, PROMOTED, REQUEUED, IGNORED_WAITING, COPIED = 0, 1, 2, 3, 4, 5

#: picks between two refreshes of every partition's head (several partitions)
REFRESH_EVERY = 8
#: ``WAIT`` time-out (ms), and how long a node that answered with too few replicas is
#: not waited for (s)
WAIT_MS, NO_WAIT_FOR = 1000, 10.0
#: staged operations whose loss in a failover would lose a page or fetch one twice
_DURABLE = frozenset("pPCde")

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


@dataclass(slots=True)
class _Pick:
    """What one :meth:`RedisFrontier.sync` asks for: the mode, the annealer and the
    script's pick arguments, the busy hosts' tail, and the partition picked from."""

    mode: int
    annealer: Annealer | None
    params: tuple[Any, ...]
    tail: list[Any] = field(default_factory=list)
    target: int | None = None


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
        partitions: int = 1,
        refresh: int = REFRESH_EVERY,
        wait_replicas: int = 0,
        wait_ms: int = WAIT_MS,
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
        self.cluster = is_cluster(server)
        self.layout = Layout(key, max(1, int(partitions)), tagged=self.cluster)
        self.partitions = self.layout.partitions
        self.part_keys = [self.layout.frontier_keys(p) for p in range(self.partitions)]
        #: the keys of partition 0 (the only one unless FOCUSED_REDIS_PARTITIONS > 1)
        self.keys = self.part_keys[0]
        self.outbox: list[tuple[str, bytes, bytes, bytes]] = []
        #: the outbox file whose part for this key is staged and not sent yet
        self._restored_from: Path | None = None
        #: the operations restored from that file (taken out of it once sent)
        self._restored_ops: list[tuple[str, bytes, bytes, bytes]] = []
        #: the partition of each staged operation (-1: every partition)
        self._routes: list[int] = []
        #: fingerprint -> partition of the URLs this client picked and has not finished
        self._where: dict[bytes, int] = {}
        self._sha: str | None = None
        #: promotions this client caused (the crawl's total is in ``<key>:stats``)
        self.promoted = 0
        #: round trips made (for the stats; one per node and call on a cluster)
        self.round_trips = 0
        self.counts = Counts()
        #: what this client last heard of each partition: sizes, best waiting priority
        #: (None: empty or unknown), picks; ``_fresh``: heard since the last refresh
        self._part_counts = [Counts() for _ in range(self.partitions)]
        self._heads: list[float | None] = [None] * self.partitions
        self._picks = [0] * self.partitions
        self._known = [False] * self.partitions
        self.refresh = max(1, int(refresh))
        self._since_refresh = self.refresh  # the first pick refreshes
        self._turn = 0
        self.wait_replicas = max(0, int(wait_replicas))
        self.wait_ms = int(wait_ms)
        #: node -> monotonic time until which WAIT is skipped (it had too few replicas)
        self._no_wait_until: dict[str, float] = {}
        #: WAIT calls made, and those that returned fewer replicas than asked
        self.waits = 0
        self.waits_short = 0
        #: extra pick round trips because the best known partition had nothing to give
        self.pick_retries = 0
        #: each partition's epoch (field ``epoch`` of its stats hash) read at :meth:`open`:
        #: the step script refuses a partition whose epoch changed (FrontierLost)
        self._epochs: list[bytes] = [b""] * self.partitions
        #: each partition's highest revision (field ``rev``) this client knows Redis keeps:
        #: the step script refuses a partition with a lower one (FrontierLost: Redis came
        #: back with an older copy of its data). On a single server without ``WAIT`` every
        #: reply's; else only those a ``WAIT`` confirmed (a failover may lose the last
        #: writes that no replica acknowledged, which the crawl tolerates)
        self._revs: list[int] = [0] * self.partitions
        #: ``maxmemory-policy`` when it is an ``allkeys-*`` one (Redis may evict the
        #: frontier), read at :meth:`open`; None otherwise or when CONFIG is refused
        self.evicting: str | None = None

    # --- connection -----------------------------------------------------------------
    def open(self, crawl: dict[str, str] | None = None) -> None:
        """Check that Redis answers, that the crawl's partition count is this client's,
        that the crawl is the one ``crawl`` describes (:meth:`check_crawl`), and load the
        script; :class:`RedisUnavailable` / :class:`RedisLayoutError` if not."""
        try:
            self.server.ping()
            self._check_layout()
            if crawl:
                self.check_crawl(crawl)
            self._open_epochs()
            self.evicting = self._eviction_policy()
            self._sha = self.server.script_load(STEP_LUA)
        except REFUSED as exc:  # a password, a database, an ACL without scripts
            raise RedisUnavailable(refused_message(self.server, exc)) from None
        except REDIS_DOWN as exc:
            raise RedisUnavailable(unreachable_message(self.server, exc)) from None

    def _open_epochs(self) -> None:
        """Read each partition's epoch, giving one to a partition without (a new crawl,
        or one started by an older version): every later round trip checks it, so that
        a frontier that vanishes under a running worker (Redis restarted without its data,
        its keys deleted or evicted) stops the worker instead of letting it rebuild a
        partial frontier and call the crawl finished."""
        mine = uuid.uuid4().hex.encode()
        for p in range(self.partitions):
            stats = self.part_keys[p][4]
            self.server.hsetnx(stats, "epoch", mine)
            epoch, rev = self.server.hmget(stats, ["epoch", "rev"])
            self._epochs[p] = epoch or mine
            if self._trust_every_reply:
                self._revs[p] = max(self._revs[p], int(rev or 0))

    @property
    def epochs(self) -> list[str]:
        """Each partition's epoch as this client read it when it opened (hex; ``""``
        before :meth:`open`): another epoch is another frontier."""
        return [e.decode("ascii", "replace") for e in self._epochs]

    @property
    def _trust_every_reply(self) -> bool:
        """Is every write Redis acknowledged kept (a single server, no ``WAIT``)? Then a
        revision lower than one seen means Redis came back with an older copy of its data."""
        return not self.cluster and not self.wait_replicas

    def _eviction_policy(self) -> str | None:
        """The server's ``maxmemory-policy`` if it is an ``allkeys-*`` one (Redis may then
        evict the frontier's keys when it reaches ``maxmemory``); None otherwise, and
        when ``CONFIG`` is refused (an ACL, a managed Redis) or answers oddly."""
        try:
            got = self.server.config_get("maxmemory-policy")
        except redis.exceptions.RedisError:
            return None
        if isinstance(got, dict) and got and all(isinstance(v, dict) for v in got.values()):
            got = next(iter(got.values()))  # a cluster: one answer per node
        policy = got.get("maxmemory-policy") if isinstance(got, dict) else None
        if isinstance(policy, bytes):
            policy = policy.decode("ascii", "replace")
        return policy if isinstance(policy, str) and policy.startswith("allkeys-") else None

    def eviction_warning(self) -> str | None:
        """One line for the log when Redis may evict the frontier (:attr:`evicting`)."""
        if self.evicting is None:
            return None
        return (
            f"focused: Redis at {describe(self.server)} has maxmemory-policy"
            f" {self.evicting}: at its maxmemory it may evict the shared frontier's keys,"
            " and the workers then stop (the crawl cannot finish); use noeviction"
            " (or a volatile-* policy) for a crawl's Redis"
        )

    def lost_message(self) -> str:
        """The one line of :class:`FrontierLost`."""
        return (
            f"the shared frontier {self.key} vanished from Redis at"
            f" {describe(self.server)} during the crawl (Redis restarted without its data"
            " or with an older copy of it, or its keys were deleted or evicted): its"
            " waiting URLs are lost, so this"
            " worker stops instead of finishing a partial crawl; the pages already stored"
            " stay in the output folders. Run Redis with --appendonly yes (and no"
            " maxmemory eviction) so that a restart keeps the frontier"
        )

    def _check_layout(self) -> None:
        """Refuse to join a crawl split into another number of partitions (its seen sets
        would not be this worker's: URLs would be fetched twice)."""
        name = self.layout.partitions_key
        mine = str(self.partitions).encode()
        if self.partitions > 1 or self.cluster:
            if not self.cluster and self.server.exists(f"{self.key}:seen"):
                theirs = b"1"
            else:
                self.server.set(name, mine, nx=True)
                theirs = self.server.get(name) or mine
        else:
            theirs = self.server.get(name) or mine
        if theirs != mine:
            raise RedisLayoutError(
                f"the shared frontier {self.key} is split into {theirs.decode()} partitions,"
                f" not {self.partitions}: set FOCUSED_REDIS_PARTITIONS={theirs.decode()}"
                " (or clear it: python -m focused.distributed clear)"
            )

    def check_crawl(self, crawl: dict[str, str], write: bool = True) -> None:
        """:func:`check_crawl` on this frontier's key."""
        check_crawl(self.server, self.key, crawl, write)

    def close(self) -> None:
        """Disconnect. The shared frontier stays in Redis (see :meth:`clear`)."""
        self.server.close()

    def clear(self) -> int:
        """Delete every key of this frontier (never called by a crawl); the number deleted.
        ``UNLINK``: the memory is freed in the background, so that deleting a frontier of
        millions of URLs does not stall the server (on a cluster, long enough for its
        peers to take it for failed)."""
        n = 0
        for p in range(self.partitions):
            n += int(self.server.unlink(*self.part_keys[p], *self.layout.rescore_keys(p)))
        if self.layout.tagged:
            n += int(self.server.unlink(self.layout.partitions_key))
        return n + int(self.server.unlink(self.layout.crawl_key))

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
    def _stage(self, op: tuple[str, bytes, bytes, bytes], route: int) -> None:
        self.outbox.append(op)
        self._routes.append(route)

    def _route_of_url(self, url: str) -> int:
        return self.layout.partition_of_url(url) if self.partitions > 1 else 0

    def _route_of_fp(self, fp: bytes) -> int:
        if self.partitions == 1:
            return 0
        return self._where.get(fp, -1)

    def _route_of(self, op: tuple[str, bytes, bytes, bytes]) -> int:
        """The partition of a staged operation: its URL's for a push, the partition this
        client picked it from for the others, else -1 (sent to every partition: an
        operation on a fingerprint a partition does not hold does nothing)."""
        if self.partitions == 1:
            return 0
        if op[0] in "pPCwWV":
            nu = _URL_LEN.unpack_from(op[3], _URL_LEN_AT)[0]
            return self._route_of_url(op[3][_HEAD.size : _HEAD.size + nu].decode("utf-8"))
        return self._route_of_fp(op[1])

    def stage_push(self, entry: Entry, dont_filter: bool = False) -> None:
        """Queue ``entry`` at the next :meth:`sync`: added if never seen, promoted if it
        waits with a lower priority; with ``dont_filter`` also queued again when it is
        in flight (a retry) or finished."""
        self._stage(
            (
                "P" if dont_filter else "p",
                _FP.pack(entry.fp),
                repr(float(clamp_priority(entry.priority))).encode(),
                self._payload(entry),
            ),
            self._route_of_url(entry.url),
        )

    def stage_copy(self, entry: Entry) -> None:
        """Queue ``entry`` (a ``dont_filter`` request that is not a retry) at the next
        :meth:`sync`, never filtered: as itself when its URL neither waits nor is in
        flight (new, or finished: queued again), else as a copy with a fingerprint of its
        own (code :data:`COPIED`; the picked entry's ``fp`` is the copy's)."""
        self._stage(
            (
                "C",
                _FP.pack(entry.fp),
                repr(float(clamp_priority(entry.priority))).encode(),
                self._payload(entry),
            ),
            self._route_of_url(entry.url),
        )

    def stage_finish(self, fp: int, error: bool = False) -> None:
        """Move an in-flight (or re-queued) URL to the done (or the error) queue."""
        key = _FP.pack(fp)
        self._stage(("e" if error else "d", key, b"", b""), self._route_of_fp(key))
        self._where.pop(key, None)

    def stage_stored(self, url: str, fp: int) -> None:
        """Mark the URL ``url`` (fingerprint ``fp``) done if it still waits or is in
        flight anywhere (its page is stored: a worker that died before its "done" reached
        Redis); nothing if it is finished. Routed by the URL's host (the partition)."""
        self._stage(("d", _FP.pack(fp), b"", b""), self._route_of_url(url))

    def stage_release(self, fp: int) -> None:
        """Give an in-flight URL back to the queue, in its old place (not fetched). Sent
        with the next :meth:`sync` or never: :meth:`save_outbox` drops it (sent after the
        lease ran out, it would take the URL from the worker it was handed to since, and
        queue it for a second fetch); the lease then hands the URL back by itself."""
        key = _FP.pack(fp)
        self._stage(("r", key, b"", b""), self._route_of_fp(key))
        self._where.pop(key, None)

    def stage_waste(
        self, entry: Entry, *, annealed: bool = False, accepted_worse: bool = False
    ) -> None:
        """Put a URL this client picked (in flight) back into the queue as ``entry``: its
        priority and packed fields (the bottom of the queue, not fetched), flagged
        :data:`WASTE_REQUEUED`; nothing if it is no longer in flight. ``annealed``: the
        annealing pick that handed it out is taken back (the crawl's pick count, and its
        accepted worse candidate with ``accepted_worse``), so the shared temperature cools
        once per URL handed out. Send it with the next :meth:`sync` or drop it
        (:meth:`drop_waste`): sent after the lease ran out, it would take the URL from
        the worker it was handed to since."""
        op = ("V" if accepted_worse else "W") if annealed else "w"
        key = _FP.pack(entry.fp)
        self._stage(
            (
                op,
                key,
                repr(float(clamp_priority(entry.priority))).encode(),
                self._payload(entry),
            ),
            self._route_of_url(entry.url),
        )
        self._where.pop(key, None)

    def drop_waste(self) -> int:
        """Drop the staged waste re-queues (a round trip failed): their URLs stay in
        flight and their leases hand them back in their old place. The number dropped."""
        keep = [i for i, op in enumerate(self.outbox) if op[0] not in _WASTE_OPS]
        dropped = len(self.outbox) - len(keep)
        if dropped:
            self.outbox = [self.outbox[i] for i in keep]
            self._routes = [self._routes[i] for i in keep]
        return dropped

    def discard_staged(self) -> int:
        """Drop every staged operation (the frontier is lost: see :class:`FrontierLost`);
        the number dropped."""
        dropped = len(self.outbox)
        self.outbox, self._routes = [], []
        return dropped

    def stage_renew(self, fps: Iterator[int] | list[int] | set[int]) -> None:
        """Extend the leases of these in-flight URLs to ``now + lease``."""
        for fp in fps:
            key = _FP.pack(fp)
            self._stage(("l", key, b"", b""), self._route_of_fp(key))

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
        *,
        refresh: bool | None = None,
    ) -> Step:
        """Send the staged operations and (``BEST`` / ``ANNEAL``) pick the next URL.

        ``busy_hosts``: host names (lower case) the worker cannot fetch now; the pick then
        takes the best entry (or draws among the top K) of the other hosts, looking at no
        more than ``scan`` waiting entries (:mod:`focused.frontier.hostaware`). When none
        of those is free, it takes the best of a busy host not in ``delayed_hosts`` (one
        only full, whose request waits in its slot for a transfer, not for a delay), and
        nothing when there is none. An entry's host is its URL's, whatever
        ``download_slot`` its meta names.

        With several partitions the pick goes to the partition whose best waiting entry
        (as this client last heard) is the best; every partition is asked again
        (``refresh``) every :attr:`refresh` picks, on a call without a pick and without
        staged operations, and when none is known to have waiting entries. When the
        chosen partition gives nothing (empty meanwhile, or only busy hosts), the next
        best is tried (one more round trip each).

        One round trip (a pipeline of Lua calls when more than ``batch`` operations are
        staged; one pipeline per node on a cluster). On a connection error the staged
        operations are kept for the next call and the error is raised; they are
        idempotent, so sending them twice is harmless.
        """
        if self._sha is None:
            self.open()
        pick = _Pick(mode, annealer, self._pick_params(mode, annealer))
        if mode != NO_PICK and busy_hosts:
            delayed = [h for h in delayed_hosts if h in busy_hosts]
            full = [h for h in busy_hosts if h not in delayed_hosts]
            pick.tail = [max(1, int(scan)), len(full), *full, len(delayed), *delayed]
        if refresh is None:
            due = mode != NO_PICK and self._since_refresh >= self.refresh
            refresh = due or (mode == NO_PICK and not self.outbox)
        step = self._rounds(pick, self._ops_by_partition(), refresh)
        if mode != NO_PICK:
            self._since_refresh += 1
        step.counts = self.counts = self._total()
        return step

    def _rounds(
        self, pick: _Pick, by_part: dict[int, list[tuple[str, bytes, bytes, bytes]]], refresh: bool
    ) -> Step:
        """The round trips of one :meth:`sync`: the staged operations (and every partition
        when ``refresh``) with the pick in the best known partition, then the next best
        ones while the pick gives nothing."""
        step = Step(picks=-1)
        tried: set[int] = set()
        pick.target = self._target(pick.mode, tried)
        if self.partitions == 1 or (pick.mode != NO_PICK and pick.target is None):
            refresh = True  # (nothing known to wait: ask every partition, then pick)
        first = True
        while True:
            parts = set(range(self.partitions)) if first and refresh else set()
            if first:
                parts |= set(by_part)
            if pick.target is not None:
                parts.add(pick.target)
            if not parts:
                break
            last_chance = self._target(pick.mode, tried | {pick.target}) is None
            replies = self._execute_parts(
                sorted(parts), by_part if first else {}, pick, last_chance
            )
            self._absorb(step, replies, pick)
            if first:
                self.outbox, self._routes = [], []
                self._sent_restored()
                if refresh:
                    self._since_refresh = 0
            first = False
            if pick.mode == NO_PICK or step.entry is not None:
                break
            if pick.target is not None:
                tried.add(pick.target)
            pick.target = self._target(pick.mode, tried)
            if pick.target is None:
                break
            self.pick_retries += 1
        return step

    def _pick_params(self, mode: int, annealer: Annealer | None) -> tuple[Any, ...]:
        u1 = u2 = 0.0
        k, t0, alpha, t_min = 1, 0.0, 1.0, 0.0
        if mode == ANNEAL:
            if annealer is None:
                raise ValueError("mode ANNEAL needs an annealer")
            k, t0, alpha, t_min = annealer.k, annealer.t0, annealer.alpha, annealer.t_min
            u1, u2 = annealer.rng.random(), annealer.rng.random()
        return (k, t0, alpha, t_min, u1, u2)

    def _ops_by_partition(self) -> dict[int, list[tuple[str, bytes, bytes, bytes]]]:
        if self.partitions == 1:
            return {0: self.outbox} if self.outbox else {}
        out: dict[int, list[tuple[str, bytes, bytes, bytes]]] = {}
        for op, route in zip(self.outbox, self._routes, strict=True):
            for p in range(self.partitions) if route < 0 else (route,):
                out.setdefault(p, []).append(op)
        return out

    def _target(self, mode: int, tried: set[int]) -> int | None:
        """The partition to pick from: the best known head among those not tried yet
        that are known to have waiting entries (ties: in turn)."""
        if mode == NO_PICK:
            return None
        n = self.partitions
        if n == 1:
            return None if 0 in tried else 0
        best: int | None = None
        for i in range(n):
            p = (self._turn + i) % n
            head = self._heads[p]
            if p in tried or head is None or self._part_counts[p].waiting <= 0:
                continue
            if best is None or head > self._heads[best]:  # type: ignore[operator]
                best = p
        return best

    def _execute_parts(
        self,
        parts: list[int],
        by_part: dict[int, list[tuple[str, bytes, bytes, bytes]]],
        pick: _Pick,
        last_chance: bool,
    ) -> list[tuple[int, list, Any]]:
        """Run the step script on ``parts`` (the pick on ``pick.target``, which may take
        the entry of a full host only when no other partition is left: ``last_chance``);
        ``(partition, chunk, reply)`` per call, in order."""
        tail = pick.tail + ([] if last_chance or not pick.tail else [1])
        calls: list[tuple[int, list, list[Any]]] = []
        for p in parts:
            ops = by_part.get(p, [])
            chunks = [ops[i : i + self.batch] for i in range(0, len(ops), self.batch)] or [[]]
            last = len(chunks) - 1
            offset = sum(self._picks) - self._picks[p] if self.partitions > 1 else 0
            for i, chunk in enumerate(chunks):
                picking = p == pick.target and i == last
                args: list[Any] = [
                    self.lease_ms,
                    pick.mode if picking else NO_PICK,
                    *(repr(float(x)) if isinstance(x, float) else x for x in pick.params),
                    offset,
                    len(chunk),
                    self._epochs[p],
                    self._revs[p],
                ]
                for op in chunk:
                    args.extend(op)
                if picking and tail:
                    args.extend(tail)  # the busy hosts of the pick
                calls.append((p, chunk, args))
        durable = {p for p, chunk, _ in calls if any(op[0] in _DURABLE for op in chunk)}
        if self.cluster:
            replies = self._run_cluster(calls, durable)
        else:
            replies = self._run_single(calls, bool(durable))
        return [(p, chunk, r) for (p, chunk, _), r in zip(calls, replies, strict=True)]

    def _evalsha(self, pipe: Any, p: int, args: list[Any]) -> None:
        keys = self.part_keys[p]
        pipe.evalsha(self._sha, len(keys), *keys, *args)

    def _run_single(self, calls: list[tuple[int, list, list[Any]]], durable: bool) -> list[Any]:
        wait = durable and self._should_wait("server")
        replies = self._execute(self.server, calls, range(len(calls)), wait)
        self.round_trips += 1
        kept = self._trust_every_reply
        if wait:
            kept = self._waited("server", int(replies.pop()))
        if kept:
            self._kept_revs(calls, range(len(calls)), replies)
        return replies

    def _kept_revs(
        self, calls: list[tuple[int, list, list[Any]]], idx: Any, got: list[Any]
    ) -> None:
        """Raise each partition's known revision to the ones of these replies (``got[j]``
        answers ``calls[idx[j]]``), which Redis keeps."""
        for i, reply in zip(idx, got, strict=True):
            p = calls[i][0]
            self._revs[p] = max(self._revs[p], int(reply[11]))

    def _execute(
        self, conn: Any, calls: list[tuple[int, list, list[Any]]], idx: Any, wait: bool
    ) -> list[Any]:
        """The step script for ``calls[i]`` (``i`` in ``idx``) in one pipeline on ``conn``,
        then ``WAIT`` if ``wait``; the script loaded again if the server lost it (it
        restarted, or a replica was promoted). :class:`FrontierLost` if the script found a
        partition's epoch changed."""
        for attempt in (0, 1):
            pipe = conn.pipeline(transaction=False)
            for i in idx:
                self._evalsha(pipe, calls[i][0], calls[i][2])
            if wait:
                pipe.execute_command("WAIT", self.wait_replicas, self.wait_ms)
            try:
                return pipe.execute()
            except redis.exceptions.NoScriptError:
                if attempt:
                    raise
                self._sha = conn.script_load(STEP_LUA)
            except redis.exceptions.ResponseError as exc:
                # a Redis refusing writes refuses the script at its first write: nothing
                # of it was written (an earlier call of the pipeline may have been: the
                # operations are idempotent, the staged ones are all sent again)
                raise self._lost(exc) from None
        raise AssertionError("unreachable")  # pragma: no cover

    def _run_cluster(
        self, calls: list[tuple[int, list, list[Any]]], durable: set[int]
    ) -> list[Any]:
        """One pipeline per node, on that node's own connection, so that its ``WAIT``
        follows the writes it must wait for (``WAIT`` counts a client's own writes)."""
        groups: dict[str, tuple[Any, list[int]]] = {}
        try:
            for i, (p, _, _) in enumerate(calls):
                node = self.server.get_node_from_key(self.part_keys[p][0])
                groups.setdefault(node.name, (node, []))[1].append(i)
        except CLUSTER_DOWN as exc:
            raise self._cluster_down(exc) from None
        replies: list[Any] = [None] * len(calls)
        for name, (node, idx) in groups.items():
            wait = any(calls[i][0] in durable for i in idx) and self._should_wait(name)
            try:
                got = self._execute(node.redis_connection, calls, idx, wait)
            except CLUSTER_DOWN as exc:
                raise self._cluster_down(exc) from None
            self.round_trips += 1
            if wait and self._waited(name, int(got.pop())):
                self._kept_revs(calls, idx, got)
            for i, reply in zip(idx, got, strict=True):
                replies[i] = reply
        return replies

    def _lost(self, exc: redis.exceptions.ResponseError) -> Exception:
        """:class:`FrontierLost` for the step script's refusal of a lost partition (epoch
        changed, keys gone, older revision); :class:`RedisRefused` for a Redis that
        refuses writes for now (``MISCONF``, ``READONLY``, ``NOPERM``: refused at the
        script's first write, so nothing was written); any other error reply as it is."""
        if "LOSTFRONTIER" in str(exc):
            return FrontierLost(self.lost_message())
        return writes_refused(self.server, exc) or exc

    def _cluster_down(self, exc: BaseException) -> redis.exceptions.ConnectionError:
        """A node failed or the slots moved: read the cluster's map again (for the next
        call) and report the call as a connection error (the staged operations are kept
        and sent again)."""
        with contextlib.suppress(*CLUSTER_DOWN):
            self.server.nodes_manager.initialize()
        return redis.exceptions.ConnectionError(f"Redis Cluster: {exc}")

    def _should_wait(self, node: str) -> bool:
        if not self.wait_replicas:
            return False
        return time.monotonic() >= self._no_wait_until.get(node, 0.0)

    def _waited(self, node: str, replicas: int) -> bool:
        """A ``WAIT`` answered: with too few replicas (none since a failover), the node
        is not waited for during :data:`NO_WAIT_FOR` s (each call would take ``wait_ms``).
        Whether enough replicas acknowledged the writes."""
        self.waits += 1
        if replicas < self.wait_replicas:
            self.waits_short += 1
            self._no_wait_until[node] = time.monotonic() + NO_WAIT_FOR
            return False
        return True

    def _absorb(self, step: Step, replies: list[tuple[int, list, Any]], pick: _Pick) -> None:
        for p, chunk, reply in replies:
            for (op, fp, _, _), code in zip(chunk, reply[0], strict=True):
                step.results.append((op, _FP.unpack(fp)[0], int(code)))
                if code == PROMOTED:
                    self.promoted += 1
            picked, temp, worse, picks, waiting, in_flight, done, error = reply[1:9]
            self._part_counts[p] = Counts(int(waiting), int(in_flight), int(done), int(error))
            head = reply[9]
            self._heads[p] = None if head is None else -float(head)
            self._picks[p] = int(reply[10])
            self._known[p] = True
            if p != pick.target or not picked:
                continue
            step.temperature = float(temp)
            step.accepted_worse = bool(worse)
            step.picks = int(picks)
            step.entry = self._entry(picked[0], picked[1])
            if self.partitions > 1:
                self._where[bytes(picked[0])] = p
                self._turn = (p + 1) % self.partitions
            annealer = pick.annealer
            if pick.mode == ANNEAL and annealer is not None and step.picks >= 0:
                annealer.picks = step.picks + 1
                annealer.temperature = step.temperature
                annealer.accepted_worse += int(step.accepted_worse)

    def _total(self) -> Counts:
        """The crawl's queues as this client last heard of each partition."""
        if self.partitions == 1:
            return self._part_counts[0]
        c = self._part_counts
        return Counts(
            sum(x.waiting for x in c),
            sum(x.in_flight for x in c),
            sum(x.done for x in c),
            sum(x.error for x in c),
        )

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
        known = self._where.get(key)
        for p in range(self.partitions) if known is None else (known,):
            keys = self.part_keys[p]
            stored = self.server.hget(keys[1], key)
            if stored is None:
                continue
            if self.server.zscore(keys[2], key) is not None:
                return None
            return self._entry(key, stored)
        return None

    def __contains__(self, fp: object) -> bool:
        return isinstance(fp, int) and self.get(fp) is not None

    def __len__(self) -> int:
        return sum(int(self.server.zcard(keys[0])) for keys in self.part_keys)

    def entries(self) -> Iterator[Entry]:
        for keys in self.part_keys:
            in_flight = {fp for fp, _ in self.server.zscan_iter(keys[2])}
            for fp, stored in self.server.hscan_iter(keys[1]):
                if fp not in in_flight:
                    yield self._entry(fp, stored)

    # --- inspection -----------------------------------------------------------------
    def status(self) -> dict[str, int]:
        """Queue sizes and counters of the shared crawl, summed over the partitions (one
        round trip; one per node on a cluster)."""
        pipe = self.server.pipeline(transaction=False)
        for keys in self.part_keys:
            pipe.zcard(keys[0])
            pipe.zcard(keys[2])
            pipe.scard(keys[3])
            pipe.hgetall(keys[4])
        got = pipe.execute()
        names = ("done", "error", "promoted", "reclaimed", "picks", "accepted_worse")
        out = dict.fromkeys(("waiting", "in_flight", "seen", *names), 0)
        for at in range(0, len(got), 4):
            waiting, in_flight, seen, stats = got[at : at + 4]
            out["waiting"] += int(waiting)
            out["in_flight"] += int(in_flight)
            out["seen"] += int(seen)
            for name in names:
                out[name] += int(stats.get(name.encode(), 0))
        if self.partitions > 1:
            out["partitions"] = self.partitions
        return out

    # --- outbox on disk (Redis down at the close) -----------------------------------
    def save_outbox(self, path: str | os.PathLike[str]) -> int:
        """Add the staged operations to this frontier's part of the outbox file ``path``
        (the parts of other keys are kept); the number written."""
        path = Path(path)
        # leases die with this worker, and so do releases and waste re-queues: the lease
        # hands their URLs back by itself (_LEASED_OPS)
        ops = [op for op in self.outbox if op[0] not in _LEASED_OPS]
        with outbox_lock(path):  # (another worker may share the output folder)
            saved = load_outboxes(path)
            kept = saved.get(self.key, [])
            # the part restored at the start is in the staged operations still (not sent):
            # what the file holds already is not written twice
            have = set(kept)
            saved[self.key] = kept + [op for op in ops if op not in have]
            write_outboxes(path, saved)
        self.outbox, self._routes = [], []
        self._restored_from, self._restored_ops = None, []
        return len(ops)

    def restore_outbox(self, path: str | os.PathLike[str]) -> int:
        """Stage the operations a previous run saved in ``path`` for this frontier's key;
        the number. They stay in the file until a round trip has sent them (then
        :meth:`sync` takes them out of it). Releases, renewals and waste re-queues an
        older version saved are skipped (:data:`_LEASED_OPS`)."""
        path = Path(path)
        if not path.exists():
            return 0
        with outbox_lock(path):
            saved = load_outboxes(path).get(self.key, [])
        ops = [op for op in saved if op[0] not in _LEASED_OPS]
        if ops:
            self._restored_from, self._restored_ops = path, list(saved)
        self.outbox = ops + self.outbox
        self._routes = [self._route_of(op) for op in ops] + self._routes
        return len(ops)

    def _sent_restored(self) -> None:
        """The operations restored from the outbox file reached Redis: out of the file."""
        path, self._restored_from = self._restored_from, None
        sent, self._restored_ops = set(self._restored_ops), []
        if path is None:
            return
        with outbox_lock(path):  # (only those: another worker may have saved more since)
            saved = load_outboxes(path)
            if self.key in saved:
                saved[self.key] = [op for op in saved[self.key] if op not in sent]
                write_outboxes(path, saved)


#: ``extra`` of an entry whose extra could not be serialised when it was pushed
LOST = object()


#: Record a crawl's fields that are not recorded yet (all of them on a new key), then
#: return the record as ``HGETALL``'s flat list; one script, so records never mix.
RECORD_LUA = """
for i = 1, #ARGV, 2 do redis.call('HSETNX', KEYS[1], ARGV[i], ARGV[i + 1]) end
return redis.call('HGETALL', KEYS[1])
"""


def check_crawl(server: Any, key: str, crawl: dict[str, str], write: bool = True) -> None:
    """Refuse (:class:`RedisLayoutError`, one line) to join the frontier ``key`` when it is
    recorded as another crawl's: another topic, strategy or spider sent to this key prefix
    by mistake (``FOCUSED_REDIS_KEY`` set to one value for two crawls) would fetch, score
    and store the other crawl's URLs. With ``write`` the first worker records ``crawl``
    (``{<key>}:crawl``); a frontier without a record (an older version's) is adopted."""
    name = Layout(key).crawl_key
    if write:  # one script: the first worker's record is written whole, never mixed
        flat = server.eval(RECORD_LUA, 1, name, *[x for kv in crawl.items() for x in kv])
        raw = dict(zip(flat[::2], flat[1::2], strict=True))
    else:
        raw = server.hgetall(name)
    theirs = {k.decode(): v.decode("utf-8", "replace") for k, v in raw.items()}
    for field_, value in crawl.items():
        if field_ in theirs and theirs[field_] != value:
            raise RedisLayoutError(
                f"the shared frontier {key} is a crawl of {field_} {theirs[field_]!r}, not"
                f" {value!r}: give this crawl a key prefix of its own (FOCUSED_REDIS_KEY;"
                " the default %(spider)s:%(topic)s is one per topic), or clear that one"
                f" first: python -m focused.distributed clear --key {key}"
            )


@contextlib.contextmanager
def outbox_lock(path: Path) -> Iterator[None]:
    """Hold ``<outbox>.lock`` exclusively while reading, changing and writing the outbox
    file ``path``: two workers that share an output folder and close together while
    Redis is away would otherwise each write the file over the other's changes (lost
    pushes and done marks)."""
    if fcntl is None:  # pragma: no cover - not on POSIX
        yield
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.with_name(path.name + ".lock"), "a+b") as fh:
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)


def load_outboxes(path: Path) -> dict[str, list[tuple[str, bytes, bytes, bytes]]]:
    """The operations an outbox file holds, by frontier key (a file of an older version
    holds one key's)."""
    if not path.exists():
        return {}
    saved = pickle.loads(path.read_bytes())  # noqa: S301 - our own output folder
    if "outboxes" in saved:
        return {str(k): list(v) for k, v in saved["outboxes"].items()}
    return {str(saved["key"]): list(saved["ops"])} if "key" in saved else {}


def write_outboxes(path: Path, saved: dict[str, list[tuple[str, bytes, bytes, bytes]]]) -> None:
    """Write the outbox file ``path`` whole (flushed to the disk), or remove it when no
    key has operations left."""
    saved = {k: v for k, v in saved.items() if v}
    if not saved:
        path.unlink(missing_ok=True)
        return
    atomic.write_bytes(path, pickle.dumps({"outboxes": saved}), fsync=True)


def clamp_priority(priority: int) -> int:
    """``priority`` within what a Redis score holds exactly (+-2**53)."""
    return int(max(-_PRIORITY_LIMIT, min(_PRIORITY_LIMIT, priority)))
