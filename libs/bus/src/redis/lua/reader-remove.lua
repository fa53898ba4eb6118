--[[
  reader-remove: removes a live reader; when it was the last live one, records lastLeftAt
  (the reconnect grace starts from it). Atomic, so two readers leaving on two replicas at
  once still record exactly one "last left" moment.

  Steps
    1. now = TIME (ms); ZREM readerId; drop members that expired before now.
    2. If the reader was present and no live member remains: SET left now (PX linger) and
       SPUBLISH "r" on the wake channel (the run's owner starts its reconnect grace without
       polling).

  KEYS[1] readers zset   KEYS[2] left <prefix>:req:{t:r}:left
  ARGV[1] readerId   ARGV[2] linger (ms): TTL of the left key   ARGV[3] wake channel

  Returns 1 if this call made the request reader-less, else 0
]]
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local removed = redis.call('ZREM', KEYS[1], ARGV[1])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', '(' .. string.format('%.0f', now))
if removed == 1 and redis.call('ZCARD', KEYS[1]) == 0 then
  redis.call('SET', KEYS[2], string.format('%.0f', now), 'PX', ARGV[2])
  redis.call('SPUBLISH', ARGV[3], 'r')
  return 1
end
return 0
