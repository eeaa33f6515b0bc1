"""A frontier shared by many crawler processes in Redis (``FOCUSED_FRONTIER = "redis"``).

Several ``scrapy crawl focused`` processes, on one machine or many, crawl one topic
together: the waiting queue, the seen-URL set and the in-flight / done / error
bookkeeping of seed 000's four queues live in Redis under one key prefix
(``FOCUSED_REDIS_KEY``, default ``focused:{topic}``):

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

Every change is one Lua script run atomically on the server (:data:`STEP_LUA`): it
applies a batch of staged operations (push with promotion, done, error, release, lease
renewal), hands expired leases back to the queue, and optionally picks the next URL:
the best one, or the simulated-annealing choice of seed 001 between the best and a
uniformly drawn one of the top ``K`` (Metropolis test ``u < exp(-(v_best - v_cand) /
T)``). The temperature is shared: ``T = max(T_min, T0 * alpha**picks)`` with ``picks``
the crawl's global pick counter, so it cools once per pick of any worker, as seed 001
cools once per pick. The worker supplies the two uniform numbers from its seeded
:class:`~focused.ranking.annealing.Annealer`. Because the pick and the move to in-flight are one
script, two workers never get the same URL.

A picked URL is leased for ``FOCUSED_REDIS_LEASE`` seconds; a live worker renews the
leases of its in-flight URLs every third of that, so only the URLs of a dead worker
(``kill -9``) expire and are handed out again. No worker deletes any key when it closes
(``python -m focused.redis_frontier clear`` does, on purpose).

Round trips: :class:`RedisScheduler` stages pushes and finishes locally and sends them
with the next pick, so a request costs one round trip (the pick); the page store's
:data:`~focused.signals.frontier_checkpoint` flushes staged pushes before a page is
committed (a stored page never has its links only in memory). If Redis cannot be
reached, the staged changes stay in memory and are retried; after ``FOCUSED_REDIS_LEASE``
seconds the worker stops and writes them to ``<FOCUSED_OUTPUT_DIR>/redis-outbox.pickle``,
which the next start sends first: nothing is lost.

From scrapy-redis (0.9.1) this module uses the connection helper
:func:`scrapy_redis.connection.get_redis_from_settings` (``REDIS_URL``, ``REDIS_HOST``,
``REDIS_PORT``, ``REDIS_PARAMS``) and its convention of one key prefix per crawl with
``:requests``-like suffixes; its scheduler, queues and dupefilter are not used: they
pop without a lease (a killed worker loses its requests), wipe the queue on close unless
``SCHEDULER_PERSIST``, have no promotion and no annealing pick.

Entries and their ``extra`` are pickled into Redis: the Redis server must be trusted,
as with scrapy-redis.
"""

from __future__ import annotations

import logging
import os
import pickle
import struct
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit, urlunsplit

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from focused.config import ConfigError
from focused.defaults import get
from focused.frontier.journal import DONE, ERROR
from focused.frontier.memory import Entry
from focused.frontier.seen import url_fingerprint
from focused.ranking.annealing import Annealer
from focused.scheduler import FocusedScheduler
from focused.strategies import strategy_class

if TYPE_CHECKING:
    from typing import Self

    from scrapy.crawler import Crawler
    from scrapy.http import Request, Response
    from scrapy.spiders import Spider

__all__ = [
    "Counts",
    "RedisFrontier",
    "RedisScheduler",
    "RedisUnavailable",
    "Step",
    "check",
    "connect",
]

logger = logging.getLogger(__name__)

#: errors that mean "Redis cannot be reached right now"
REDIS_DOWN = (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError, OSError)

# --- the packed entry ------------------------------------------------------------------
# value, priority, flags, m, anchor relevance, depth, hops, extra kind, len(url),
# len(parent). The Lua script reads value and priority (positions 24 and 32 of the hash
# value, after the 23-byte member).
_HEAD = struct.Struct(">ddHddIIBII")
_MEMBER = 23  # 15 digits of sequence number + 8 bytes of fingerprint
_FP = struct.Struct(">q")
_PRIORITY_LIMIT = float(2**53)  # priorities are exact doubles up to here
_EXTRA_NONE, _EXTRA_BLOB, _EXTRA_LOST = 0, 1, 2

#: pick modes of :meth:`RedisFrontier.sync`
NO_PICK, BEST, ANNEAL = 0, 1, 2
#: push results (the codes the script returns)
IGNORED_GONE, ADDED, PROMOTED, REQUEUED, IGNORED_WAITING = 0, 1, 2, 3, 4

STEP_LUA = r"""
local queue, data, inflight, seen, stats = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local lease = tonumber(ARGV[1])
local mode = tonumber(ARGV[2])
local k = tonumber(ARGV[3])
local t0, alpha, tmin = tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6])
local u1, u2 = tonumber(ARGV[7]), tonumber(ARGV[8])
local nops = tonumber(ARGV[9])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)

local function value_of(d) return (struct.unpack('>d', d, 24)) end
local function prio_of(d) return (struct.unpack('>d', d, 32)) end
local function enqueue(fp, prio, payload)
  local seq = redis.call('HINCRBY', stats, 'seq', 1)
  local member = string.format('%015d', seq) .. fp
  redis.call('ZADD', queue, -prio, member)
  redis.call('HSET', data, fp, member .. payload)
end
local function requeue(d)
  redis.call('ZADD', queue, -prio_of(d), string.sub(d, 1, 23))
end

local codes = {}
local i = 10
for n = 1, nops do
  local op, fp, prio, payload = ARGV[i], ARGV[i + 1], ARGV[i + 2], ARGV[i + 3]
  i = i + 4
  local code = 0
  if op == 'p' or op == 'P' then
    -- push; 'P' is a dont_filter request (a retry, or asked for again)
    prio = tonumber(prio)
    local d = redis.call('HGET', data, fp)
    if d then
      if redis.call('ZSCORE', inflight, fp) then
        if op == 'P' then
          redis.call('ZREM', inflight, fp)
          enqueue(fp, prio, payload)
          code = 3
        end
      elseif prio > prio_of(d) then
        redis.call('ZREM', queue, string.sub(d, 1, 23))
        enqueue(fp, prio, payload)
        redis.call('HINCRBY', stats, 'promoted', 1)
        code = 2
      else
        code = 4
      end
    elseif redis.call('SADD', seen, fp) == 1 then
      enqueue(fp, prio, payload)
      code = 1
    elseif op == 'P' then
      enqueue(fp, prio, payload)
      code = 3
    end
  elseif op == 'd' or op == 'e' then
    local d = redis.call('HGET', data, fp)
    if d then
      if redis.call('ZREM', inflight, fp) == 0 then
        redis.call('ZREM', queue, string.sub(d, 1, 23))
      end
      redis.call('HDEL', data, fp)
      redis.call('HINCRBY', stats, op == 'd' and 'done' or 'error', 1)
      code = 1
    end
  elseif op == 'r' then
    local d = redis.call('HGET', data, fp)
    if d and redis.call('ZREM', inflight, fp) == 1 then
      requeue(d)
      code = 1
    end
  elseif op == 'l' then
    code = redis.call('ZADD', inflight, 'XX', 'CH', now + lease, fp)
  end
  codes[n] = code
end

-- leases of dead workers: back to the queue, with their old place
local expired = redis.call('ZRANGEBYSCORE', inflight, '-inf', now, 'LIMIT', 0, 256)
for _, fp in ipairs(expired) do
  redis.call('ZREM', inflight, fp)
  local d = redis.call('HGET', data, fp)
  if d then
    requeue(d)
    redis.call('HINCRBY', stats, 'reclaimed', 1)
  end
end

local picked = {}
local temp = 0
local worse = 0
local picks = -1
if mode > 0 then
  local top
  if mode == 2 then
    top = redis.call('ZRANGE', queue, 0, k - 1)
  else
    top = redis.call('ZRANGE', queue, 0, 0)
  end
  if #top > 0 then
    local chosen = 1
    if mode == 2 then
      picks = redis.call('HINCRBY', stats, 'picks', 1) - 1
      if t0 > 0 then temp = math.max(tmin, t0 * alpha ^ picks) end
      if #top > 1 and temp > 0 then
        local j = math.floor(u1 * #top)
        if j >= #top then j = #top - 1 end
        if j > 0 then
          local v0 = value_of(redis.call('HGET', data, string.sub(top[1], 16)))
          local vj = value_of(redis.call('HGET', data, string.sub(top[j + 1], 16)))
          local delta = v0 - vj
          if delta <= 0 or u2 < math.exp(-delta / temp) then
            chosen = j + 1
            if delta > 0 then
              worse = 1
              redis.call('HINCRBY', stats, 'accepted_worse', 1)
            end
          end
        end
      end
      if t0 > 0 then temp = math.max(tmin, t0 * alpha ^ (picks + 1)) end
    end
    local member = top[chosen]
    local fp = string.sub(member, 16)
    redis.call('ZREM', queue, member)
    redis.call('ZADD', inflight, now + lease, fp)
    picked = {fp, redis.call('HGET', data, fp)}
  end
end
local st = redis.call('HMGET', stats, 'done', 'error')
return {codes, picked, tostring(temp), worse, picks,
        redis.call('ZCARD', queue), redis.call('ZCARD', inflight),
        tonumber(st[1] or 0), tonumber(st[2] or 0)}
"""


class RedisUnavailable(ConfigError):
    """Redis cannot be reached; the message is one line meant for the user.

    A :class:`~focused.config.ConfigError`, so ``scrapy crawl`` prints it as
    ``focused: error: ...`` and exits with status 2 when it checks the settings.
    """


def safe_url(url: str) -> str:
    """``url`` without its password (for messages)."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.rsplit("@", 1)[1]
    user = f"{parts.username}:***@" if parts.username else ":***@"
    return urlunsplit(parts._replace(netloc=user + netloc))


_REDIS_SETTINGS = ("REDIS_URL", "REDIS_HOST", "REDIS_PORT", "REDIS_DB", "REDIS_ENCODING")


def connect(settings: Any) -> redis.Redis:
    """A Redis client from Scrapy ``settings``, via scrapy-redis's connection helper.

    ``REDIS_URL`` (or ``REDIS_HOST`` / ``REDIS_PORT``) and ``REDIS_PARAMS`` as in
    scrapy-redis, but with short time-outs and one retry without back-off unless
    ``REDIS_PARAMS`` says otherwise: the client runs in the reactor thread, and
    scrapy-redis's 30 s time-outs (with redis-py's retries) would freeze the crawl.
    """
    from scrapy.settings import Settings
    from scrapy_redis.connection import get_redis_from_settings

    params = {
        "socket_timeout": 10,
        "socket_connect_timeout": 3,
        "retry_on_timeout": False,
        "retry": Retry(NoBackoff(), 1),
        "health_check_interval": 0,
    }
    params.update(settings.getdict("REDIS_PARAMS"))
    local = Settings({name: settings.get(name) for name in _REDIS_SETTINGS})
    local.set("REDIS_PARAMS", params)
    return get_redis_from_settings(local)


def describe(server: redis.Redis) -> str:
    """``redis://host:port/db`` of a client (no password)."""
    kw = server.connection_pool.connection_kwargs
    if "path" in kw:
        return f"unix://{kw['path']}"
    return f"redis://{kw.get('host', '?')}:{kw.get('port', '?')}/{kw.get('db', 0)}"


def check(settings: Any) -> None:
    """Raise :class:`RedisUnavailable` (one line) when the configured Redis does not answer."""
    server = connect(settings)
    try:
        server.ping()
    except REDIS_DOWN as exc:
        raise RedisUnavailable(unreachable_message(server, exc)) from None
    finally:
        server.close()


def unreachable_message(server: redis.Redis, exc: BaseException) -> str:
    reason = " ".join(str(exc).split()) or type(exc).__name__
    return (
        f"Redis at {describe(server)} is unreachable ({reason}); start it or set REDIS_URL"
        " (FOCUSED_FRONTIER = 'redis')"
    )


@dataclass(slots=True)
class Counts:
    """Sizes of the shared queues (seed 000's four queues)."""

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
    :class:`RedisScheduler` uses the batched form: :meth:`stage_push`,
    :meth:`stage_finish`, :meth:`stage_release`, :meth:`stage_renew`, then one
    :meth:`sync` (staged operations + optional pick, one Lua call).

    ``dump_extra`` / ``load_extra`` turn an entry's ``extra`` into bytes and back
    (default: pickle; the scheduler passes its own, which serialise whole requests).
    A ``dump_extra`` that returns ``b""`` marks the extra as lost (unserialisable): such
    an entry comes back from a pick with ``extra`` = :data:`LOST`.
    """

    def __init__(
        self,
        server: redis.Redis,
        key: str,
        *,
        lease: float = 60.0,
        dump_extra: Callable[[Any], bytes | None] = _pickle,
        load_extra: Callable[[bytes | None], Any] = _unpickle,
        batch: int = 2000,
    ) -> None:
        if lease <= 0:
            raise ValueError(f"lease must be > 0 s, got {lease}")
        self.server = server
        self.key = key
        self.lease_ms = int(lease * 1000)
        self.dump_extra = dump_extra
        self.load_extra = load_extra
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
        head = _HEAD.pack(
            float(e.value),
            float(_priority(e.priority)),
            int(e.flags) & 0xFFFF,
            float(e.m),
            float(e.anchor_relevance),
            max(0, int(e.depth)),
            max(0, int(e.hops)),
            kind,
            len(url),
            len(parent),
        )
        return head + url + parent + (blob or b"")

    def _entry(self, fp: bytes, stored: bytes) -> Entry:
        payload = memoryview(stored)[_MEMBER:]
        value, priority, flags, m, anchor, depth, hops, kind, nu, np_ = _HEAD.unpack_from(payload)
        at = _HEAD.size
        url = bytes(payload[at : at + nu]).decode("utf-8")
        parent = bytes(payload[at + nu : at + nu + np_]).decode("utf-8")
        blob = bytes(payload[at + nu + np_ :])
        extra: Any = None
        if kind == _EXTRA_BLOB:
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
                repr(float(_priority(entry.priority))).encode(),
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
    def sync(self, mode: int = NO_PICK, annealer: Annealer | None = None) -> Step:
        """Send the staged operations and (``BEST`` / ``ANNEAL``) pick the next URL.

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
        try:
            replies = self._execute(chunks, mode, k, t0, alpha, t_min, u1, u2)
        except redis.exceptions.NoScriptError:  # the server restarted: load it again
            self._sha = self.server.script_load(STEP_LUA)
            replies = self._execute(chunks, mode, k, t0, alpha, t_min, u1, u2)
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

    def _execute(self, chunks: list[list], mode: int, *params: float) -> list[Any]:
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


def _priority(priority: int) -> int:
    return int(max(-_PRIORITY_LIMIT, min(_PRIORITY_LIMIT, priority)))


# --- Scrapy glue -------------------------------------------------------------------------
class _NominalSchedulerMeta(type(FocusedScheduler)):  # type: ignore[misc]
    """Scrapy's ``BaseSchedulerMeta`` makes ``issubclass(X, Sched)`` true for any class
    with the scheduler methods; for :class:`RedisScheduler` it means real inheritance
    (``FocusedScheduler.from_crawler`` asks ``issubclass(cls, RedisScheduler)``)."""

    def __subclasscheck__(cls, subclass: type) -> bool:
        return type.__subclasscheck__(cls, subclass)

    def __instancecheck__(cls, instance: Any) -> bool:
        return type.__instancecheck__(cls, instance)


class RedisScheduler(FocusedScheduler, metaclass=_NominalSchedulerMeta):
    """:class:`~focused.scheduler.FocusedScheduler` on the shared :class:`RedisFrontier`.

    Same request packing, order, promotion, annealing, errback and stats as the
    in-memory scheduler; the queues live in Redis so that several processes crawl one
    topic. ``FOCUSED_FRONTIER = "redis"`` selects it (or ``SCHEDULER =
    "focused.redis_frontier.RedisScheduler"``).

    A worker stages its pushes and finishes and sends them with its next pick (one round
    trip per request); a URL counts as done once its page item has gone through the
    pipelines (``item_scraped``), so a worker killed between fetch and store leaves it
    in flight and it is fetched again after the lease, never lost. The crawl ends for a
    worker when the shared queue and every worker's in-flight set are empty; a worker
    that runs dry while others still fetch asks again after ``idle_poll`` seconds (0.02,
    doubled while it stays dry, up to 0.5 s) instead of waiting for Scrapy's 5 s
    heartbeat. ``JOBDIR`` is not used for the frontier (Redis keeps it).

    Settings: ``REDIS_URL`` (or ``REDIS_HOST``/``REDIS_PORT``), ``REDIS_PARAMS``,
    ``FOCUSED_REDIS_KEY``, ``FOCUSED_REDIS_LEASE``, ``FOCUSED_OUTPUT_DIR`` and the
    annealing settings of the base class. Stats: those of the base class
    (``focused/queue/*`` are the shared queues' sizes) and
    ``focused/redis/round_trips``, ``focused/redis/pushed``, ``focused/redis/ignored``,
    ``focused/redis/in_flight_here``, ``focused/redis/released``.
    """

    OUTBOX_NAME = "redis-outbox.pickle"

    def __init__(
        self,
        *,
        server: redis.Redis,
        key_template: str = "focused:{topic}",
        lease: float = 60.0,
        idle_poll: float = 0.02,
        idle_poll_max: float = 0.5,
        output_dir: str = "out/crawl",
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.server = server
        self.key_template = key_template
        self.lease = float(lease)
        self.idle_poll = float(idle_poll)
        self.idle_poll_max = float(idle_poll_max)
        self._idle_delay = self.idle_poll
        self.output_dir = Path(output_dir)
        self.redis: RedisFrontier | None = None
        self._gone: set[int] = set()  # fingerprints known to be in flight or finished
        self._responded: set[int] = set()  # in flight here, response in, item pending
        self._counts = Counts()
        self._down_since: float | None = None
        self._closing = False
        self._connected = False
        self._renewer: Any = None
        self._poke: Any = None
        self.pushed = 0
        self.ignored = 0
        self.released = 0

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        s = crawler.settings
        name = str(get(s, "FOCUSED_STRATEGY")).strip()
        return cls(
            server=connect(s),
            key_template=str(get(s, "FOCUSED_REDIS_KEY")),
            lease=get(s, "FOCUSED_REDIS_LEASE"),
            output_dir=str(get(s, "FOCUSED_OUTPUT_DIR")),
            anneal=strategy_class(name).anneal,
            t0=get(s, "FOCUSED_SA_T0"),
            alpha=get(s, "FOCUSED_SA_ALPHA"),
            t_min=get(s, "FOCUSED_SA_T_MIN"),
            k=get(s, "FOCUSED_SA_K"),
            seed=get(s, "FOCUSED_SEED"),
            stats=crawler.stats,
            crawler=crawler,
        )

    def key_for(self, spider: Spider) -> str:
        topic = getattr(getattr(spider, "topic", None), "name", "") or getattr(
            spider, "topic_arg", ""
        )
        return self.key_template.format_map({"topic": topic, "spider": spider.name})

    # --- life cycle -----------------------------------------------------------------
    def open(self, spider: Spider) -> None:
        from scrapy import signals
        from twisted.internet import reactor, task

        self.spider = spider
        self.redis = RedisFrontier(
            self.server,
            self.key_for(spider),
            lease=self.lease,
            dump_extra=self._dump_extra,
            load_extra=self._load_extra,
        )
        self.frontier = self.redis  # type: ignore[assignment] - same interface
        try:
            self.redis.open()
        except RedisUnavailable as exc:
            # Not CloseSpider: raised here, Scrapy 2.19 then fails to close its scraper.
            logger.error("focused: error: %s", exc)
            self.redis = None
            self._closing = True
            reactor.callLater(0, self._stop, "redis_unreachable")  # type: ignore[attr-defined]
            return
        outbox = self.output_dir / self.OUTBOX_NAME
        restored = self.redis.restore_outbox(outbox)
        step = self._sync()
        if restored and step is not None:
            outbox.unlink(missing_ok=True)
            logger.info("focused: sent %d changes saved by an earlier run to Redis", restored)
        if self.crawler is not None:
            self._connected = True
            sig = self.crawler.signals
            sig.connect(self._on_response, signal=signals.response_received)
            for signal in (signals.item_scraped, signals.item_dropped, signals.item_error):
                sig.connect(self._on_item, signal=signal)
            sig.connect(self._on_item, signal=signals.spider_error)
            from focused import signals as focused_signals

            sig.connect(self._on_checkpoint, signal=focused_signals.frontier_checkpoint)
        self._renewer = task.LoopingCall(self._tick)
        self._renewer.start(max(0.2, self.lease / 3), now=False)
        status = self.redis.status()
        logger.info(
            "focused: shared frontier %s at %s: %d waiting, %d in flight, %d done, %d seen",
            self.redis.key,
            describe(self.server),
            status["waiting"],
            status["in_flight"],
            status["done"],
            status["seen"],
        )
        self._update_stats()

    def close(self, reason: str) -> None:
        self._closing = True
        if self._renewer is not None and self._renewer.running:
            self._renewer.stop()
        if self._poke is not None and self._poke.active():
            self._poke.cancel()
        if self._connected and self.crawler is not None:
            from scrapy import signals

            from focused import signals as focused_signals

            sig = self.crawler.signals
            sig.disconnect(self._on_response, signal=signals.response_received)
            for signal in (
                signals.item_scraped,
                signals.item_dropped,
                signals.item_error,
                signals.spider_error,
            ):
                sig.disconnect(self._on_item, signal=signal)
            sig.disconnect(self._on_checkpoint, signal=focused_signals.frontier_checkpoint)
        red = self.redis
        if red is None:
            return
        for fp in list(self.in_flight):  # fetched: done; never fetched: back to the queue
            if fp in self._responded:
                self._finish(fp, DONE)
            else:
                self.in_flight.discard(fp)
                red.stage_release(fp)
                self.released += 1
        step = self._sync(final=True)
        if step is None and red.pending:
            path = self.output_dir / self.OUTBOX_NAME
            n = red.save_outbox(path)
            logger.error(
                "focused: error: Redis unreachable at the close; %d changes saved in %s"
                " and sent at the next start",
                n,
                path,
            )
        c = self._counts
        logger.info(
            "focused: left the shared frontier %s in Redis (not cleared): %d waiting,"
            " %d in flight, %d done, %d errors",
            red.key,
            c.waiting,
            c.in_flight,
            c.done,
            c.error,
        )
        self._update_stats()
        red.close()

    def has_pending_requests(self) -> bool:
        if self.redis is None:  # unreachable at the start: closing
            return False
        if self._down_since is not None:
            return not self._closing  # unknown: do not let the spider finish
        if self._counts.pending == 0 or self.redis.pending:
            self._settle()
            self._sync()
            if self._down_since is not None:
                return True
        return self._counts.pending > 0

    def __len__(self) -> int:
        return self._counts.waiting

    # --- in -------------------------------------------------------------------------
    def enqueue_request(self, request: Request) -> bool:
        if self.redis is None:  # unreachable at the start: the spider is closing
            return False
        fp = self._fingerprint(request)
        redirects = request.meta.get("redirect_urls")
        if redirects:
            self._finish(url_fingerprint(redirects[-1]), DONE)
        if fp in self.in_flight:
            if not request.dont_filter:
                return self._filter()
            self.in_flight.discard(fp)  # a retry: back to waiting
            self._responded.discard(fp)
            self.requeued += 1
        elif fp in self._gone and not request.dont_filter:
            return self._filter()
        self.redis.stage_push(self._to_entry(request, fp), bool(request.dont_filter))
        return True

    # --- out ------------------------------------------------------------------------
    def next_request(self) -> Request | None:
        mode = ANNEAL if self.annealer is not None else BEST
        while True:
            step = self._sync(mode)
            if step is None:
                return None
            entry = step.entry
            if entry is None:
                if step.counts.in_flight > len(self.in_flight):
                    self._poke_later()  # others still fetch: ask again soon
                return None
            if entry.extra is LOST:  # could not be serialised when pushed
                self.redis.stage_finish(entry.fp, error=True)  # type: ignore[union-attr]
                continue
            break
        request = self._to_request(entry)
        self._idle_delay = self.idle_poll
        self.in_flight.add(entry.fp)
        self._gone.add(entry.fp)
        self.dequeued += 1
        self._update_stats()
        return request

    def _sync(self, mode: int = NO_PICK, final: bool = False) -> Step | None:
        """One round trip; ``None`` (and the staged changes kept) when Redis is down."""
        red = self.redis
        if red is None:
            return None
        try:
            step = red.sync(mode, self.annealer if mode == ANNEAL else None)
        except REDIS_DOWN as exc:
            now = time.monotonic()
            if self._down_since is None:
                self._down_since = now
                logger.error(
                    "focused: error: %s; keeping %d changes and retrying for %.0f s",
                    unreachable_message(self.server, exc),
                    red.pending,
                    self.lease,
                )
            elif now - self._down_since > self.lease and not self._closing and not final:
                self._stop("redis_unreachable")
            return None
        if self._down_since is not None:
            logger.info("focused: Redis is back after %.1f s", time.monotonic() - self._down_since)
            self._down_since = None
        self._counts = step.counts
        for op, fp, code in step.results:
            if op not in ("p", "P"):
                continue
            if code in (ADDED, PROMOTED, REQUEUED):
                self.pushed += 1
                self.enqueued += 1
            else:
                self.ignored += 1
                self._filter()
                if code == IGNORED_GONE:
                    self._gone.add(fp)
        self._update_stats()
        return step

    def _stop(self, reason: str) -> None:
        from scrapy.utils.defer import deferred_from_coro

        self._closing = True
        logger.info("focused: closing the spider (%s)", reason)
        engine = getattr(self.crawler, "engine", None)
        if engine is not None:
            deferred_from_coro(engine.close_spider_async(reason=reason))

    def _poke_later(self) -> None:
        """Make the engine ask for a request again soon (back-off while nothing comes)."""
        from twisted.internet import reactor

        if self._closing or (self._poke is not None and self._poke.active()):
            return
        delay = self._idle_delay
        self._idle_delay = min(self.idle_poll_max, 2 * delay)
        self._poke = reactor.callLater(delay, self._poke_engine)  # type: ignore[attr-defined]

    def _poke_engine(self) -> None:
        slot = getattr(getattr(self.crawler, "engine", None), "_slot", None)
        nextcall = getattr(slot, "nextcall", None)
        if nextcall is not None:
            nextcall.schedule()

    def _tick(self) -> None:
        """Every lease/3: renew the leases of this worker's in-flight URLs, flush."""
        if self.redis is None:
            return
        if self.in_flight:
            self.redis.stage_renew(self.in_flight)
        self._sync()
        if self._down_since is not None:
            self._poke_later()

    def _settle(self) -> None:
        """When this worker downloads and scrapes nothing, its in-flight URLs are over."""
        engine = getattr(self.crawler, "engine", None)
        if engine is None or not self.in_flight:
            return
        try:
            busy = bool(engine.downloader.active) or not engine.scraper.slot.is_idle()
        except AttributeError:
            return
        if busy:
            return
        for fp in list(self.in_flight):
            if fp in self._responded:
                self._finish(fp, DONE)
            else:
                self.in_flight.discard(fp)
                self.redis.stage_release(fp)  # type: ignore[union-attr]
                self.released += 1

    # --- bookkeeping ----------------------------------------------------------------
    def _finish(self, fp: int, state: int, journal: bool = True) -> None:
        """Move an in-flight URL to the done or error queue (staged, sent with the next
        round trip; no-op if it is not in flight here)."""
        if fp not in self.in_flight or self.redis is None:
            return
        self.in_flight.discard(fp)
        self._responded.discard(fp)
        if state == DONE:
            self.done += 1
        else:
            self.errors += 1
        self.redis.stage_finish(fp, error=state != DONE)

    def _on_response(self, response: Response, request: Request, spider: Spider) -> None:
        from scrapy.http import TextResponse

        fp = self._fingerprint(request)
        if fp not in self.in_flight:
            return
        if response.status >= 400:
            self._finish(fp, ERROR)
        elif 200 <= response.status < 300 and isinstance(response, TextResponse):
            self._responded.add(fp)  # done once its item is stored
        else:
            self._finish(fp, DONE)

    def _on_item(self, response: Response | None = None, **kwargs: Any) -> None:
        request = getattr(response, "request", None)
        if request is not None:
            fp = self._fingerprint(request)
            if fp in self._responded:
                self._finish(fp, DONE)

    def _on_checkpoint(self, **kwargs: Any) -> None:
        """Before the page store commits a page: its links go to Redis first."""
        if self.redis is not None and any(op[0] in "pP" for op in self.redis.outbox):
            self._sync()

    # --- stats ----------------------------------------------------------------------
    def queues(self) -> dict[str, int]:
        c = self._counts
        return {"waiting": c.waiting, "in_flight": c.in_flight, "done": c.done, "error": c.error}

    def _update_stats(self) -> None:
        super()._update_stats()
        stats = self.stats
        red = self.redis
        if stats is None or red is None:
            return
        stats.set_value("focused/redis/round_trips", red.round_trips)
        stats.set_value("focused/redis/pushed", self.pushed)
        stats.set_value("focused/redis/ignored", self.ignored)
        stats.set_value("focused/redis/in_flight_here", len(self.in_flight))
        stats.set_value("focused/redis/released", self.released)
        stats.set_value("focused/frontier/memory/promoted", red.promoted)


# --- command line --------------------------------------------------------------------------
def main(argv: list[str] | None = None) -> int:
    """``python -m focused.redis_frontier {status,clear} --key KEY [--url REDIS_URL]``."""
    import argparse
    import json

    parser = argparse.ArgumentParser(
        prog="python -m focused.redis_frontier",
        description="Inspect or delete a shared focused-crawl frontier in Redis.",
    )
    parser.add_argument("action", choices=("status", "clear"))
    parser.add_argument("--key", required=True, help="key prefix, e.g. focused:chemistry")
    parser.add_argument(
        "--url", default=os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0"), help="Redis URL"
    )
    args = parser.parse_args(argv)
    server = redis.Redis.from_url(args.url, socket_connect_timeout=3, socket_timeout=10)
    frontier = RedisFrontier(server, args.key)
    try:
        if args.action == "status":
            print(json.dumps(frontier.status()))
        else:
            print(f"deleted {frontier.clear()} keys of {args.key} at {safe_url(args.url)}")
    except REDIS_DOWN as exc:
        print(f"focused: error: {unreachable_message(server, exc)}", file=sys.stderr)
        return 2
    finally:
        server.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
