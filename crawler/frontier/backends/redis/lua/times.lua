-- ARGV[3..] (fp, token) pairs of leases whose fetch ended: for each, {1, times}, times the
-- 'backoff last_gap crawl_delay' of its politeness group, read for the policy, or {0} when
-- the token no longer holds a fetching lease.
local out = {}
for i = 3, #ARGV, 2 do
  local l = P .. 'lease:' .. ARGV[i]
  local token, host, fetching = unpack(redis.call('HMGET', l, 'token', 'host', 'fetching'))
  if token ~= ARGV[i + 1] or fetching ~= '1' then
    out[#out + 1] = {0}
  else
    local g = P .. 'host:' .. redis.call('HGET', P .. 'host:' .. host, 'group')
    local backoff, last_gap, delay = unpack(redis.call('HMGET', g, 'backoff', 'last_gap', 'crawl_delay'))
    out[#out + 1] = {1, times_text(backoff, last_gap, delay)}
  end
end
return out
