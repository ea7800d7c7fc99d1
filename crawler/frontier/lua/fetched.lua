-- ARGV[3..] groups of (fp, token, next_allowed, backoff, last_gap, 'fetched' or 'failed'):
-- the policy's verdict on each fetch that ended, written and its host released; a fetch
-- answered ends its host's run of unanswered ones.
-- Returns 1 or 0 (a stale token) for each.
local out = {}
for i = 3, #ARGV, 6 do
  local l = P .. 'lease:' .. ARGV[i]
  local token, fetching, host = unpack(redis.call('HMGET', l, 'token', 'fetching', 'host'))
  if token ~= ARGV[i + 1] or fetching ~= '1' then
    out[#out + 1] = 0
  else
    redis.call('HSET', l, 'fetching', 0)
    redis.call('HINCRBY', P .. 'counters', ARGV[i + 5], 1)
    if ARGV[i + 5] == 'fetched' then redis.call('HDEL', P .. 'unanswered', host) end
    local group = redis.call('HGET', P .. 'host:' .. host, 'group')
    redis.call('HSET', P .. 'group:' .. group, 'next_allowed', ARGV[i + 2], 'backoff', ARGV[i + 3],
               'last_gap', ARGV[i + 4])
    release(group)
    out[#out + 1] = 1
  end
end
return out
