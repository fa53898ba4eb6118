--[[
  end-output: ends one generation (fenced like append-output), then starts the retention of
  every key of the generation and the idle TTL of the request's sequence state.

  Steps
    1. Fence (same rules as append-output): "fenced" for a stale epoch or a missing or
       expired generation, "ended" when the end entry exists. One HMGET of the seq hash and
       the epoch GET; the end entry is looked up only when the seq hash says the generation
       is not the live latest one.
    2. HSET the end entry: ok (0|1) and, when present, code, message, details (ErrorDetails
       bytes). ARGV[4] says which optional fields are present ("c", "m", "d" letters).
    3. Mark the latest generation ended in the seq hash (a seqno-1 append now begins the next
       generation), and XADD the same fields as the stream's last entry (an end marker, field
       e = 1, after every frame): a reader's one XRANGE then returns the frames and the end
       together (libs/bus/README.md "Reads"). Then raise the stream's last id to the largest
       one: no XADD of any epoch can follow the marker.
    4. PEXPIRE the generation's keys (in, buf, out, end, epoch, snap) with the retention and
       the seq hash with its idle TTL; keys that do not exist yet get theirs when written.
    5. SPUBLISH "o" on the wake channel.

  KEYS[1] seq hash  KEYS[2] epoch  KEYS[3] end  KEYS[4] output stream
  KEYS[5] input stream  KEYS[6] buffered input hash  KEYS[7] snapshot
  (all <prefix>:req:{t:r}:..., generation keys under :g<N>:)

  ARGV[1] generation
  ARGV[2] epoch of the caller
  ARGV[3] ok ("1" | "0")
  ARGV[4] present optional fields: any of "c", "m", "d"
  ARGV[5] code       ARGV[6] message       ARGV[7] error details (bytes)
  ARGV[8] retention of the generation's keys (ms)
  ARGV[9] idle TTL of the seq hash (ms)
  ARGV[10] wake channel

  Commands: HMGET, GET, HSET (end), HSET (seq), XLEN, XADD, XSETID, 7 PEXPIRE, SPUBLISH (15,
  plus the EVALSHA).

  Returns
    {1, nextIndex}    ended; nextIndex = number of frames in the stream (the marker not counted)
    {0, "fenced"} | {0, "ended"}
]]
local seqKey, epochKey, endKey, outKey, inKey, bufKey, snapKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[7]
local generation = tonumber(ARGV[1])
local epoch = tonumber(ARGV[2])
local present = ARGV[4]
local retention = ARGV[8]
local seqTtl = ARGV[9]
local channel = ARGV[10]

local state = redis.call('HMGET', seqKey, 'latest', 'ended')
local latest = tonumber(state[1] or '0')
if generation < 1 or generation > latest then return { 0, 'fenced' } end
if tonumber(redis.call('GET', epochKey) or '0') ~= epoch then return { 0, 'fenced' } end
-- The latest generation, not marked ended: its end entry cannot exist (this script writes both
-- at once, and the seq hash outlives the generation's keys), so no EXISTS on the usual path.
if generation < latest or state[2] == '1' then
  if redis.call('EXISTS', endKey) == 1 then return { 0, 'ended' } end
  return { 0, 'fenced' }
end

local fields = { 'ok', ARGV[3] }
if string.find(present, 'c', 1, true) then table.insert(fields, 'code'); table.insert(fields, ARGV[5]) end
if string.find(present, 'm', 1, true) then table.insert(fields, 'message'); table.insert(fields, ARGV[6]) end
if string.find(present, 'd', 1, true) then table.insert(fields, 'details'); table.insert(fields, ARGV[7]) end
redis.call('HSET', endKey, unpack(fields))
redis.call('HSET', seqKey, 'ended', '1')
local frames = redis.call('XLEN', outKey)
redis.call('XADD', outKey, string.format('%.0f-%.0f', frames + 1, 2 * epoch + 1), 'e', '1', unpack(fields))
redis.call('XSETID', outKey, '18446744073709551615-18446744073709551615')

for _, k in ipairs({ inKey, bufKey, outKey, endKey, epochKey, snapKey }) do
  redis.call('PEXPIRE', k, retention)
end
redis.call('PEXPIRE', seqKey, seqTtl)
redis.call('SPUBLISH', channel, 'o')
return { 1, frames }
