-- Settle a lease with the attempt's actual usage, at most once.
-- KEYS[1..3] tenant counter, live leases, expired leases   KEYS[4..6] the same of the user
-- (ignored unless hasUser = 1)
-- ARGV[1] hasUser (0|1)  ARGV[2] lease member "<id>:<cost>:<tokens>"  ARGV[3] actual cost  ARGV[4] actual tokens
-- Per scope: a live lease leaves the live set and the counter gets actual − reserved; an expired
-- one (its reservation was already released) leaves the expired set and the counter gets the full
-- actual; a lease in neither set was settled before (or is unknown here): nothing changes. A
-- missing counter is skipped: it will be rebuilt from the ledger, which already holds the attempt.
-- Commands per scope: ZREM (one more when the lease was not live), then HMGET + HSET of the counter.
-- Reply: the tenant scope's state before: "live", "expired" or "settled".
local _, _, rc, rk = string.find(ARGV[2], "^[^:]+:(%-?%d+):(%-?%d+)$")
local scopes = { { KEYS[1], KEYS[2], KEYS[3] } }
if ARGV[1] == "1" then scopes[2] = { KEYS[4], KEYS[5], KEYS[6] } end
local first
for i, s in ipairs(scopes) do
  local dc, dk, state = 0, 0, "settled"
  if redis.call("ZREM", s[2], ARGV[2]) == 1 then
    dc, dk, state = tonumber(ARGV[3]) - tonumber(rc), tonumber(ARGV[4]) - tonumber(rk), "live"
  elseif redis.call("ZREM", s[3], ARGV[2]) == 1 then
    dc, dk, state = tonumber(ARGV[3]), tonumber(ARGV[4]), "expired"
  end
  if state ~= "settled" then
    -- One read and one write (the counter always holds both fields; none = missing).
    local v = redis.call("HMGET", s[1], "cost", "tokens")
    if v[1] or v[2] then
      redis.call("HSET", s[1], "cost", string.format("%.0f", tonumber(v[1] or "0") + dc),
        "tokens", string.format("%.0f", tonumber(v[2] or "0") + dk))
    end
  end
  if i == 1 then first = state end
end
return first
