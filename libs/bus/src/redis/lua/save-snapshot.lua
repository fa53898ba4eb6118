--[[
  save-snapshot: stores the run snapshot (opaque bytes) of a generation, fenced by epoch.

  Steps
    1. Fence: the generation must exist and not be expired, and its epoch must equal ARGV[2]
       (a missing epoch counts as 0). Saving after the end is allowed (as in the memory bus).
    2. SET the snapshot; when the generation already ended, with the end entry's remaining
       TTL so the snapshot does not outlive the generation. The end entry is read (PTTL) only
       when the seq hash says the generation ended: HMGET, GET, SET while it is live.

  KEYS[1] seq hash   KEYS[2] epoch   KEYS[3] end   KEYS[4] snapshot
  ARGV[1] generation   ARGV[2] epoch of the caller   ARGV[3] snapshot (bytes)

  Returns 1 saved, 0 fenced
]]
local seqKey, epochKey, endKey, snapKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local generation = tonumber(ARGV[1])
local epoch = tonumber(ARGV[2])
local state = redis.call('HMGET', seqKey, 'latest', 'ended')
local latest = tonumber(state[1] or '0')
if generation < 1 or generation > latest then return 0 end
if tonumber(redis.call('GET', epochKey) or '0') ~= epoch then return 0 end
-- The live latest generation (the usual case) has no end entry: no PTTL (end-output.lua).
if generation == latest and state[2] ~= '1' then
  redis.call('SET', snapKey, ARGV[3])
  return 1
end
local endTtl = redis.call('PTTL', endKey)
if endTtl == -2 then return 0 end
if endTtl > 0 then
  redis.call('SET', snapKey, ARGV[3], 'PX', endTtl)
else
  redis.call('SET', snapKey, ARGV[3])
end
return 1
