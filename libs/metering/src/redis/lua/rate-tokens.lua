-- Add used tokens to the current minute window of a tenant and (optionally) an API key.
-- KEYS[1] tenant window hash  KEYS[2] key window hash (ignored unless hasKey = 1)
-- ARGV[1] hasKey (0|1)  ARGV[2] tokens  ARGV[3] window ttl ms
-- Per scope HINCRBY tokens; its reply is the new total, which equals ARGV[2] when the field was
-- absent (or 0): only then can the hash have been created here, and only then is its TTL set
-- (rate-start.lua: the script that creates a window sets its TTL, once).
-- Reply: the tenant window's token total.
local function add(key)
  local total = redis.call("HINCRBY", key, "tokens", ARGV[2])
  if total == tonumber(ARGV[2]) then redis.call("PEXPIRE", key, ARGV[3], "NX") end
  return total
end
local total = add(KEYS[1])
if ARGV[1] == "1" then add(KEYS[2]) end
return total
