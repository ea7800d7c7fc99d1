-- ARGV[3..] (fp, token) pairs: each URL is done and its lease ends; 1, or 0 for a stale
-- token, each.
local out = {}
for i = 3, #ARGV, 2 do
  local fp = ARGV[i]
  local l = P .. 'lease:' .. fp
  local token, host, fetching, worker = unpack(redis.call('HMGET', l, 'token', 'host', 'fetching', 'worker'))
  if token ~= ARGV[i + 1] then
    out[#out + 1] = 0
  else
    end_lease(fp, l, host, fetching, worker)
    out[#out + 1] = 1
  end
end
return out
