-- Create a monthly budget counter from ledger totals, unless it exists (another replica won).
-- KEYS[1] counter hash  KEYS[2] the scope's live leases (zset "<id>:<cost>:<tokens>" → expiry ms)
-- ARGV[1] cost  ARGV[2] tokens  ARGV[3] expire-at (unix ms)
-- The ledger holds settled attempts only, so the live leases (still unsettled) are added on top:
-- their settle or expiry takes them out again.
-- Reply: 1 if seeded, 0 if it already existed (left untouched).
if redis.call("EXISTS", KEYS[1]) == 1 then return 0 end
local cost = tonumber(ARGV[1])
local tokens = tonumber(ARGV[2])
for _, m in ipairs(redis.call("ZRANGE", KEYS[2], 0, -1)) do
  local _, _, c, k = string.find(m, "^[^:]+:(%-?%d+):(%-?%d+)$")
  cost = cost + tonumber(c)
  tokens = tokens + tonumber(k)
end
redis.call("HSET", KEYS[1], "cost", cost, "tokens", tokens)
redis.call("PEXPIREAT", KEYS[1], ARGV[3])
return 1
