-- ARGV[3] fp, ARGV[4] token, ARGV[5] what ends the lease other than an ack: '1' a requeue
-- of request ARGV[6]; '2' a retry of ARGV[6] at time ARGV[7]; '3' a dead letter of ARGV[6]
-- with error ARGV[7] at time ARGV[8]
local fp = ARGV[3]
local l = P .. 'lease:' .. fp
local token, host, fetching, level, worker = unpack(
  redis.call('HMGET', l, 'token', 'host', 'fetching', 'level', 'worker'))
if token ~= ARGV[4] then return 0 end
if ARGV[5] == '1' then
  enqueue(host, level, fp, ARGV[6])
elseif ARGV[5] == '2' then
  redis.call('ZADD', P .. 'waiting', tonumber(ARGV[7]), fp)
  redis.call('HSET', P .. 'retry:' .. fp, 'host', host, 'level', level, 'request', ARGV[6])
  redis.call('SADD', P .. 'hwait:' .. host, fp)  -- a host given up takes its retries along
elseif ARGV[5] == '3' then
  bury(fp, host, level, ARGV[6], ARGV[7], ARGV[8])
  redis.call('HINCRBY', P .. 'counters', 'dead_letters', 1)
end
end_lease(fp, l, host, fetching, worker)
if fetching ~= '1' and ARGV[5] == '1' then
  schedule(host)  -- its URL is queued again; after a fetch the release scheduled it already
end
return 1
