--[[
  claim: takes ownership of a generation by bumping its epoch (docs/architecture.md property 3).
  Every earlier epoch is fenced from the moment this returns, because append-output,
  end-output and save-snapshot compare the epoch in the same atomic step as their write.

  Steps
    1. The generation must exist (1 <= generation <= latest) and not be expired (an ended
       generation keeps its end entry until the retention passes).
    2. INCR the epoch key. For an ended generation the key already carries the retention TTL
       (INCR keeps it); a claim that creates the key of an ended generation gets the end
       entry's remaining TTL, so nothing outlives the generation.

  KEYS[1] seq hash   KEYS[2] epoch   KEYS[3] end
  ARGV[1] generation

  Returns
    epoch (>= 1)
    -1  no such generation
    -2  the generation ended and its retention passed
]]
local seqKey, epochKey, endKey = KEYS[1], KEYS[2], KEYS[3]
local generation = tonumber(ARGV[1])
local latest = tonumber(redis.call('HGET', seqKey, 'latest') or '0')
if generation < 1 or generation > latest then return -1 end
local endTtl = redis.call('PTTL', endKey)
local hasEnded = generation < latest or redis.call('HGET', seqKey, 'ended') == '1'
if hasEnded and endTtl == -2 then return -2 end
local epoch = redis.call('INCR', epochKey)
if endTtl > 0 and redis.call('PTTL', epochKey) == -1 then redis.call('PEXPIRE', epochKey, endTtl) end
return epoch
