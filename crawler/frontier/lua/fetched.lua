-- ARGV[3] fp, ARGV[4] token, ARGV[5] next_allowed, ARGV[6] backoff, ARGV[7] last_gap,
-- ARGV[8] 'fetched' or 'failed' (no response)
local l = P .. 'lease:' .. ARGV[3]
if redis.call('HGET', l, 'token') ~= ARGV[4] or redis.call('HGET', l, 'fetching') ~= '1' then return 0 end
redis.call('HSET', l, 'fetching', 0)
redis.call('HINCRBY', P .. 'counters', ARGV[8], 1)
local group = redis.call('HGET', P .. 'host:' .. redis.call('HGET', l, 'host'), 'group')
redis.call('HSET', P .. 'group:' .. group, 'next_allowed', ARGV[5], 'backoff', ARGV[6], 'last_gap', ARGV[7])
release(group)
return 1
