-- Admit a run start against per-minute limits of a tenant and (optionally) an API key.
-- KEYS[1] tenant window hash {starts, tokens}  KEYS[2] key window hash (ignored unless hasKey = 1)
-- ARGV[1] hasKey (0|1)  ARGV[2] tenant starts limit  ARGV[3] tenant tokens limit
-- ARGV[4] key starts limit  ARGV[5] key tokens limit  (-1 = none)  ARGV[6] window ttl ms
-- Steps: for tenant then key: if starts >= limit → {"refused", scope, "run_starts", limit};
--        if tokens >= limit → {"refused", scope, "tokens", limit}; nothing changed.
--        Otherwise HINCRBY starts 1 on each, set the TTL, reply {"ok"}.
local scopes = { { KEYS[1], "tenant", tonumber(ARGV[2]), tonumber(ARGV[3]) } }
if ARGV[1] == "1" then scopes[2] = { KEYS[2], "key", tonumber(ARGV[4]), tonumber(ARGV[5]) } end
for _, s in ipairs(scopes) do
  local starts = tonumber(redis.call("HGET", s[1], "starts") or "0")
  local tokens = tonumber(redis.call("HGET", s[1], "tokens") or "0")
  if s[3] >= 0 and starts >= s[3] then return { "refused", s[2], "run_starts", tostring(s[3]) } end
  if s[4] >= 0 and tokens >= s[4] then return { "refused", s[2], "tokens", tostring(s[4]) } end
end
for _, s in ipairs(scopes) do
  redis.call("HINCRBY", s[1], "starts", 1)
  redis.call("PEXPIRE", s[1], ARGV[6])
end
return { "ok" }
