-- ARGV[3] this worker's id, about to leave: for each lease it holds, what the policy needs to
-- give it back (allowed_after_leave): {fp, token, fetching, its host's run of unanswered
-- fetches, its group's next_allowed, its group's last_gap}
local out = {}
for _, fp in ipairs(redis.call('SMEMBERS', P .. 'worker:' .. ARGV[3])) do
  local token, host, fetching = unpack(redis.call('HMGET', P .. 'lease:' .. fp, 'token', 'host', 'fetching'))
  if token then
    local ua, group = unpack(redis.call('HMGET', P .. 'host:' .. host, 'ua', 'group'))
    local next_allowed, last_gap = unpack(redis.call('HMGET', P .. 'host:' .. group, 'next_allowed', 'last_gap'))
    out[#out + 1] = {fp, token, fetching or '0', ua or '0', next_allowed or '0', last_gap or '0'}
  end
end
return out
