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
-- Steps: 1) read every scope's counter (HMGET cost tokens): a missing counter → reply {"missing",
--        "tenant"|"user"} (caller seeds it from the ledger and retries; nothing changed). 2) per scope,
--        leases past their expiry (Redis time) are released: their amounts leave the counter and they
--        move to the expired set (a late settle then adds the full actual usage); expired entries
--        older than ARGV[12] are forgotten. 3) for tenant then user: cost (if charged) then tokens: if
--        used + estimate > limit, reply {"refused", scope, kind, limit, used}; no reservation is made
--        (released leases stay released). 4) add the estimate to every counter, add the lease (expiry
--        = now + ttl) to every live set, reply {"ok", expiresAtMs}.
-- Commands (docs/benchmarks.md counts those inside scripts): per scope HMGET, ZRANGEBYSCORE,
-- ZREMRANGEBYSCORE (expired set), one HSET of both counter fields (computed here from the HMGET: the
-- script is atomic, so this equals HINCRBY), ZADD, PEXPIREAT of the live set (it is recreated
-- without a TTL whenever its last lease was removed); plus TIME. Releasing leases adds a ZADD per
-- lease, one ZREMRANGEBYSCORE and a PEXPIREAT of the expired set, the only writer of that set.
local hasUser = ARGV[1] == "1"
local charge = ARGV[2] == "1"
local cost = tonumber(ARGV[3])
local tokens = tonumber(ARGV[4])
local t = redis.call("TIME")
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local scopes = { { KEYS[1], KEYS[2], KEYS[3], "tenant", tonumber(ARGV[5]), tonumber(ARGV[6]) } }
if hasUser then scopes[2] = { KEYS[4], KEYS[5], KEYS[6], "user", tonumber(ARGV[7]), tonumber(ARGV[8]) } end
local function fmt(n)
  return string.format("%.0f", n)
end

-- s.used = { cost, tokens } as stored; s.dirty once a released lease changed them.
for _, s in ipairs(scopes) do
  local v = redis.call("HMGET", s[1], "cost", "tokens")
  -- The counter always holds both fields (budget-seed writes them together).
  if not v[1] and not v[2] then return { "missing", s[4] } end
  s.cost, s.tokens = tonumber(v[1] or "0"), tonumber(v[2] or "0")
end
for _, s in ipairs(scopes) do
  local gone = redis.call("ZRANGEBYSCORE", s[2], "-inf", now)
  for _, m in ipairs(gone) do
    local _, _, c, k = string.find(m, "^[^:]+:(%-?%d+):(%-?%d+)$")
    s.cost = s.cost - tonumber(c)
    s.tokens = s.tokens - tonumber(k)
    redis.call("ZADD", s[3], now, m)
  end
  if #gone > 0 then
    s.dirty = true
    redis.call("ZREMRANGEBYSCORE", s[2], "-inf", now)
    redis.call("PEXPIREAT", s[3], ARGV[11])
  end
  redis.call("ZREMRANGEBYSCORE", s[3], "-inf", now - tonumber(ARGV[12]))
end
local function refuse(scope, kind, limit, used)
  for _, s in ipairs(scopes) do
    if s.dirty then redis.call("HSET", s[1], "cost", fmt(s.cost), "tokens", fmt(s.tokens)) end
  end
  return { "refused", scope, kind, fmt(limit), fmt(used) }
end
for _, s in ipairs(scopes) do
  if charge and s[5] >= 0 and s.cost + cost > s[5] then return refuse(s[4], "cost", s[5], s.cost) end
  if s[6] >= 0 and s.tokens + tokens > s[6] then return refuse(s[4], "tokens", s[6], s.tokens) end
end
local expiresAt = now + tonumber(ARGV[10])
for _, s in ipairs(scopes) do
  if charge then s.cost = s.cost + cost end
  redis.call("HSET", s[1], "cost", fmt(s.cost), "tokens", fmt(s.tokens + tokens))
  redis.call("ZADD", s[2], expiresAt, ARGV[9])
  redis.call("PEXPIREAT", s[2], ARGV[11])
end
return { "ok", tostring(expiresAt) }
