--[[
  release-dead-workers: frees the runs of workers whose process is gone, without waiting for
  their BullMQ job locks to expire (docs/distributed.md "Takeover").

  Every worker process holds a sharded subscription to its presence channel
  <queue key prefix>presence:<worker name> on a connection of its own; when the process dies
  (kill -9, OOM) the kernel closes that connection and Redis drops the subscription at once.
  A registered worker with no subscriber is therefore dead (or cut off from Redis, which costs
  a fenced, lossless re-run). For each such worker this script, atomically:
    1. removes it from the registry;
    2. for every active job whose processedBy (job hash field `pb`) is that worker, deletes the
       job's lock and marks the job stalled, so BullMQ's next stalled check (every
       stalledInterval) moves it back to wait exactly as after a lock expiry (its stall counter
       and maxStalledCount apply as usual).
  It also (re-)registers the caller while its own subscription is live, so a worker that was
  reconnecting when another one checked registers itself again; its own subscription is only
  looked up when it is not registered. Commands of a check that finds nobody dead: SMEMBERS and
  one PUBSUB SHARDNUMSUB per other registered worker (one worker alone: SMEMBERS only).

  KEYS[1] registry set         <queue key prefix>byok-workers
  KEYS[2] active list          <queue key prefix>active
  KEYS[3] stalled set          <queue key prefix>stalled
  ARGV[1] queue key prefix     e.g. {byok}:runs:
  ARGV[2] the caller's worker name

  Returns the ids of the jobs released.
]]
local registry, activeKey, stalledKey = KEYS[1], KEYS[2], KEYS[3]
local prefix, self = ARGV[1], ARGV[2]
local function live(name)
  local r = redis.call('PUBSUB', 'SHARDNUMSUB', prefix .. 'presence:' .. name)
  return tonumber(r[2]) > 0
end

local registered = false
local dead = {}
local any = false
for _, name in ipairs(redis.call('SMEMBERS', registry)) do
  if name == self then
    registered = true
  elseif not live(name) then
    dead[name] = true
    any = true
    redis.call('SREM', registry, name)
  end
end
if not registered and live(self) then redis.call('SADD', registry, self) end
if not any then return {} end

local released = {}
for _, jobId in ipairs(redis.call('LRANGE', activeKey, 0, -1)) do
  local owner = redis.call('HGET', prefix .. jobId, 'pb')
  if owner and dead[owner] then
    redis.call('DEL', prefix .. jobId .. ':lock')
    redis.call('SADD', stalledKey, jobId)
    table.insert(released, jobId)
  end
end
return released
