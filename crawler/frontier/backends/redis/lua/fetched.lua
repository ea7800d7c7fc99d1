-- ARGV[3..] groups of (fp, token, next_allowed, backoff, last_gap, 'fetched' or 'failed',
-- the group's 'backoff last_gap crawl_delay' the policy read): the policy's verdict on each
-- fetch that ended, written and its host released, if the group's times are still those the
-- policy read ('': no check). Returns 1, 0 (a stale token) or 2 (times changed since they
-- were read: nothing written, read them and decide again) for each. A fetch answered ends
-- its host's run of unanswered ones (ua in its hash).
local out = {}
local counts = {fetched = 0, failed = 0}
-- one read of the host: what schedule reads (its key's times too), then its run of unanswered fetches
local fields, UA = {unpack(SCHEDULE_FIELDS)}, #SCHEDULE_FIELDS + 1
fields[UA] = 'ua'
for i = 3, #ARGV, 7 do
  local l = P .. 'lease:' .. ARGV[i]
  local token, fetching, host = unpack(redis.call('HMGET', l, 'token', 'fetching', 'host'))
  if token ~= ARGV[i + 1] or fetching ~= '1' then
    out[#out + 1] = 0
  else
    local h = P .. 'host:' .. host
    local stored = redis.call('HMGET', h, unpack(fields))
    local group, unanswered = stored[2], stored[UA]
    local g = P .. 'host:' .. group
    local _, busy, backoff, last_gap, delay, shared = key_times(host, group, stored, TIMES)
    local read = times_text(backoff, last_gap, delay)
    if ARGV[i + 6] ~= '' and read ~= ARGV[i + 6] then
      out[#out + 1] = 2
    else
      redis.call('HSET', l, 'fetching', 0)
      counts[ARGV[i + 5]] = counts[ARGV[i + 5]] + 1
      if unanswered and ARGV[i + 5] == 'fetched' then redis.call('HDEL', h, 'ua') end
      local times = {'next_allowed', ARGV[i + 2], 'backoff', ARGV[i + 3], 'last_gap', ARGV[i + 4]}
      if busy == '1' then times[7], times[8] = 'busy', 0 end  -- its only fetch: freed in this write
      redis.call('HSET', g, unpack(times))
      release(group, host, ARGV[i + 2], busy, shared, stored)
      out[#out + 1] = 1
    end
  end
end
for what, n in pairs(counts) do
  if n > 0 then redis.call('HINCRBY', P .. 'counters', what, n) end
end
return out
