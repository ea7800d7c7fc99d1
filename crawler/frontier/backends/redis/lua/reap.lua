-- ARGV[3] now: requeue every expired lease; returns how many
local expired = redis.call('ZRANGEBYSCORE', P .. 'leases', '-inf', ARGV[3])
for _, fp in ipairs(expired) do
  local l = P .. 'lease:' .. fp
  local host, level = redis.call('HGET', l, 'host'), redis.call('HGET', l, 'level')
  enqueue(host, level, fp, redis.call('HGET', l, 'request'))
  local fetching = redis.call('HGET', l, 'fetching')
  redis.call('SREM', P .. 'worker:' .. (redis.call('HGET', l, 'worker') or ''), fp)
  redis.call('DEL', l)
  redis.call('ZREM', P .. 'leases', fp)
  local group = redis.call('HGET', P .. 'host:' .. host, 'group')
  if fetching == '1' then
    release(group, host)
  else
    schedule(host)
  end
end
if #expired > 0 then redis.call('HINCRBY', P .. 'counters', 'leases/expired', #expired) end
return #expired
