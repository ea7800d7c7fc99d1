-- ARGV[3] held flag for new hosts; then (seen key, seen args, fp, host, level, request) x n
local added = {}
local held = ARGV[3]
for i = 4, #ARGV, 6 do
  local fp, host, level, request = ARGV[i + 2], ARGV[i + 3], ARGV[i + 4], ARGV[i + 5]
  local h = ensure_host(host, held)
  local left, pinned = unpack(redis.call('HMGET', h, 'left', 'level'))  -- pinned: a demoted host's level
  local new = seen_add(ARGV[i], ARGV[i + 1])  -- seen_exact.lua or seen_bloom.lua
  if new then redis.call('HINCRBY', P .. 'counters', 'seen', 1) end
  if new and spent(left) then
    redis.call('HINCRBY', P .. 'counters', 'dropped/budget', 1)
    new = false
  elseif not new then
    redis.call('HINCRBY', P .. 'counters', 'dropped/seen', 1)
  end
  if new then
    enqueue(host, pinned or level, fp, request)
    schedule(host)
  end
  added[#added + 1] = new and 1 or 0
end
return added
