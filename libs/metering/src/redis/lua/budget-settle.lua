-- Replace a reservation with actual usage: add the deltas to each counter that still exists.
-- KEYS[1] tenant counter  KEYS[2] user counter (ignored unless hasUser = 1)
-- ARGV[1] hasUser (0|1)  ARGV[2] cost delta  ARGV[3] token delta
-- A missing counter is skipped: it will be rebuilt from the ledger, which already holds the attempt.
-- Reply: number of counters updated.
local n = 0
local keys = { KEYS[1] }
if ARGV[1] == "1" then keys[2] = KEYS[2] end
for _, k in ipairs(keys) do
  if redis.call("EXISTS", k) == 1 then
    redis.call("HINCRBY", k, "cost", ARGV[2])
    redis.call("HINCRBY", k, "tokens", ARGV[3])
    n = n + 1
  end
end
return n
