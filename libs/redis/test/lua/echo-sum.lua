-- Test script: adds ARGV[1] and every rest value to the integer at KEYS[1]; replies {total, ARGV[2]}.
-- KEYS[1] counter   ARGV[1] amount  ARGV[2] label  ARGV[3..] further amounts
local total = redis.call("INCRBY", KEYS[1], ARGV[1])
for i = 3, #ARGV do total = redis.call("INCRBY", KEYS[1], ARGV[i]) end
return { total, ARGV[2] }
