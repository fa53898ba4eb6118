--[[
  claim: takes ownership of a generation by bumping its epoch (docs/architecture.md property 3).
  Every earlier epoch is fenced from the moment this returns: append-output, end-output and
  save-snapshot compare the epoch in the same atomic step as their write, and the output
  stream's last id is raised so that an XADD of an earlier epoch fails by itself
  (libs/bus/README.md "Fencing by entry id").

  Steps
    1. The generation must exist (1 <= generation <= latest) and not be expired (an ended
       generation keeps its end entry until the retention passes).
    2. INCR the epoch key. For an ended generation the key already carries the retention TTL
       (INCR keeps it); a claim that creates the key of an ended generation gets the end
       entry's remaining TTL, so nothing outlives the generation.
    3. A live generation: raise the output stream's last id to (len+1)-(2·epoch), creating the
       (empty) stream if needed. Output entry ids are (index+1)-(2·epoch'+1): every id an
       earlier epoch can write next is below it, every id this epoch writes above it. An ended
       generation keeps the unreachable last id end-output set.
    4. A live generation: GET the run snapshot, in the same step as the epoch bump, so no
       earlier owner can save a newer one after it was read (a run's start needs the epoch and
       the snapshot together: one round trip).

  KEYS[1] seq hash   KEYS[2] epoch   KEYS[3] end   KEYS[4] output stream   KEYS[5] snapshot
  ARGV[1] generation

  Returns
    {epoch (>= 1), nextIndex (frames in the stream; -1 once ended), snapshot bytes ("" for none)}
    -1  no such generation
    -2  the generation ended and its retention passed
]]
local seqKey, epochKey, endKey, outKey, snapKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local generation = tonumber(ARGV[1])
local seq = redis.call('HMGET', seqKey, 'latest', 'ended')
local latest = tonumber(seq[1] or '0')
if generation < 1 or generation > latest then return -1 end
local hasEnded = generation < latest or seq[2] == '1'
-- The end entry exists only once the generation ended: a live one needs no lookup.
local endTtl = -2
if hasEnded then
  endTtl = redis.call('PTTL', endKey)
  if endTtl == -2 then return -2 end
end
local epoch = redis.call('INCR', epochKey)
if endTtl > 0 and redis.call('PTTL', epochKey) == -1 then redis.call('PEXPIRE', epochKey, endTtl) end
if hasEnded then return { epoch, -1, '' } end
local len = redis.call('XLEN', outKey)
local floor = string.format('%.0f-%.0f', len + 1, 2 * epoch)
if len == 0 then
  -- Creates the stream without an entry (or keeps it empty): only its last id is set.
  redis.call('XADD', outKey, 'MAXLEN', '0', floor, 'c', '1')
else
  redis.call('XSETID', outKey, floor)
end
return { epoch, len, redis.call('GET', snapKey) or '' }
