-- ARGV[3] now, ARGV[4] lease expiry, ARGV[5] most claims (a few thousand at most, as Lua's
-- unpack allows), ARGV[6] worker id, ARGV[7] how many levels O follow (the policy's order of
-- levels across hosts for these claims: claim k takes the earliest due host of level
-- O[k mod #O], else of the most urgent level with a due host; a host counts at its best
-- queued URL's level), ARGV[8] the cycle's length C; then O, then the cycle (within a host,
-- its cursor walks the cycle to the next level with URLs queued). PriorityLevels.host_level
-- and next_level are the rules; this script only follows them.
-- Claims up to ARGV[5] URLs, one per due host (the leases' tokens taken from P tokens at
-- once). Returns {wait, fp, token, host, request, times, ...}: wait is the seconds until the
-- next host is due when fewer were claimed ('' when none is queued, '0' when full); times is
-- the group's 'backoff last_gap crawl_delay' as stored, so that the release after the fetch
-- need not read them again (fetched.lua checks they still hold).
local now, most, worker = tonumber(ARGV[3]), tonumber(ARGV[5]), ARGV[6]
local orders, size = tonumber(ARGV[7]), tonumber(ARGV[8])
local order, cycle = {}, {}
for k = 0, orders - 1 do order[k] = ARGV[9 + k] end
for k = 0, size - 1 do cycle[k] = ARGV[9 + orders + k] end
-- one read of the host: then its URLs queued per level, n0, n1, ..., its claims, then its
-- key's times (used when it is its own key: the usual case)
local fields = {'group', 'held', 'left', 'cur'}
for level = 0, LEVELS - 1 do fields[level + 5] = 'n' .. level end
local CLAIMS = LEVELS + 5
fields[CLAIMS] = 'claims'
for k, field in ipairs(KEY_TIMES) do fields[CLAIMS + k] = field end
local closed, wait = {}, nil  -- levels with no due host left; the earliest time among them
local function take(level)
  -- the earliest due host of the level's ready set, out of it; nil (and the level closed): none
  if closed[level] then return nil end
  local top = redis.call('ZPOPMIN', P .. 'ready:' .. level)
  if #top == 0 then closed[level] = true; return nil end
  local allowed = tonumber(top[2])
  if allowed > now then  -- not due yet: back in its place
    redis.call('ZADD', P .. 'ready:' .. level, top[2], top[1])
    closed[level] = true
    if not wait or allowed - now < wait then wait = allowed - now end
    return nil
  end
  return top[1], allowed
end
local out = {'0'}
local claimed, token = 0, nil
local leases, fps = {}, {}  -- written in one ZADD and one SADD at the end
while claimed < most do
  local host, allowed = take(order[claimed % orders])
  for level = 0, LEVELS - 1 do
    if host then break end
    host, allowed = take(tostring(level))
  end
  if not host then
    out[1] = wait and tostring(wait) or ''
    break
  end
  local h = P .. 'host:' .. host
  local stored = redis.call('HMGET', h, unpack(fields))  -- one read of all the host needs
  local group, held, left = stored[1], stored[2], stored[3]
  local own, g = group == host, P .. 'host:' .. group
  local next_allowed, busy, backoff, last_gap, delay, shared = key_times(host, group, stored, CLAIMS + 1)
  if held ~= '1' and (busy or '0') == '0' then
    if tonumber(next_allowed or '0') > allowed then
      schedule(host)  -- another host of its group fetched since: back at the right time
    else
      local cur, best = tonumber(stored[4] or '0'), nil
      for step = 0, size - 1 do  -- the host's cursor to the next level with URLs queued
        local level = tonumber(cycle[(cur + step) % size])
        if tonumber(stored[level + 5] or '0') > 0 then best = level; cur = (cur + step + 1) % size; break end
      end
      if best then
        -- claims: what HostBudget.demoted_left counts from; busy: its key's fetch in flight
        local writes = {'cur', cur, 'n' .. best, tonumber(stored[best + 5]) - 1,
                        'claims', tonumber(stored[CLAIMS] or '0') + 1}
        if left then writes[7], writes[8] = 'left', tonumber(left) - 1 end
        if own then
          writes[#writes + 1], writes[#writes + 2] = 'busy', 1  -- it was free (0 or absent)
        else
          redis.call('HINCRBY', g, 'busy', 1)
        end
        redis.call('HSET', h, unpack(writes))
        local fp, request = entry(redis.call('LPOP', P .. 'q:' .. host .. ':' .. best))
        -- the tokens of this call's leases, taken from P tokens at once
        token = token and token + 1 or redis.call('INCRBY', P .. 'tokens', most) - most + 1
        claimed = claimed + 1
        for _, member in ipairs(members(group, host, shared)) do
          if member ~= host then unready(member) end  -- its group is busy now
        end
        redis.call('HSET', P .. 'lease:' .. fp, 'token', token, 'host', host, 'level', best,
                   'request', request, 'fetching', 1, 'worker', worker)
        leases[#leases + 1] = ARGV[4]
        leases[#leases + 1] = fp
        fps[#fps + 1] = fp
        out[#out + 1] = fp
        out[#out + 1] = token
        out[#out + 1] = host
        out[#out + 1] = request
        out[#out + 1] = times_text(backoff, last_gap, delay)
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
