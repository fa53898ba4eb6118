--[[
  latest-generation: the latest generation of a request and whether it ended, read atomically.
  An ended generation whose retention passed (its end entry expired) reads as absent, like
  the memory bus; its sequence state stays (late duplicates, reuse with seqno 1).

  KEYS[1] seq hash   KEYS[2] key base <prefix>:req:{t:r} (the end key is derived from it)

  Returns {} (no generation, or expired) | {generation, ended (0|1)}
]]
local latest = tonumber(redis.call('HGET', KEYS[1], 'latest') or '0')
if latest == 0 then return {} end
if redis.call('HGET', KEYS[1], 'ended') == '1' then
  if redis.call('EXISTS', KEYS[2] .. ':g' .. latest .. ':end') == 0 then return {} end
  return { latest, 1 }
end
return { latest, 0 }
