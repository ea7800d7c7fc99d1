-- ARGV[3] host, ARGV[4] error, ARGV[5] now: every queued URL of the host, and every one
-- waiting for its retry, becomes a dead letter with that error; how many
local host = ARGV[3]
local h = P .. 'host:' .. host
local dead = 0
local hw = P .. 'hwait:' .. host
local waited = 0
for _, fp in ipairs(redis.call('SMEMBERS', hw)) do
  local r = P .. 'retry:' .. fp
  local level, request = unpack(redis.call('HMGET', r, 'level', 'request'))
  if redis.call('ZREM', P .. 'waiting', fp) == 1 then
    bury(fp, host, level, request, ARGV[4], ARGV[5])
    redis.call('DEL', r)
    waited = waited + 1
  end
end
redis.call('DEL', hw)
for level = 0, LEVELS - 1 do
  local q = P .. 'q:' .. host .. ':' .. level
  for _, item in ipairs(redis.call('LRANGE', q, 0, -1)) do
    local fp, request = entry(item)
    bury(fp, host, level, request, ARGV[4], ARGV[5])
    dead = dead + 1
  end
  redis.call('DEL', q)
  redis.call('HDEL', h, 'n' .. level)
end
if dead > 0 then
  redis.call('HINCRBY', P .. 'counters', 'queued', -dead)
  unready(host)
end
if dead + waited > 0 then redis.call('HINCRBY', P .. 'counters', 'dead_letters', dead + waited) end
return dead + waited
