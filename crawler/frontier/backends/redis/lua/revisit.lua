-- ARGV[3..] (fp, token, request, due, fetched at) x n: each URL is done and its lease ends,
-- like an ack, but it is kept (request, host, level) to be queued again at its due time;
-- 1, or 0 for a stale token, each.
local out = {}
for i = 3, #ARGV, 5 do
  local fp = ARGV[i]
  local l = P .. 'lease:' .. fp
  local token, host, fetching, level, worker = unpack(
    redis.call('HMGET', l, 'token', 'host', 'fetching', 'level', 'worker'))
  if token ~= ARGV[i + 1] then
    out[#out + 1] = 0
  else
    redis.call('ZADD', P .. 'revisits', tonumber(ARGV[i + 3]), fp)
    redis.call('HSET', P .. 'retry:' .. fp, 'host', host, 'level', level, 'request', ARGV[i + 2],
               'fetched', ARGV[i + 4])
    end_lease(fp, l, host, fetching, worker)
    out[#out + 1] = 1
  end
end
return out
