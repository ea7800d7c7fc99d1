-- ARGV[3] host, ARGV[4] politeness key, ARGV[5] 'defer' until / 'delay' crawl delay / 'key'
local host, value, what = ARGV[3], ARGV[4], ARGV[5]
local h = ensure_host(host, '0')
local group = redis.call('HGET', h, 'group')
if what == 'key' then
  if group ~= value then
    redis.call('SREM', P .. 'members:' .. group, host)
    redis.call('SADD', P .. 'members:' .. value, host)
    redis.call('HSET', h, 'group', value)
    local g = P .. 'group:' .. value
    if redis.call('EXISTS', g) == 0 then
      redis.call('HSET', g, 'next_allowed', redis.call('HGET', P .. 'group:' .. group, 'next_allowed') or 0)
    end
  end
  redis.call('HSET', h, 'held', '0')
elseif what == 'defer' then
  local g = P .. 'group:' .. group
  local now_allowed = tonumber(redis.call('HGET', g, 'next_allowed') or '0')
  if tonumber(value) > now_allowed then redis.call('HSET', g, 'next_allowed', value) end
else
  redis.call('HSET', P .. 'group:' .. group, 'crawl_delay', value)
end
redis.call('ZREM', P .. 'ready', host)
schedule(host)
return 1
