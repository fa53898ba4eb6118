--[[
  reader-add: registers (or refreshes) a live RunSSE reader of a request, visible to every
  replica. The member's score is its expiry in Redis time (ms), so readers of a crashed
  replica stop counting once their TTL passes without a refresh. One clock (Redis TIME)
  for every replica: no skew between ingress hosts.

  Steps
    1. now = TIME (ms); ZADD readers readerId now+ttl.
    2. Keep the zset itself bounded: its TTL is at least ttl + linger (expired members linger
       that long so presence can still tell when a dead replica's reader left). PEXPIRE NX,
       then PEXPIRE GT only when the zset already had a TTL: TIME, ZADD, PEXPIRE for the first
       reader of a request, one more PEXPIRE for each refresh and later reader.

  KEYS[1] readers zset <prefix>:req:{t:r}:readers
  ARGV[1] readerId   ARGV[2] ttl (ms)   ARGV[3] linger (ms)

  Returns now (ms, decimal string)
]]
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local ttl = tonumber(ARGV[2])
redis.call('ZADD', KEYS[1], string.format('%.0f', now + ttl), ARGV[1])
local keyTtl = ttl + tonumber(ARGV[3])
-- NX sets the TTL of a zset that has none (just created); otherwise GT only ever lengthens it.
if redis.call('PEXPIRE', KEYS[1], keyTtl, 'NX') == 0 then
  redis.call('PEXPIRE', KEYS[1], keyTtl, 'GT')
end
return string.format('%.0f', now)
