-- ARGV[3] now, ARGV[4] this worker's id, ARGV[5] worker timeout, ARGV[6] the age of its
-- own last beat past which it judges none at this beat, ARGV[7] how long it judges none
-- after its own beats stopped for longer than the timeout (a stall of Redis held every
-- worker's beats: the others' first beats since must come in first). Beat, and end the
-- leases of every worker silent for longer than the timeout (the reap that follows queues
-- their URLs again). Returns {worker id, its leases, seconds silent} for each worker found dead.
local now = tonumber(ARGV[3])
local mine = redis.call('ZSCORE', P .. 'workers', ARGV[4])
redis.call('ZADD', P .. 'workers', now, ARGV[4])
if mine then
  local silent = now - tonumber(mine)
  if silent > tonumber(ARGV[5]) then
    redis.call('HSET', P .. 'quiet', ARGV[4], now + tonumber(ARGV[7]))
    return {}
  end
  if silent > tonumber(ARGV[6]) then return {} end
end
local quiet = redis.call('HGET', P .. 'quiet', ARGV[4])
if quiet then
  if now < tonumber(quiet) then return {} end
  redis.call('HDEL', P .. 'quiet', ARGV[4])
end
local dead = redis.call('ZRANGEBYSCORE', P .. 'workers', '-inf', now - tonumber(ARGV[5]), 'WITHSCORES')
local found = {}
for i = 1, #dead, 2 do
  local worker, beat = dead[i], tonumber(dead[i + 1])
  found[#found + 1] = {worker, end_worker(worker), tostring(now - beat)}
end
if #found > 0 then redis.call('HINCRBY', P .. 'counters', 'workers/lost', #found) end
return found
