--[[
  append-output: appends frames to one generation's output stream, all or none, fenced by
  the owner's epoch (docs/architecture.md property 3) and capped (property 7); optionally
  saves the run snapshot in the same atomic step (the frames and the snapshot that counts
  them are durable together, and the fence is checked once for both).

  Steps
    1. Fence: the generation must exist (1 <= generation <= latest) and its epoch key must
       equal ARGV[2] (a missing epoch counts as 0, as in the memory bus). Checked in the same
       atomic step as the write, so a worker that lost ownership between its last check and
       this call cannot slip a frame in.
    2. Only the latest generation, not marked ended in the seq hash, is live. Otherwise:
       "ended" while its end entry exists, "fenced" once that expired (nothing may recreate
       its keys without a TTL). The live path reads the seq hash once (HMGET) and never the
       end key: end-output sets `ended` in the same step as the end entry.
    3. Cap: XLEN + #frames > max output frames -> "cap", nothing written (a live stream is
       never trimmed: that would break replay).
    4. XADD each frame with the explicit id 0-(index+1): f = frame bytes, t = trace JSON,
       a = the writer's clock in ms (gateway overhead metrics).
    5. SET the snapshot when ARGV[7] is not empty (the generation is live, so no TTL yet).
    6. PUBLISH "o" on the wake channel.

  KEYS[1] seq hash          <prefix>:req:{t:r}:seq
  KEYS[2] epoch             <prefix>:req:{t:r}:g<N>:epoch
  KEYS[3] end               <prefix>:req:{t:r}:g<N>:end
  KEYS[4] output stream     <prefix>:req:{t:r}:g<N>:out
  KEYS[5] snapshot          <prefix>:req:{t:r}:g<N>:snap

  ARGV[1] generation
  ARGV[2] epoch of the caller
  ARGV[3] max output frames per generation
  ARGV[4] wake channel
  ARGV[5] trace carrier (JSON)
  ARGV[6] appended-at, ms since the epoch (the writer's clock)
  ARGV[7] run snapshot (bytes), or "" for none
  ARGV[8..] frames (bytes), at least one

  Returns
    {1, nextIndex}           appended; nextIndex = number of frames in the stream
    {0, "fenced"}            stale epoch or no such (live) generation
    {0, "ended"}             the generation already ended
    {0, "cap"}               the cap would be exceeded
]]
local seqKey, epochKey, endKey, outKey, snapKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local generation = tonumber(ARGV[1])
local epoch = tonumber(ARGV[2])
local maxOutput = tonumber(ARGV[3])
local channel = ARGV[4]
local trace = ARGV[5]
local appendedAt = ARGV[6]
local snapshot = ARGV[7]

local seq = redis.call('HMGET', seqKey, 'latest', 'ended')
local latest = tonumber(seq[1] or '0')
if generation < 1 or generation > latest then return { 0, 'fenced' } end
if tonumber(redis.call('GET', epochKey) or '0') ~= epoch then return { 0, 'fenced' } end
-- Older generations always ended (a new one starts only after the latest ended).
if generation < latest or seq[2] == '1' then
  if redis.call('EXISTS', endKey) == 1 then return { 0, 'ended' } end
  return { 0, 'fenced' }
end

local len = redis.call('XLEN', outKey)
local count = #ARGV - 7
if len + count > maxOutput then return { 0, 'cap' } end
for i = 8, #ARGV do
  len = len + 1
  redis.call('XADD', outKey, '0-' .. len, 'f', ARGV[i], 't', trace, 'a', appendedAt)
end
if snapshot ~= '' then redis.call('SET', snapKey, snapshot) end
redis.call('PUBLISH', channel, 'o')
return { 1, len }
