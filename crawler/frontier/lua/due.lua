-- ARGV[3] now: queue again every URL whose retry time has come; returns how many
local due = redis.call('ZRANGEBYSCORE', P .. 'waiting', '-inf', ARGV[3])
for _, fp in ipairs(due) do
  local r = P .. 'retry:' .. fp
  local host = redis.call('HGET', r, 'host')
  redis.call('RPUSH', P .. 'q:' .. host .. ':' .. redis.call('HGET', r, 'level'),
             cjson.encode({fp, redis.call('HGET', r, 'request')}))
  redis.call('HINCRBY', P .. 'counters', 'queued', 1)
  redis.call('DEL', r)
  redis.call('ZREM', P .. 'waiting', fp)
  schedule(host)
end
return #due
