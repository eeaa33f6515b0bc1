"""One learnt model for every worker of a shared frontier, and its rescoring (pure client).

The ``learning`` strategy's model is a sum over pages (:mod:`focused.ranking.modelstate`),
so workers share it by adding what they learnt: each worker sends its
:class:`~focused.ranking.modelstate.ModelDelta` (packed) every few learnt pages, and one
Lua script adds it to the shared hashes (``HINCRBYFLOAT``: merges that commute, so the
order in which workers report does not matter) and appends it to a short log; the same
call returns the log entries of the other workers since this one's last call, which it
merges. A worker that starts late (or a resumed crawl) loads the hashes first. Keys,
under the crawl's prefix:

``<key>:model:counts`` / ``<key>:model:sums``  hash bucket -> pages that used the term /
                                               their labels, summed
``<key>:model:terms``   hash term -> relevant pages that used it (vocabulary expansion)
``<key>:model:meta``    hash ``pages``, ``total``, ``relevant``, ``relevant_pages``,
                        ``seq`` (deltas added so far)
``<key>:model:log``     list of the last ``cap`` deltas (``<worker id>|<delta>``)
``<key>:rescore``       hash ``cursor``: where the rescoring's scan of ``<key>:data`` is
``<key>:rescore:lock``  the worker that rescores (a lease: ``SET NX PX``)

Rescoring the shared queue: one worker at a time holds the lease; with its model round
trip it scans the next ``chunk`` entries of ``<key>:data`` (``HSCAN``), values the waiting
ones again with the merged model, and with its next round trip a script writes the new
priorities (``ZADD XX`` of the entry's own member, value and priority in the entry), only
for entries still waiting with that member: a URL picked meanwhile is not touched, and
since the pick and the rewrite are both atomic scripts, no two workers take one URL.

With several partitions (:mod:`focused.distributed.partition`) the model's keys are
``{<key>}:model:*`` (one hash tag: one cluster slot) and the rescoring runs per partition:
each partition has its own lease and scan cursor (``{<key>:p3}:rescore:lock``,
``{<key>:p3}:rescore``), and a worker's model round trips take the partitions in turn, so
that different workers may rescore different partitions at once.
"""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import redis

from focused.distributed.partition import Layout
from focused.ranking.modelstate import ModelDelta, decode_delta, encode_delta

__all__ = ["SYNC_LUA", "SharedModel", "parse_snapshot"]

SYNC_LUA = r"""
local counts, sums, meta, terms, log = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local me, since, cap = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
local function num(x) return string.format('%.17g', x) end
for a = 4, #ARGV do
  local blob = ARGV[a]
  local pages, total, relevant, rp, nb, nt, nj = struct.unpack('<IdIIIII', blob)
  local cb, sb = 33 + 4 * nb, 33 + 12 * nb
  for i = 0, nb - 1 do
    local b = tostring(struct.unpack('<I', blob, 33 + 4 * i))
    redis.call('HINCRBYFLOAT', counts, b, num(struct.unpack('<d', blob, cb + 8 * i)))
    redis.call('HINCRBYFLOAT', sums, b, num(struct.unpack('<d', blob, sb + 8 * i)))
  end
  local fb = sb + 8 * nb
  local jb = fb + 4 * nt
  local start = jb
  for n = 0, nt - 1 do
    local stop = string.find(blob, '\0', start, true)
    if not stop or stop >= jb + nj then stop = jb + nj end
    redis.call('HINCRBY', terms, string.sub(blob, start, stop - 1),
               (struct.unpack('<I', blob, fb + 4 * n)))
    start = stop + 1
  end
  redis.call('HINCRBY', meta, 'pages', pages)
  redis.call('HINCRBYFLOAT', meta, 'total', num(total))
  redis.call('HINCRBY', meta, 'relevant', relevant)
  redis.call('HINCRBY', meta, 'relevant_pages', rp)
  redis.call('HINCRBY', meta, 'seq', 1)
  redis.call('RPUSH', log, me .. '|' .. blob)
end
local seq = tonumber(redis.call('HGET', meta, 'seq') or '0')
local n = redis.call('LLEN', log)
while n > cap do
  redis.call('LPOP', log)
  n = n - 1
end
local base = seq - n + 1
if since + 1 < base then return {seq, 0, {}} end
return {seq, 1, redis.call('LRANGE', log, since + 1 - base, -1)}
"""

SNAPSHOT_LUA = r"""
return {tonumber(redis.call('HGET', KEYS[3], 'seq') or '0'),
        redis.call('HGETALL', KEYS[1]), redis.call('HGETALL', KEYS[2]),
        redis.call('HGETALL', KEYS[4]), redis.call('HGETALL', KEYS[3])}
"""

SCAN_LUA = r"""
local lock, state, data = KEYS[1], KEYS[2], KEYS[3]
local me, ttl, count = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
local holder = redis.call('GET', lock)
if holder == me then
  redis.call('PEXPIRE', lock, ttl)
elseif not redis.call('SET', lock, me, 'NX', 'PX', ttl) then
  return {0, {}}
end
local cursor = redis.call('HGET', state, 'cursor') or '0'
local got = redis.call('HSCAN', data, cursor, 'COUNT', count)
redis.call('HSET', state, 'cursor', got[1])
if got[1] == '0' then redis.call('HINCRBY', state, 'passes', 1) end
return {1, got[2]}
"""

APPLY_LUA = r"""
local lock, data, queue, inflight = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
if redis.call('GET', lock) ~= ARGV[1] then return -1 end
local moved = 0
local i = 3
for n = 1, tonumber(ARGV[2]) do
  local fp, member, prio, value = ARGV[i], ARGV[i + 1], tonumber(ARGV[i + 2]), ARGV[i + 3]
  i = i + 4
  local d = redis.call('HGET', data, fp)
  if d and string.sub(d, 1, 23) == member and not redis.call('ZSCORE', inflight, fp) then
    local old = redis.call('ZSCORE', queue, member)
    if old then
      if tonumber(old) ~= -prio then
        redis.call('ZADD', queue, 'XX', -prio, member)
        moved = moved + 1
      end
      redis.call('HSET', data, fp, member .. value .. struct.pack('>d', prio) .. string.sub(d, 40))
    end
  end
end
return moved
"""

_MEMBER = 23
_KIND_AT = _MEMBER + 42  # the extra's kind in a stored entry (see frontier._HEAD)
#: flag on the kind byte: the entry ends with rescoring evidence and its u16 length
EVIDENCE_FLAG = 0x80
_LEN = struct.Struct(">H")
_VALUE = struct.Struct(">d")


def evidence_of(stored: bytes) -> bytes:
    """The rescoring evidence at the end of a stored entry (``b""``: none)."""
    if len(stored) <= _KIND_AT or not stored[_KIND_AT] & EVIDENCE_FLAG:
        return b""
    (n,) = _LEN.unpack_from(stored, len(stored) - 2)
    return bytes(stored[len(stored) - 2 - n : len(stored) - 2])


def parse_snapshot(reply: list[Any]) -> tuple[int, ModelDelta]:
    """The sequence number and the whole shared model (as one delta) of a snapshot."""
    seq, counts, sums, terms, meta = reply

    def pairs(flat: list[Any]) -> dict[bytes, bytes]:
        return dict(zip(flat[0::2], flat[1::2], strict=True))

    c, s, t, m = pairs(counts), pairs(sums), pairs(terms), pairs(meta)
    buckets = np.array([int(k) for k in c], dtype=np.int64)
    delta = ModelDelta(
        buckets,
        np.array([float(v) for v in c.values()]),
        np.array([float(s.get(k, 0.0)) for k in c]),
        int(float(m.get(b"pages", 0))),
        float(m.get(b"total", 0.0)),
        int(float(m.get(b"relevant", 0))),
        int(float(m.get(b"relevant_pages", 0))),
    )
    delta.terms.update({k: int(v) for k, v in t.items()})
    return int(seq), delta


@dataclass
class SharedModel:
    """The client side of the shared model and of the shared rescoring."""

    server: redis.Redis
    key: str
    cap: int = 512  # log entries kept (a worker further behind reloads the hashes)
    lock_ms: int = 10_000
    worker: str = field(default_factory=lambda: os.urandom(8).hex())
    seq: int = 0  # the last delta merged here
    round_trips: int = 0
    unsent: list[bytes] = field(default_factory=list)
    #: rescored entries to write with the next round trip: (fp, member, prio, value)
    rescored: list[tuple[bytes, bytes, int, float]] = field(default_factory=list)
    moved: int = 0
    rescore_rounds: int = 0
    #: the frontier's key layout (default: one partition under ``key``)
    layout: Layout | None = None
    #: the partition the last scan (and so :attr:`rescored`) came from
    scan_partition: int = 0

    def __post_init__(self) -> None:
        if self.layout is None:
            self.layout = Layout(self.key)
        layout = self.layout
        self.model_keys = layout.model_keys()
        n = layout.partitions
        self.partition_lock_keys = [layout.rescore_keys(p) for p in range(n)]
        self.partition_keys = [layout.frontier_keys(p) for p in range(n)]
        self.lock_keys = self.partition_lock_keys[0]
        self._next_scan = 0
        self._scripts = [
            self.server.register_script(text)
            for text in (SYNC_LUA, SNAPSHOT_LUA, SCAN_LUA, APPLY_LUA)
        ]
        self._sync, self._snapshot, self._scan, self._apply = self._scripts

    def _load_scripts(self) -> None:
        """Load the scripts (on every master of a cluster): after a failover the promoted
        replica does not have them."""
        for script in self._scripts:
            script.sha = self.server.script_load(script.script)

    def snapshot(self) -> ModelDelta:
        """The whole shared model (one round trip); later syncs continue from it."""
        self.round_trips += 1
        try:
            reply = self._snapshot(keys=self.model_keys)
        except redis.exceptions.NoScriptError:
            self._load_scripts()
            reply = self._snapshot(keys=self.model_keys)
        self.seq, delta = parse_snapshot(reply)
        return delta

    def sync(self, delta: ModelDelta | None, scan: int = 0) -> tuple[list[ModelDelta] | None, list]:
        """Send ``delta``, get the others' deltas since the last call (``None``: this
        worker fell behind the log: reload with :meth:`snapshot`), write the rescored
        entries and, with ``scan`` > 0, scan the next entries to rescore if this worker
        holds the rescoring lease: one round trip. On a connection error the delta is
        kept for the next call and the error raised."""
        if delta is not None and not delta.empty:
            self.unsent.append(encode_delta(delta))
        rescored = self.rescored
        part = self._next_scan
        try:
            replies = self._pipeline(rescored, scan, part)
        except redis.exceptions.NoScriptError:
            self._load_scripts()
            replies = self._pipeline(rescored, scan, part)
        self.round_trips += 1
        if scan > 0:
            self.scan_partition = part
            self._next_scan = (part + 1) % len(self.partition_keys)
        self.unsent = []
        self.rescored = []
        seq, fresh, entries = replies[0]
        scanned: list = []
        if rescored and int(replies[1]) > 0:
            self.moved += int(replies[1])
        if scan > 0:
            held, flat = replies[-1]
            if held:
                scanned = list(zip(flat[0::2], flat[1::2], strict=True))
        if not fresh:
            self.seq = int(seq)
            return None, scanned
        prefix = (self.worker + "|").encode()
        out = [decode_delta(e[len(prefix) :]) for e in entries if not e.startswith(prefix)]
        self.seq = int(seq)
        return out, scanned

    def _pipeline(self, rescored: list, scan: int, part: int) -> list[Any]:
        """The model script, the rescored entries' write (partition of the last scan)
        and the next scan (partition ``part``): one pipeline (one per node on a cluster)."""
        pipe = self.server.pipeline(transaction=False)
        self._sync(
            keys=self.model_keys, args=[self.worker, self.seq, self.cap, *self.unsent], client=pipe
        )
        if rescored:
            args: list[Any] = [self.worker, len(rescored)]
            for fp, member, prio, value in rescored:
                args += [fp, member, str(int(prio)), _VALUE.pack(value)]
            q = self.scan_partition
            queue, data, inflight = (self.partition_keys[q][i] for i in (0, 1, 2))
            keys = [self.partition_lock_keys[q][0], data, queue, inflight]
            self._apply(keys=keys, args=args, client=pipe)
        if scan > 0:
            keys = [*self.partition_lock_keys[part], self.partition_keys[part][1]]
            self._scan(keys=keys, args=[self.worker, self.lock_ms, scan], client=pipe)
        return pipe.execute()

    def stage_rescore(self, scanned: list, rescorer: Any) -> int:
        """Value the waiting entries of a scan again (``rescorer``: the strategy's
        :meth:`rescore`); written with the next :meth:`sync`. The number staged."""
        items = [(fp, d, ev) for fp, d in scanned if (ev := evidence_of(d))]
        if not items:
            return 0
        prios, values = rescorer([ev for _, _, ev in items])
        self.rescored = [
            (fp, bytes(d[:_MEMBER]), int(p), float(v))
            for (fp, d, _), p, v in zip(items, prios, values, strict=True)
        ]
        self.rescore_rounds += 1
        return len(items)

    def release(self) -> None:
        """Give the rescoring leases up (at the close) that this worker holds."""
        for lock, _ in self.partition_lock_keys:
            if self.server.get(lock) == self.worker.encode():
                self.server.delete(lock)
