-- ARGV[3] host, ARGV[4] politeness key, ARGV[5] 'defer' until / 'delay' crawl delay / 'key'
local host, value, what = ARGV[3], ARGV[4], ARGV[5]
local h = ensure_host(host, '0')
local group = redis.call('HGET', h, 'group')
if what == 'key' then
  -- a host keeps the first key it is given; a fetch in flight moves with it
  if group ~= value and group == host then
    redis.call('SREM', P .. 'members:' .. group, host)
    redis.call('HSET', h, 'group', value)
    local old, g = P .. 'host:' .. group, P .. 'host:' .. value
    if redis.call('HEXISTS', g, 'next_allowed') == 0 then
      redis.call('HSET', g, 'next_allowed', redis.call('HGET', old, 'next_allowed') or 0)
    end
    join(value, host)
    local busy = tonumber(redis.call('HGET', old, 'busy') or '0')
    if busy > 0 then
      redis.call('HDEL', old, 'busy')
      redis.call('HINCRBY', g, 'busy', busy)
    end
  end
  redis.call('HSET', h, 'held', '0')
elseif what == 'defer' then
  local g = P .. 'host:' .. group
  local now_allowed = tonumber(redis.call('HGET', g, 'next_allowed') or '0')
  if tonumber(value) > now_allowed then redis.call('HSET', g, 'next_allowed', value) end
else
  redis.call('HSET', P .. 'host:' .. group, 'crawl_delay', value)
end
unready(host)
schedule(host)
return 1
