-- ARGV[3] this worker's id: it leaves the crawl (a clean stop); then (fp, token, allowed)
-- triples: each lease still held by that token is given back, its URL queued again at once
-- and its host, if still fetching, not allowed before the policy's time (it never comes
-- earlier: allowed_after_leave); the worker is listed no more (leases claimed since the read
-- end, for the next reap). Returns how many were given back.
local given = 0
for i = 4, #ARGV, 3 do
  local fp = ARGV[i]
  local l = P .. 'lease:' .. fp
  local token, host, fetching, level, request, worker = unpack(
    redis.call('HMGET', l, 'token', 'host', 'fetching', 'level', 'request', 'worker'))
  if token == ARGV[i + 1] then
    if fetching == '1' then
      local g = P .. 'host:' .. redis.call('HGET', P .. 'host:' .. host, 'group')
      local allowed = tonumber(ARGV[i + 2])
      if allowed > tonumber(redis.call('HGET', g, 'next_allowed') or '0') then
        redis.call('HSET', g, 'next_allowed', ARGV[i + 2])
      end
    end
    enqueue(host, level, fp, request)
    end_lease(fp, l, host, fetching, worker)
    if fetching ~= '1' then schedule(host) end  -- after a fetch the release scheduled it
    given = given + 1
  end
end
end_worker(ARGV[3])
return given
