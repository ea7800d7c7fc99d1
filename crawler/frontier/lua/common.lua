-- Shared by every script: KEYS[1] is the crawl prefix P, ARGV[1] the priority levels, ARGV[2] the host budget.
local P = KEYS[1]
-- On a Redis Cluster slot being resharded, half the crawl's keys may have moved: two absent keys
-- make Redis refuse this (MIGRATING or IMPORTING), so the script stops before any write.
if type(redis.pcall('EXISTS', P .. '~1', P .. '~2')) == 'table' then
  return redis.error_reply('TRYAGAIN the slot of ' .. P .. ' is being moved')
end
local function schedule(host, free_at)
  -- put a host in the ready set if it has queued URLs, is not held, and its group is free;
  -- free_at: its group is known to be free from then (just released), no need to read it
  local h = P .. 'host:' .. host
  local held, group, fetched, own = unpack(redis.call('HMGET', h, 'held', 'group', 'fetched', 'budget'))
  if held == '1' then return end
  local queued = false
  for level = 0, tonumber(ARGV[1]) - 1 do
    if redis.call('LLEN', P .. 'q:' .. host .. ':' .. level) > 0 then queued = true; break end
  end
  if not queued then return end
  local budget = tonumber(own or ARGV[2])  -- a demoted host's own budget
  if budget > 0 and tonumber(fetched or '0') >= budget then
    for level = 0, tonumber(ARGV[1]) - 1 do
      local q = P .. 'q:' .. host .. ':' .. level
      local n = redis.call('LLEN', q)
      if n > 0 then
        redis.call('DEL', q)
        redis.call('HINCRBY', P .. 'counters', 'queued', -n)
        redis.call('HINCRBY', P .. 'counters', 'dropped/budget', n)
      end
    end
    return
  end
  local busy, next_allowed = nil, free_at
  if not free_at then
    busy, next_allowed = unpack(redis.call('HMGET', P .. 'group:' .. group, 'busy', 'next_allowed'))
  end
  if busy then return end
  redis.call('ZADD', P .. 'ready', tonumber(next_allowed or '0'), host)
end
local function release(group, free_at)
  -- the group's fetch ended; free_at: its next allowed time, when the caller just wrote it.
  -- busy counts the group's fetches in flight: one, or more only where keys merged mid-fetch
  local g = P .. 'group:' .. group
  if redis.call('HINCRBY', g, 'busy', -1) > 0 then return end
  redis.call('HDEL', g, 'busy')
  for _, member in ipairs(redis.call('SMEMBERS', P .. 'members:' .. group)) do schedule(member, free_at) end
end
local function ensure_host(host, held)
  local h = P .. 'host:' .. host
  if redis.call('EXISTS', h) == 0 then
    redis.call('HSET', h, 'group', host, 'fetched', 0, 'held', held)
    redis.call('SADD', P .. 'members:' .. host, host)
  end
  return h
end
local function end_lease(fp, l, host, fetching, worker)
  -- the lease of fp (hash l) ends; a host still fetching is released
  redis.call('SREM', P .. 'worker:' .. (worker or ''), fp)
  redis.call('DEL', l)
  redis.call('ZREM', P .. 'leases', fp)
  if fetching == '1' then release(redis.call('HGET', P .. 'host:' .. host, 'group')) end
end
