-- One step of the shared frontier, run atomically by Redis (focused.distributed.frontier).
--
-- KEYS: <key>:queue, <key>:data, <key>:inflight, <key>:seen, <key>:stats
-- ARGV: lease (ms), pick mode (0 none, 1 best, 2 annealing), K, T0, alpha, T_min,
--       u1, u2 (the worker's two uniform numbers), the picks of the crawl's other
--       partitions that the worker knows of (0 with one partition), the number of staged
--       operations, the partition's epoch as the worker read it when it opened (field
--       'epoch' of <key>:stats; '' for no check), the highest revision of the partition
--       the worker knows to be kept (field 'rev' of <key>:stats; 0 for no check),
--       then 4 arguments per operation: op, fingerprint (8 bytes), priority, payload.
--   op 'p' push, 'P' push of a dont_filter request (a retry), 'C' push of a dont_filter
--      request that is not a retry (a copy of its own when the URL waits or is in
--      flight), 'd' done, 'e' error, 'r' release (back to the queue, old place),
--      'l' renew the lease, 'w' waste re-queue: an in-flight entry the worker did not
--      fetch because its URL shape became wasteful goes back to the queue with the
--      priority and packed entry sent (the bottom, marked re-queued: flag 0x100),
--      'W' the same for an annealing pick (the pick is taken back: picks - 1), 'V' the
--      same for an annealing pick that took a worse candidate (accepted_worse - 1 too).
--   After the operations (optional): scan, the number of full hosts, their names, the
--   number of delayed hosts, their names. With busy (full or delayed) hosts, the pick
--   takes the best entry (or the top K for annealing) whose URL's host is neither,
--   looking at no more than `scan` queued entries: the best waiting URL among the hosts
--   the worker may fetch now (focused/frontier/hostaware.py); when there is none, the
--   best of a full host (it waits in its slot for a transfer, not for a delay), unless
--   the optional last argument is 1 (the worker tries another partition first).
-- 1. apply the operations in order (a code each), 2. hand expired leases back to the
-- queue, 3. optionally pick: the best entry, or the simulated-annealing choice between
-- the best and one drawn from the top K (He, Cheng & Cai 2009), T shared by all workers.
-- A lost frontier is the error LOSTFRONTIER, before anything is written (the worker
-- must not rebuild a partial frontier from its changes): an epoch that is not the
-- partition's (its stats hash is gone: Redis restarted without its data, or the keys
-- were deleted or evicted); sizes of the queue, data, in-flight and seen keys that are
-- not the ones the last call left (field 'sizes': some of them were deleted or evicted,
-- the stats hash not); a revision lower than the worker's (field 'rev', + 1 by every
-- call that changes the partition: Redis restarted from an older copy of its data).
-- Returns {codes, {fp, data} or {}, T, accepted worse (0/1), picks before this one,
--          waiting, in flight, done, error, the score of the best waiting entry after
--          the pick (false: none), this partition's picks, its revision}.

local queue, data, inflight, seen, stats = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local lease = tonumber(ARGV[1])
local mode = tonumber(ARGV[2])
local k = tonumber(ARGV[3])
local t0, alpha, tmin = tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6])
local u1, u2 = tonumber(ARGV[7]), tonumber(ARGV[8])
local offset = tonumber(ARGV[9])
local nops = tonumber(ARGV[10])
local epoch = ARGV[11]
local floor = tonumber(ARGV[12]) or 0
local was = redis.call('HMGET', stats, 'epoch', 'rev', 'sizes')
if epoch ~= '' and was[1] ~= epoch then
  return redis.error_reply('LOSTFRONTIER the epoch of this partition changed')
end
local rev = tonumber(was[2]) or 0
if rev < floor then
  return redis.error_reply('LOSTFRONTIER this partition is older than its last change')
end
local function sizes()
  return redis.call('ZCARD', queue) .. ' ' .. redis.call('HLEN', data) .. ' '
    .. redis.call('ZCARD', inflight) .. ' ' .. redis.call('SCARD', seen)
end
local before = sizes()
if was[3] and was[3] ~= before then
  return redis.error_reply('LOSTFRONTIER keys of this partition were deleted or evicted')
end
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
local function host_of(d)
  -- the host name of the entry's URL (lower case, no port, no brackets)
  local nu = struct.unpack('>I', d, 67)
  local url = string.sub(d, 75, 74 + nu)
  local auth = string.match(url, '^[%a][%w+.-]*://([^/?#]*)') or ''
  auth = string.match(auth, '([^@]*)$') or ''
  local host = string.match(auth, '^%[([^%]]*)%]') or string.match(auth, '^([^:]*)') or ''
  return string.lower(host)
end
local function requeue(d)
  redis.call('ZADD', queue, -prio_of(d), string.sub(d, 1, 23))
end
-- the kind of extra (3: the whole request) at byte 43 of a packed entry, 66 of data
-- (bit 0x80: the entry ends with rescoring evidence, focused/distributed/model.py)
local WHOLE = 3
local function kept(d, prio)
  -- the waiting entry d with priority prio (value, flags, URL, extra unchanged)
  return string.sub(d, 24, 31) .. struct.pack('>d', prio) .. string.sub(d, 40)
end
-- flag 0x100 (bytes 17-18 of a payload, 40-41 of data): re-queued once as waste ('w');
-- a promotion keeps it, so the entry is never re-queued as waste again
local REQUEUED = 256
local function flagged(f) return math.floor(f / REQUEUED) % 2 == 1 end
local function marked(payload, d)
  -- payload, with the waiting entry d's waste re-queue mark
  if not flagged((struct.unpack('>H', d, 40))) then return payload end
  local f = struct.unpack('>H', payload, 17)
  if flagged(f) then return payload end
  return string.sub(payload, 1, 16) .. struct.pack('>H', f + REQUEUED) .. string.sub(payload, 19)
end
local function copy_of(fp, n)
  -- the fingerprint of the n-th copy of fp: 8 bytes of SHA-1
  local h = string.sub(redis.sha1hex(fp .. ':' .. n), 1, 16)
  return (string.gsub(h, '..', function(x) return string.char(tonumber(x, 16)) end))
end

local codes = {}
local i = 13
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
        if string.byte(d, 66) % 128 == WHOLE or string.byte(payload, 43) % 128 == WHOLE then
          payload = kept(d, prio)  -- a whole request stays the one that waits
        else
          payload = marked(payload, d)
        end
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
  elseif op == 'C' then
    prio = tonumber(prio)
    if redis.call('HEXISTS', data, fp) == 1 then
      -- waits or is in flight: queued once more, as a copy of its own
      local n, copy = 1, copy_of(fp, 1)
      while redis.call('HEXISTS', data, copy) == 1 do
        n = n + 1
        copy = copy_of(fp, n)
      end
      redis.call('SADD', seen, copy)
      enqueue(copy, prio, payload)
      code = 5
    else
      code = redis.call('SADD', seen, fp) == 1 and 1 or 3
      enqueue(fp, prio, payload)
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
  elseif op == 'w' or op == 'W' or op == 'V' then
    -- only while it is in flight (picked and not finished); the worker sends it in the
    -- round trip right after the pick or never (its lease then hands it back unchanged)
    if redis.call('HEXISTS', data, fp) == 1 and redis.call('ZREM', inflight, fp) == 1 then
      enqueue(fp, tonumber(prio), payload)
      if op ~= 'w' then
        redis.call('HINCRBY', stats, 'picks', -1)
        if op == 'V' then redis.call('HINCRBY', stats, 'accepted_worse', -1) end
      end
      code = 1
    end
  elseif op == 'l' then
    code = redis.call('ZADD', inflight, 'XX', 'CH', now + lease, fp)
  end
  codes[n] = code
end
local scan = tonumber(ARGV[i] or '0') or 0
local nfull = tonumber(ARGV[i + 1] or '0') or 0
local full, delayed = {}, {}
for n = 1, nfull do full[ARGV[i + 1 + n]] = true end
local at = i + 2 + nfull
local ndelayed = tonumber(ARGV[at] or '0') or 0
for n = 1, ndelayed do delayed[ARGV[at + n]] = true end
local nbusy = nfull + ndelayed
local nospare = ARGV[at + ndelayed + 1] == '1'

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
  local want = 1
  if mode == 2 then want = k end
  local top
  if nbusy == 0 then
    top = redis.call('ZRANGE', queue, 0, want - 1)
  else
    -- skip the entries of busy hosts, in chunks, at most `scan` entries; `spare`: the
    -- first ones of full (not delayed) hosts, taken when no host is free
    top = {}
    local spare = {}
    local start = 0
    while #top < want and start < scan do
      local stop = math.min(start + 64, scan) - 1
      local members = redis.call('ZRANGE', queue, start, stop)
      if #members == 0 then break end
      for _, member in ipairs(members) do
        local d = redis.call('HGET', data, string.sub(member, 16))
        if d then
          local host = host_of(d)
          if not delayed[host] then
            if not full[host] then
              top[#top + 1] = member
              if #top >= want then break end
            elseif #spare < want then
              spare[#spare + 1] = member
            end
          end
        end
      end
      start = stop + 1
    end
    if #top == 0 and not nospare then top = spare end
  end
  if #top > 0 then
    local chosen = 1
    if mode == 2 then
      picks = redis.call('HINCRBY', stats, 'picks', 1) - 1 + offset
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
local after = sizes()
if nops > 0 or #expired > 0 or #picked > 0 or after ~= before or not was[3] then
  rev = rev + 1
  redis.call('HSET', stats, 'rev', string.format('%d', rev), 'sizes', after)
end
local st = redis.call('HMGET', stats, 'done', 'error', 'picks')
local head = redis.call('ZRANGE', queue, 0, 0, 'WITHSCORES')
return {codes, picked, tostring(temp), worse, picks,
        redis.call('ZCARD', queue), redis.call('ZCARD', inflight),
        tonumber(st[1] or 0), tonumber(st[2] or 0), head[2] or false,
        tonumber(st[3] or 0), rev}
