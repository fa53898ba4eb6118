-- Atomically reserve an estimate against a tenant's (and optionally a user's) monthly budget.
-- KEYS[1] tenant counter hash {cost, tokens}   KEYS[2] user counter hash (ignored unless hasUser = 1)
-- ARGV[1] hasUser (0|1)  ARGV[2] chargeCost (0|1)  ARGV[3] cost  ARGV[4] tokens
-- ARGV[5] tenant cost limit  ARGV[6] tenant token limit  ARGV[7] user cost limit  ARGV[8] user token limit
--         (limits: -1 = none)
-- Steps: 1) a missing counter → reply {"missing", "tenant"|"user"} (caller seeds it from the ledger and retries;
--        nothing changed). 2) for tenant then user: cost (if charged) then tokens: if used + estimate > limit,
--        reply {"refused", scope, kind, limit, used}; nothing changed. 3) add the estimate to every counter, reply {"ok"}.
local hasUser = ARGV[1] == "1"
local charge = ARGV[2] == "1"
local cost = tonumber(ARGV[3])
local tokens = tonumber(ARGV[4])
local scopes = { { KEYS[1], "tenant", tonumber(ARGV[5]), tonumber(ARGV[6]) } }
if hasUser then scopes[2] = { KEYS[2], "user", tonumber(ARGV[7]), tonumber(ARGV[8]) } end

for _, s in ipairs(scopes) do
  if redis.call("EXISTS", s[1]) == 0 then return { "missing", s[2] } end
end
for _, s in ipairs(scopes) do
  local usedCost = tonumber(redis.call("HGET", s[1], "cost") or "0")
  local usedTokens = tonumber(redis.call("HGET", s[1], "tokens") or "0")
  if charge and s[3] >= 0 and usedCost + cost > s[3] then
    return { "refused", s[2], "cost", tostring(s[3]), tostring(usedCost) }
  end
  if s[4] >= 0 and usedTokens + tokens > s[4] then
    return { "refused", s[2], "tokens", tostring(s[4]), tostring(usedTokens) }
  end
end
for _, s in ipairs(scopes) do
  if charge then redis.call("HINCRBY", s[1], "cost", cost) end
  redis.call("HINCRBY", s[1], "tokens", tokens)
end
return { "ok" }
