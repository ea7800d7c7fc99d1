-- ARGV[3..] groups of (fp, token, next_allowed, backoff, last_gap, 'fetched' or 'failed',
-- backoff, last_gap, crawl_delay the policy read): the policy's verdict on each fetch that
-- ended, written and its host released, if the group's times are still those the policy
-- read ('' for each: no check). Returns 1, 0 (a stale token) or 2 (times changed since they
-- were read: nothing written, read them and decide again) for each. A fetch answered ends
-- its host's run of unanswered ones.
local out = {}
for i = 3, #ARGV, 9 do
  local l = P .. 'lease:' .. ARGV[i]
  local token, fetching, host = unpack(redis.call('HMGET', l, 'token', 'fetching', 'host'))
  if token ~= ARGV[i + 1] or fetching ~= '1' then
    out[#out + 1] = 0
  else
    local group = redis.call('HGET', P .. 'host:' .. host, 'group')
    local g = P .. 'group:' .. group
    local held = true
    if ARGV[i + 6] ~= '' then
      local backoff, last_gap, delay = unpack(redis.call('HMGET', g, 'backoff', 'last_gap', 'crawl_delay'))
      held = (backoff or '0') == ARGV[i + 6] and (last_gap or '0') == ARGV[i + 7]
        and (delay or '0') == ARGV[i + 8]
    end
    if not held then
      out[#out + 1] = 2
    else
      redis.call('HSET', l, 'fetching', 0)
      redis.call('HINCRBY', P .. 'counters', ARGV[i + 5], 1)
      if ARGV[i + 5] == 'fetched' then redis.call('HDEL', P .. 'unanswered', host) end
      redis.call('HSET', g, 'next_allowed', ARGV[i + 2], 'backoff', ARGV[i + 3], 'last_gap', ARGV[i + 4])
      release(group, ARGV[i + 2])
      out[#out + 1] = 1
    end
  end
end
return out
