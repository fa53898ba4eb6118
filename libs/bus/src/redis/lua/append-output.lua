--[[
  append-output: appends frames to one generation's output stream, all or none, fenced by
  the owner's epoch (docs/architecture.md property 3) and capped (property 7); optionally
  saves the run snapshot in the same atomic step (the frames and the snapshot that counts
  them are durable together, and the fence is checked once for both). The Redis bus appends a
  lone frame without a snapshot with a plain XADD instead (libs/bus/README.md "Fencing by entry
  id"); this script is its fallback and the path of batches and snapshots.

  Output entry ids are (index+1)-(2·epoch+1). claim raised the stream's last id to
  (len+1)-(2·epoch) and end-output to the largest id, so an XADD with such an id succeeds only
  for the current epoch of a live generation at the right index.

  Fast path (ARGV[8] >= 0: the caller knows the next index from its claim and appends)
    XADD the first frame with its id: if Redis accepts it, the caller is the current owner of
    the live generation and the index is right; the rest follow. No fence reads.
  Checked path (ARGV[8] = -1, or the first XADD refused)
    1. Fence: the generation must exist (1 <= generation <= latest) and its epoch key must
       equal ARGV[2] (a missing epoch counts as 0, as in the memory bus).
    2. Only the latest generation, not marked ended in the seq hash, is live. Otherwise:
       "ended" while its end entry exists, "fenced" once that expired.
    3. Cap: XLEN + #frames > max output frames -> "cap", nothing written (a live stream is
       never trimmed: that would break replay).
    4. XADD each frame at XLEN onwards.
  Then (both paths): SET the snapshot when ARGV[7] is not empty; SPUBLISH ARGV[9] (the caller's
  wake-up carrying the frame, for a lone frame at the known index) when the fast path appended
  it, else "o".
  Fields: f = frame bytes, t = trace JSON, a = the writer's clock in ms.

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
  ARGV[8] index of the first frame as the caller knows it, or -1
  ARGV[9] wake-up carrying the frame (bytes) when one frame is appended at ARGV[8], or ""
  ARGV[10..] frames (bytes), at least one

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
local known = tonumber(ARGV[8])
local carried = ARGV[9]
local count = #ARGV - 9
local seqPart = string.format('%.0f', 2 * epoch + 1)

local function idOf(index)
  return string.format('%.0f', index + 1) .. '-' .. seqPart
end

local function finish(len, wake)
  if snapshot ~= '' then redis.call('SET', snapKey, snapshot) end
  redis.call('SPUBLISH', channel, wake)
  return { 1, len }
end

if known >= 0 and known + count <= maxOutput then
  local first = redis.pcall('XADD', outKey, idOf(known), 'f', ARGV[10], 't', trace, 'a', appendedAt)
  if type(first) ~= 'table' or not first.err then
    for i = 2, count do
      redis.call('XADD', outKey, idOf(known + i - 1), 'f', ARGV[9 + i], 't', trace, 'a', appendedAt)
    end
    if count == 1 and carried ~= '' then return finish(known + count, carried) end
    return finish(known + count, 'o')
  end
end

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
if len + count > maxOutput then return { 0, 'cap' } end
for i = 1, count do
  redis.call('XADD', outKey, idOf(len), 'f', ARGV[9 + i], 't', trace, 'a', appendedAt)
  len = len + 1
end
return finish(len, 'o')
