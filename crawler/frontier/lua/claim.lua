-- ARGV[3] now, ARGV[4] lease expiry, ARGV[5] most claims (a few thousand at most, as Lua's
-- unpack allows), ARGV[6] worker id; weights per level follow. Claims up to ARGV[5] URLs,
-- one per due host (the leases' tokens taken from P tokens at once). Returns {wait, fp,
-- token, host, request, backoff, last_gap, crawl_delay, ...}: wait is the seconds until the
-- next host is due when fewer were claimed ('' when none is queued, '0' when full); the
-- last three are the group's times as stored, so that the release after the fetch need not
-- read them again (fetched.lua checks they still hold).
local now, most, worker = tonumber(ARGV[3]), tonumber(ARGV[5]), ARGV[6]
local levels = tonumber(ARGV[1])
local fields = {'group', 'held', 'fetched'}  -- then the level credits c0, c1, ...
for level = 0, levels - 1 do fields[level + 4] = 'c' .. level end
local out = {'0'}
local claimed, token = 0, nil
local leases, fps = {}, {}  -- written in one ZADD and one SADD at the end
while claimed < most do
  local top = redis.call('ZPOPMIN', P .. 'ready')
  if #top == 0 then out[1] = ''; break end
  local host, allowed = top[1], tonumber(top[2])
  if allowed > now then  -- not due yet: back in its place
    redis.call('ZADD', P .. 'ready', top[2], host)
    out[1] = tostring(allowed - now)
    break
  end
  local h = P .. 'host:' .. host
  local stored = redis.call('HMGET', h, unpack(fields))  -- one read of all the host needs
  local group, held = stored[1], stored[2]
  local g = P .. 'group:' .. group
  local next_allowed, busy, backoff, last_gap, delay = unpack(redis.call(
    'HMGET', g, 'next_allowed', 'busy', 'backoff', 'last_gap', 'crawl_delay'))
  local group_allowed = tonumber(next_allowed or '0')
  if held ~= '1' and not busy then
    if group_allowed > allowed then
      schedule(host)  -- another host of its group fetched since: back at the right time
    else
      -- smooth weighted round robin among non-empty levels
      local best, total, credits = -1, 0, {}
      for level = 0, levels - 1 do
        credits[level] = tonumber(stored[level + 4] or '0')
        if redis.call('LLEN', P .. 'q:' .. host .. ':' .. level) > 0 then
          local w = tonumber(ARGV[7 + level])
          credits[level] = credits[level] + w
          total = total + w
          if best < 0 or credits[level] > credits[best] then best = level end
        end
      end
      if best >= 0 then
        credits[best] = credits[best] - total
        local pairs_ = {'fetched', tonumber(stored[3] or '0') + 1}
        for level = 0, levels - 1 do
          pairs_[#pairs_ + 1] = 'c' .. level
          pairs_[#pairs_ + 1] = credits[level]
        end
        redis.call('HSET', h, unpack(pairs_))
        local entry = cjson.decode(redis.call('LPOP', P .. 'q:' .. host .. ':' .. best))
        local fp, request = entry[1], entry[2]
        -- the tokens of this call's leases, taken from P tokens at once
        token = token and token + 1 or redis.call('INCRBY', P .. 'tokens', most) - most + 1
        claimed = claimed + 1
        redis.call('HINCRBY', g, 'busy', 1)
        redis.call('ZREM', P .. 'ready', unpack(redis.call('SMEMBERS', P .. 'members:' .. group)))
        redis.call('HSET', P .. 'lease:' .. fp, 'token', token, 'host', host, 'level', best,
                   'request', request, 'fetching', 1, 'worker', worker)
        leases[#leases + 1] = ARGV[4]
        leases[#leases + 1] = fp
        fps[#fps + 1] = fp
        out[#out + 1] = fp
        out[#out + 1] = token
        out[#out + 1] = host
        out[#out + 1] = request
        out[#out + 1] = backoff or '0'
        out[#out + 1] = last_gap or '0'
        out[#out + 1] = delay or '0'
      end
    end
  end
end
if claimed > 0 then
  redis.call('HINCRBY', P .. 'counters', 'queued', -claimed)
  redis.call('ZADD', P .. 'leases', unpack(leases))
  redis.call('SADD', P .. 'worker:' .. worker, unpack(fps))
end
return out
