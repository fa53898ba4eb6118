--[[
  append-output: appends frames to one generation's output stream, all or none, fenced by
  the owner's epoch (docs/architecture.md property 3) and capped (property 7).

  Steps
    1. Fence: the generation must exist (1 <= generation <= latest) and its epoch key must
       equal ARGV[2] (a missing epoch counts as 0, as in the memory bus). Checked in the same
       atomic step as the write, so a worker that lost ownership between its last check and
       this call cannot slip a frame in.
    2. Refuse after the end entry exists ("ended"). An ended generation whose end entry
       already expired is refused as "fenced" (nothing may recreate its keys without a TTL).
    3. Cap: XLEN + #frames > max output frames -> "cap", nothing written (a live stream is
       never trimmed: that would break replay).
    4. XADD each frame with the explicit id 0-(index+1): f = frame bytes, t = trace JSON,
       a = the writer's clock in ms (gateway overhead metrics).
    5. PUBLISH "o" on the wake channel.

  KEYS[1] seq hash          <prefix>:req:{t:r}:seq
  KEYS[2] epoch             <prefix>:req:{t:r}:g<N>:epoch
  KEYS[3] end               <prefix>:req:{t:r}:g<N>:end
  KEYS[4] output stream     <prefix>:req:{t:r}:g<N>:out

  ARGV[1] generation
  ARGV[2] epoch of the caller
  ARGV[3] max output frames per generation
  ARGV[4] wake channel
  ARGV[5] trace carrier (JSON)
  ARGV[6] appended-at, ms since the epoch (the writer's clock)
  ARGV[7..] frames (bytes), at least one

  Returns
    {1, nextIndex}           appended; nextIndex = number of frames in the stream
    {0, "fenced"}            stale epoch or no such (live) generation
    {0, "ended"}             the generation already ended
    {0, "cap"}               the cap would be exceeded
]]
local seqKey, epochKey, endKey, outKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local generation = tonumber(ARGV[1])
local epoch = tonumber(ARGV[2])
local maxOutput = tonumber(ARGV[3])
local channel = ARGV[4]
local trace = ARGV[5]
local appendedAt = ARGV[6]

local latest = tonumber(redis.call('HGET', seqKey, 'latest') or '0')
if generation < 1 or generation > latest then return { 0, 'fenced' } end
if tonumber(redis.call('GET', epochKey) or '0') ~= epoch then return { 0, 'fenced' } end
if redis.call('EXISTS', endKey) == 1 then return { 0, 'ended' } end
-- Older generations always ended (a new one starts only after the latest ended); without an
-- end entry their retention passed.
if generation < latest or redis.call('HGET', seqKey, 'ended') == '1' then return { 0, 'fenced' } end

local len = redis.call('XLEN', outKey)
local count = #ARGV - 6
if len + count > maxOutput then return { 0, 'cap' } end
for i = 7, #ARGV do
  len = len + 1
  redis.call('XADD', outKey, '0-' .. len, 'f', ARGV[i], 't', trace, 'a', appendedAt)
end
redis.call('PUBLISH', channel, 'o')
return { 1, len }
