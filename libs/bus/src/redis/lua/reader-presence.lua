--[[
  reader-presence: live readers of a request (members whose expiry is after now) and when the
  last one left. A reader of a dead replica that simply expired counts as having left at its
  expiry, so the reconnect grace also runs out for it.

  KEYS[1] readers zset   KEYS[2] left

  Commands: TIME, ZCOUNT while a reader is live; + GET left, ZREVRANGEBYSCORE when none is.

  Returns {readers, lastLeftAt (ms as a decimal string, "" when unknown or while readers > 0)}
]]
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local live = redis.call('ZCOUNT', KEYS[1], '(' .. string.format('%.0f', now), '+inf')
-- lastLeftAt only means something while nobody reads (the reconnect grace): not read otherwise.
if live > 0 then return { live, '' } end
local left = tonumber(redis.call('GET', KEYS[2]) or '0')
local last = redis.call('ZREVRANGEBYSCORE', KEYS[1], string.format('%.0f', now), '-inf', 'WITHSCORES', 'LIMIT', 0, 1)
if last[2] and tonumber(last[2]) > left then left = tonumber(last[2]) end
if left == 0 then return { live, '' } end
return { live, string.format('%.0f', left) }
