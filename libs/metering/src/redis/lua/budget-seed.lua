-- Create a monthly budget counter from ledger totals, unless it exists (another replica won).
-- KEYS[1] counter hash   ARGV[1] cost  ARGV[2] tokens  ARGV[3] expire-at (unix ms)
-- Reply: 1 if seeded, 0 if it already existed (left untouched).
if redis.call("EXISTS", KEYS[1]) == 1 then return 0 end
redis.call("HSET", KEYS[1], "cost", ARGV[1], "tokens", ARGV[2])
redis.call("PEXPIREAT", KEYS[1], ARGV[3])
return 1
