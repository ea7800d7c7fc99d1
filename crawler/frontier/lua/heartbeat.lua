-- ARGV[3] now, ARGV[4] this worker's id, ARGV[5] worker timeout: beat, and end the leases
-- of every worker silent for longer (the reap that follows queues their URLs again).
-- Returns {worker id, its leases, seconds silent} for each worker found dead.
local now = tonumber(ARGV[3])
redis.call('ZADD', P .. 'workers', now, ARGV[4])
local dead = redis.call('ZRANGEBYSCORE', P .. 'workers', '-inf', now - tonumber(ARGV[5]), 'WITHSCORES')
local found = {}
for i = 1, #dead, 2 do
  local worker, beat = dead[i], tonumber(dead[i + 1])
  local w = P .. 'worker:' .. worker
  local fps = redis.call('SMEMBERS', w)
  for _, fp in ipairs(fps) do redis.call('ZADD', P .. 'leases', 'XX', 0, fp) end
  redis.call('DEL', w)
  redis.call('ZREM', P .. 'workers', worker)
  found[#found + 1] = {worker, #fps, tostring(now - beat)}
end
if #found > 0 then redis.call('HINCRBY', P .. 'counters', 'workers/lost', #found) end
return found
