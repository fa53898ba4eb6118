-- Atomically reserve an estimate against a tenant's (and optionally a user's) monthly budget, as
-- an expiring lease.
-- KEYS[1] tenant counter hash {cost, tokens}  KEYS[2] tenant live leases (zset member → expiry ms)
-- KEYS[3] tenant expired leases (zset member → expired at ms)
-- KEYS[4..6] the same three of the user (ignored unless hasUser = 1)
-- ARGV[1] hasUser (0|1)  ARGV[2] chargeCost (0|1)  ARGV[3] cost  ARGV[4] tokens
-- ARGV[5] tenant cost limit  ARGV[6] tenant token limit  ARGV[7] user cost limit  ARGV[8] user token limit
--         (limits: -1 = none)
-- ARGV[9] lease member "<id>:<cost>:<tokens>"  ARGV[10] lease ttl ms  ARGV[11] keys' expire-at (unix ms)
-- ARGV[12] how long an expired lease can still be settled (ms)
-- Steps: 1) a missing counter → reply {"missing", "tenant"|"user"} (caller seeds it from the ledger and
--        retries; nothing changed). 2) per scope, leases past their expiry (Redis time) are released:
--        their amounts leave the counter and they move to the expired set (a late settle then adds the
--        full actual usage); expired entries older than ARGV[12] are forgotten. 3) for tenant then user:
--        cost (if charged) then tokens: if used + estimate > limit, reply {"refused", scope, kind, limit,
--        used}; no reservation is made. 4) add the estimate to every counter, add the lease (expiry =
--        now + ttl) to every live set, reply {"ok", expiresAtMs}.
local hasUser = ARGV[1] == "1"
local charge = ARGV[2] == "1"
local cost = tonumber(ARGV[3])
local tokens = tonumber(ARGV[4])
local t = redis.call("TIME")
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local scopes = { { KEYS[1], KEYS[2], KEYS[3], "tenant", tonumber(ARGV[5]), tonumber(ARGV[6]) } }
if hasUser then scopes[2] = { KEYS[4], KEYS[5], KEYS[6], "user", tonumber(ARGV[7]), tonumber(ARGV[8]) } end

for _, s in ipairs(scopes) do
  if redis.call("EXISTS", s[1]) == 0 then return { "missing", s[4] } end
end
for _, s in ipairs(scopes) do
  local gone = redis.call("ZRANGEBYSCORE", s[2], "-inf", now)
  for _, m in ipairs(gone) do
    local _, _, c, k = string.find(m, "^[^:]+:(%-?%d+):(%-?%d+)$")
    redis.call("HINCRBY", s[1], "cost", -tonumber(c))
    redis.call("HINCRBY", s[1], "tokens", -tonumber(k))
    redis.call("ZADD", s[3], now, m)
  end
  if #gone > 0 then redis.call("ZREMRANGEBYSCORE", s[2], "-inf", now) end
  redis.call("ZREMRANGEBYSCORE", s[3], "-inf", now - tonumber(ARGV[12]))
end
for _, s in ipairs(scopes) do
  local usedCost = tonumber(redis.call("HGET", s[1], "cost") or "0")
  local usedTokens = tonumber(redis.call("HGET", s[1], "tokens") or "0")
  if charge and s[5] >= 0 and usedCost + cost > s[5] then
    return { "refused", s[4], "cost", tostring(s[5]), tostring(usedCost) }
  end
  if s[6] >= 0 and usedTokens + tokens > s[6] then
    return { "refused", s[4], "tokens", tostring(s[6]), tostring(usedTokens) }
  end
end
local expiresAt = now + tonumber(ARGV[10])
for _, s in ipairs(scopes) do
  if charge then redis.call("HINCRBY", s[1], "cost", cost) end
  redis.call("HINCRBY", s[1], "tokens", tokens)
  redis.call("ZADD", s[2], expiresAt, ARGV[9])
  redis.call("PEXPIREAT", s[2], ARGV[11])
  redis.call("PEXPIREAT", s[3], ARGV[11])
end
return { "ok", tostring(expiresAt) }
