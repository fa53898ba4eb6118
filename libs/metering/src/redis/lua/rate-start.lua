-- Admit a run start against per-minute limits of a tenant and (optionally) an API key.
-- KEYS[1] tenant window hash {starts, tokens}  KEYS[2] key window hash (ignored unless hasKey = 1)
-- ARGV[1] hasKey (0|1)  ARGV[2] tenant starts limit  ARGV[3] tenant tokens limit
-- ARGV[4] key starts limit  ARGV[5] key tokens limit  (-1 = none)  ARGV[6] window ttl ms
-- Steps: for tenant then key: HMGET starts tokens; if starts >= limit → {"refused", scope,
--        "run_starts", limit}; if tokens >= limit → {"refused", scope, "tokens", limit}; nothing
--        changed. Otherwise HINCRBY starts 1 on each, reply {"ok"}.
-- TTL: a window's TTL is set once, by the script that creates its hash (this one or rate-tokens):
-- a window hash holds no other fields, so both read as absent exactly when it does not exist. Per
-- scope: HMGET + HINCRBY (+ PEXPIRE when created).
local scopes = { { KEYS[1], "tenant", tonumber(ARGV[2]), tonumber(ARGV[3]) } }
if ARGV[1] == "1" then scopes[2] = { KEYS[2], "key", tonumber(ARGV[4]), tonumber(ARGV[5]) } end
for _, s in ipairs(scopes) do
  local v = redis.call("HMGET", s[1], "starts", "tokens")
  s.created = not v[1] and not v[2]
  local starts = tonumber(v[1] or "0")
  local tokens = tonumber(v[2] or "0")
  if s[3] >= 0 and starts >= s[3] then return { "refused", s[2], "run_starts", tostring(s[3]) } end
  if s[4] >= 0 and tokens >= s[4] then return { "refused", s[2], "tokens", tostring(s[4]) } end
end
for _, s in ipairs(scopes) do
  redis.call("HINCRBY", s[1], "starts", 1)
  if s.created then redis.call("PEXPIRE", s[1], ARGV[6]) end
end
return { "ok" }
