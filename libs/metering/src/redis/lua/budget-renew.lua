-- Extend a live lease: its expiry becomes now (Redis time) + ttl in every scope.
-- KEYS[1] tenant live leases  KEYS[2] user live leases (ignored unless hasUser = 1)
-- ARGV[1] hasUser (0|1)  ARGV[2] lease member  ARGV[3] ttl ms
-- Reply: the new expiry (unix ms), or -1 when the lease is no longer live (expired or settled:
-- an expired reservation is not re-taken; its settle adds the full actual usage).
if not redis.call("ZSCORE", KEYS[1], ARGV[2]) then return -1 end
local t = redis.call("TIME")
local expiresAt = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) + tonumber(ARGV[3])
redis.call("ZADD", KEYS[1], "XX", expiresAt, ARGV[2])
if ARGV[1] == "1" then redis.call("ZADD", KEYS[2], "XX", expiresAt, ARGV[2]) end
return expiresAt
