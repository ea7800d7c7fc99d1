-- ARGV[3] host, ARGV[4] its own budget. Its queued URLs go to the lowest level, in order;
-- returns how many moved.
local host = ARGV[3]
local h = ensure_host(host, '0')
redis.call('HSET', h, 'budget', ARGV[4])
local top = P .. 'q:' .. host .. ':' .. (tonumber(ARGV[1]) - 1)
local moved = 0
local lowest = redis.call('LRANGE', top, 0, -1)
for level = 0, tonumber(ARGV[1]) - 2 do
  local q = P .. 'q:' .. host .. ':' .. level
  local entries = redis.call('LRANGE', q, 0, -1)
  if #entries > 0 then
    redis.call('DEL', q)
    moved = moved + #entries
    for _, e in ipairs(entries) do lowest[#lowest + 1] = e end
  end
end
if moved > 0 then
  redis.call('DEL', top)
  for i = 1, #lowest, 1000 do redis.call('RPUSH', top, unpack(lowest, i, math.min(i + 999, #lowest))) end
end
redis.call('ZREM', P .. 'ready', host)
schedule(host)
return moved
