-- ARGV[3] held flag for new hosts; then (seen key, seen args, fp, host, level, request) x n
local added = {}
local held = ARGV[3]
for i = 4, #ARGV, 6 do
  local fp, host, level, request = ARGV[i + 2], ARGV[i + 3], ARGV[i + 4], ARGV[i + 5]
  local h = ensure_host(host, held)
  local own = redis.call('HGET', h, 'budget')  -- a demoted host: its own budget, the lowest level
  local budget = tonumber(own or ARGV[2])
  if own then level = tonumber(ARGV[1]) - 1 end
  local new = SEEN_CHECK
  if new then redis.call('HINCRBY', P .. 'counters', 'seen', 1) end
  if new and budget > 0 and tonumber(redis.call('HGET', h, 'fetched')) >= budget then
    redis.call('HINCRBY', P .. 'counters', 'dropped/budget', 1)
    new = false
  elseif not new then
    redis.call('HINCRBY', P .. 'counters', 'dropped/seen', 1)
  end
  if new then
    redis.call('RPUSH', P .. 'q:' .. host .. ':' .. level, cjson.encode({fp, request}))
    redis.call('HINCRBY', P .. 'counters', 'queued', 1)
    schedule(host)
  end
  added[#added + 1] = new and 1 or 0
end
return added
