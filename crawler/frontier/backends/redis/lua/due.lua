-- ARGV[3] now, ARGV[4] the sorted set of parked URLs ('waiting' for retries, 'revisits'),
-- ARGV[5] at most this many: queue again every URL of it whose time has come; how many
local set = P .. ARGV[4]
local due = redis.call('ZRANGEBYSCORE', set, '-inf', ARGV[3], 'LIMIT', 0, tonumber(ARGV[5]))
for _, fp in ipairs(due) do
  local r = P .. 'retry:' .. fp
  local host, level, request = unpack(redis.call('HMGET', r, 'host', 'level', 'request'))
  enqueue(host, level, fp, request)
  redis.call('DEL', r)
  redis.call('ZREM', set, fp)
  redis.call('SREM', P .. 'hwait:' .. host, fp)
  schedule(host)
end
return #due
