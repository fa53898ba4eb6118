--[[
  append-input: the append_seqno gate of one request (docs/protocol.md "Ordering and identity"),
  atomic in the request's slot. Same semantics as the memory bus's appendInput.

  Steps
    1. Read the latest generation, whether it ended, the next seqno and the latest generation's
       input and buffer sizes from the seq hash (one HMGET). With no generation, or when the
       latest one ended and seqno is 1 or <= 0, begin generation latest+1 (next seqno 1, not
       ended, sizes 0; the seq hash loses its idle TTL while a generation is live).
    2. seqno <= 0: append to the input stream unless the input cap is reached.
    3. seqno < next, or already buffered: duplicate, no effect.
    4. seqno - next > window: beyond_window, nothing recorded.
    5. seqno > next: buffer it (payload + trace in the buf hash) unless input + buffered
       reached the cap.
    6. seqno == next: append it, then flush every consecutive buffered successor, advance next.
    A delivered append SPUBLISHes "i" on the wake channel (a shard channel in the request's
    slot); an append to a generation whose input was still empty (the generation starts) also
    SPUBLISHes "o" so waiting readers look again (wake-ups carry nothing, spurious ones are
    allowed), and publishes the request's hash tag on the bus's starts channel, where readers
    waiting for the request to appear listen, with ARGV[11]: PUBLISH on Redis Cluster (the
    starts channel is in no request's slot, and a script may only SPUBLISH in its own), SPUBLISH
    on a standalone server (where one subscriber connection holds every channel, and ioredis
    leaves subscriber mode when either kind's count reaches 0: every channel of that connection
    must be of one kind; libs/bus/README.md "Redis Cluster").

  Generation keys are derived from KEYS[2] (the request's key base, same hash tag) because
  the generation number is only known inside the script; every derived key carries the same
  hash tag, so the script stays in one slot (as BullMQ does with its prefix).

  Input stream entry ids are explicit: entry i (0-based) has id 0-(i+1), so XRANGE from
  0-(i+1) seeks to index i. Fields: s = seqno (decimal), p = payload bytes, t = trace JSON.
  Buffered appends live in <gen>:buf as fields p:<seqno> and t:<seqno>.

  Sizes: this script is the only writer of the input stream and the buffer, so it keeps their
  sizes in the seq hash (fields "inputs" and "buffered", of the latest generation) and updates
  them in the HSET that advances "next": an in-order append is HMGET, XADD, HLEN (the flush
  reads the buffer's true size; not for the append that begins a generation), HSET, SPUBLISH; a
  duplicate or beyond_window one only the HMGET. A seq hash written before these fields existed
  is read with XLEN / HLEN once; an XADD refused because the stream is longer than the kept size
  (appended by an older build during a rollout) reads XLEN and appends at the true end. After an
  ended generation's retention passed, its keys are gone but the seq hash still counts them: a
  late append then keeps its index and can only be refused as input_full earlier, never
  accepted past the cap.

  seqno arrives as a decimal int64 string. Lua numbers are doubles: comparisons are exact
  for |seqno| <= 2^53; larger values round, which can only turn an absurdly large seqno into
  a (still) beyond-window one. Seqnos written back are formatted with %.0f (no exponent).

  KEYS[1] seq hash   <prefix>:req:{t:r}:seq  (latest, next, ended, inputs, buffered)
  KEYS[2] key base   <prefix>:req:{t:r}      (not a key itself; generation keys hang off it)

  ARGV[1] seqno (decimal string)
  ARGV[2] payload (bytes)
  ARGV[3] trace carrier (JSON)
  ARGV[4] seqno window
  ARGV[5] max input entries per generation
  ARGV[6] idle TTL of the seq hash once the latest generation ended (ms)
  ARGV[7] retention of an ended generation's keys (ms)
  ARGV[8] wake channel
  ARGV[9] starts channel
  ARGV[10] the request's hash tag (the starts channel's message)
  ARGV[11] the starts channel's publish command: PUBLISH (Redis Cluster) or SPUBLISH

  Returns
    {"accepted", generation, startedGeneration (0|1)}
    {"buffered", generation}
    {"duplicate", generation}
    {"beyond_window", generation, nextSeqno (decimal string)}
    {"input_full", generation}
]]
local seqKey = KEYS[1]
local base = KEYS[2]
local seqnoText = ARGV[1]
local seqno = tonumber(seqnoText)
local payload = ARGV[2]
local trace = ARGV[3]
local window = tonumber(ARGV[4])
local maxInput = tonumber(ARGV[5])
local seqTtl = ARGV[6]
local retention = ARGV[7]
local channel = ARGV[8]
local startsChannel = ARGV[9]
local tag = ARGV[10]
local startsPublish = ARGV[11]

local function fmt(n)
  return string.format('%.0f', n)
end

-- One read of the sequence state (commands inside scripts count: docs/benchmarks.md).
local state = redis.call('HMGET', seqKey, 'latest', 'ended', 'next', 'inputs', 'buffered')
local latest = tonumber(state[1] or '0')
local ended = state[2] == '1'
local nextSeqno = tonumber(state[3] or '1')
local len = tonumber(state[4])
-- Buffered appends (each is two fields of the buf hash).
local buffered = tonumber(state[5])
-- Began here: nothing can be buffered in it yet.
local fresh = false
if latest == 0 or (ended and (seqno == 1 or seqno <= 0)) then
  fresh = true
  latest = latest + 1
  ended = false
  nextSeqno = 1
  len, buffered = 0, 0
  redis.call('HSET', seqKey, 'latest', latest, 'next', '1', 'ended', '0', 'inputs', '0', 'buffered', '0')
  -- A live generation's sequence state never expires under it.
  redis.call('PERSIST', seqKey)
end

local gk = base .. ':g' .. latest
local inKey = gk .. ':in'
local bufKey = gk .. ':buf'
-- A seq hash from before the sizes were kept in it.
if not len then len = redis.call('XLEN', inKey) end
if not buffered then buffered = redis.call('HLEN', bufKey) / 2 end
local started = 0
if len == 0 then started = 1 end

-- Keeps an ended generation bounded: the idle sequence state is touched, and a key written
-- into an ended generation (a late append, as the memory bus allows) gets the retention TTL
-- instead of living forever.
local function settle()
  if ended then
    redis.call('PEXPIRE', seqKey, seqTtl)
    for _, k in ipairs({ inKey, bufKey }) do
      if redis.call('PTTL', k) == -1 then redis.call('PEXPIRE', k, retention) end
    end
  end
end

local function wake(delivered)
  if delivered then redis.call('SPUBLISH', channel, 'i') end
  if started == 1 then
    redis.call('SPUBLISH', channel, 'o')
    redis.call(startsPublish, startsChannel, tag)
  end
end

local function push(s, p, t)
  len = len + 1
  local r = redis.pcall('XADD', inKey, '0-' .. len, 's', s, 'p', p, 't', t)
  if type(r) == 'table' and r.err then
    -- Refused id: the stream is longer than the kept size (appended by a build that did not
    -- keep it, docs/operations.md "Upgrades and live runs"). Resynchronize and append.
    len = redis.call('XLEN', inKey) + 1
    redis.call('XADD', inKey, '0-' .. len, 's', s, 'p', p, 't', t)
  end
end

if seqno <= 0 then
  if len >= maxInput then
    settle(); wake(false)
    return { 'input_full', latest }
  end
  push(seqnoText, payload, trace)
  redis.call('HSET', seqKey, 'inputs', len, 'buffered', buffered)
  settle(); wake(true)
  return { 'accepted', latest, started }
end

local field = fmt(seqno)
-- Nothing buffered (the usual case): no lookups in the buffer below. The next seqno itself is
-- never buffered (the flush below takes it the moment it becomes next).
if seqno < nextSeqno or (seqno > nextSeqno and buffered > 0 and redis.call('HEXISTS', bufKey, 'p:' .. field) == 1) then
  settle(); wake(false)
  return { 'duplicate', latest }
end
if seqno - nextSeqno > window then
  settle(); wake(false)
  return { 'beyond_window', latest, fmt(nextSeqno) }
end
if seqno > nextSeqno then
  if len + buffered >= maxInput then
    settle(); wake(false)
    return { 'input_full', latest }
  end
  redis.call('HSET', bufKey, 'p:' .. field, payload, 't:' .. field, trace)
  redis.call('HSET', seqKey, 'inputs', len, 'buffered', buffered + 1)
  settle(); wake(false)
  return { 'buffered', latest }
end
if len >= maxInput then
  settle(); wake(false)
  return { 'input_full', latest }
end
push(field, payload, trace)
nextSeqno = nextSeqno + 1
-- The flush trusts the buffer's true size (HLEN), not the kept one: an append that an older
-- build buffered without counting it is still flushed here (docs/operations.md "Upgrades and
-- live runs"), and the kept size heals. A generation this call began has nothing buffered.
if not fresh then buffered = redis.call('HLEN', bufKey) / 2 end
-- Flush the buffered successors that are now in order.
while buffered > 0 do
  local f = fmt(nextSeqno)
  local p = redis.call('HGET', bufKey, 'p:' .. f)
  if not p then break end
  local t = redis.call('HGET', bufKey, 't:' .. f) or '{}'
  redis.call('HDEL', bufKey, 'p:' .. f, 't:' .. f)
  buffered = buffered - 1
  push(f, p, t)
  nextSeqno = nextSeqno + 1
end
redis.call('HSET', seqKey, 'next', fmt(nextSeqno), 'inputs', len, 'buffered', buffered)
settle(); wake(true)
return { 'accepted', latest, started }
