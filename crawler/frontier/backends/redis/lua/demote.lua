-- ARGV[3] host, ARGV[4] its pages left (HostBudget.demoted_left), ARGV[5] the level its URLs
-- now all take (the lowest): its queued URLs move there, in order; returns how many moved.
local host, level = ARGV[3], ARGV[5]
local h = ensure_host(host, '0')
redis.call('HSET', h, 'left', ARGV[4], 'level', level)
local top = P .. 'q:' .. host .. ':' .. level
local moved = 0
local lowest = redis.call('LRANGE', top, 0, -1)
for l = 0, LEVELS - 1 do
  local q = P .. 'q:' .. host .. ':' .. l
  if tostring(l) ~= level then
    local entries = redis.call('LRANGE', q, 0, -1)
    if #entries > 0 then
      redis.call('DEL', q)
      redis.call('HDEL', h, 'n' .. l)
      moved = moved + #entries
      for _, e in ipairs(entries) do lowest[#lowest + 1] = e end
    end
  end
end
if moved > 0 then
  redis.call('DEL', top)
  for i = 1, #lowest, 1000 do redis.call('RPUSH', top, unpack(lowest, i, math.min(i + 999, #lowest))) end
  redis.call('HSET', h, 'n' .. level, #lowest)
end
unready(host)
schedule(host)
return moved
