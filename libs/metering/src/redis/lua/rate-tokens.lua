-- Add used tokens to the current minute window of a tenant and (optionally) an API key.
-- KEYS[1] tenant window hash  KEYS[2] key window hash (ignored unless hasKey = 1)
-- ARGV[1] hasKey (0|1)  ARGV[2] tokens  ARGV[3] window ttl ms
-- Reply: the tenant window's token total.
redis.call("HINCRBY", KEYS[1], "tokens", ARGV[2])
redis.call("PEXPIRE", KEYS[1], ARGV[3])
if ARGV[1] == "1" then
  redis.call("HINCRBY", KEYS[2], "tokens", ARGV[2])
  redis.call("PEXPIRE", KEYS[2], ARGV[3])
end
return tonumber(redis.call("HGET", KEYS[1], "tokens"))
