--[[
  mark-conversation-run: names the conversation's current run (a newer run_request supersedes
  older live runs of its conversation, docs/protocol.md) and wakes the conversation's watchers,
  so a superseded run notices at once instead of polling.

  Steps
    1. SET the run key with the mark's TTL.
    2. SPUBLISH "c" on the conversation's wake channel.

  KEYS[1] run mark   <prefix>:conv:{t:c}:run
  ARGV[1] run key   ARGV[2] TTL (ms)   ARGV[3] wake channel <prefix>:wake:conv:{t:c}

  Returns 1
]]
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
redis.call('SPUBLISH', ARGV[3], 'c')
return 1
