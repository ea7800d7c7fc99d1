-- Shared by every script: KEYS[1] is the crawl prefix P, ARGV[1] the priority levels, ARGV[2] the
-- pages a new host may fetch ('' no limit: HostBudget.left). No policy here: the scripts keep
-- what the policy decided (pages left, a host's fixed level, the level cycle) and follow it.
local P = KEYS[1]
-- On a Redis Cluster slot being resharded, half the crawl's keys may have moved: two absent keys
-- make Redis refuse this (MIGRATING or IMPORTING), so the script stops before any write.
if type(redis.pcall('EXISTS', P .. '~1', P .. '~2')) == 'table' then
  return redis.error_reply('TRYAGAIN the slot of ' .. P .. ' is being moved')
end
local LEVELS = tonumber(ARGV[1])
-- a politeness key's times, kept in the hash of the host of the key's name
local KEY_TIMES = {'next_allowed', 'busy', 'backoff', 'last_gap', 'crawl_delay', 'shared'}
-- host hash fields read by schedule: then its URLs queued per level, n0, n1, ..., then its
-- key's times from TIMES (used when it is its own key: the usual case)
local SCHEDULE_FIELDS = {'held', 'group', 'left', 'rl'}
for level = 0, LEVELS - 1 do SCHEDULE_FIELDS[level + 5] = 'n' .. level end
local TIMES = LEVELS + 5
for k, field in ipairs(KEY_TIMES) do SCHEDULE_FIELDS[TIMES + k - 1] = field end
local function key_times(host, group, stored, at)
  -- next_allowed, busy, backoff, last_gap, crawl_delay, shared of host's politeness key: from
  -- stored (host's hash as read, KEY_TIMES from index at) when host is its own key, else read
  if group == host then return unpack(stored, at, at + #KEY_TIMES - 1) end
  return unpack(redis.call('HMGET', P .. 'host:' .. group, unpack(KEY_TIMES)))
end
local function times_text(backoff, last_gap, delay)
  -- the times the policy reads after a fetch, as the claim returns them and the report checks
  return (backoff or '0') .. ' ' .. (last_gap or '0') .. ' ' .. (delay or '0')
end
local function best_level(counts, first)
  -- the most urgent level with URLs queued, from counts[first + level]; nil: none
  for level = 0, LEVELS - 1 do
    if tonumber(counts[first + level] or '0') > 0 then return level end
  end
  return nil
end
local function spent(left)
  -- a host's budget is spent: none of the pages left that the policy set (HostBudget.left)
  return left == '0'
end
local function enqueue(host, level, fp, request)
  -- a URL to the back of the host's queue of that level, counted per level in its hash; an
  -- entry is its fingerprint (16 hex digits) then its request (see entry)
  redis.call('RPUSH', P .. 'q:' .. host .. ':' .. level, fp .. request)
  redis.call('HINCRBY', P .. 'host:' .. host, 'n' .. level, 1)
  redis.call('HINCRBY', P .. 'counters', 'queued', 1)
end
local function entry(item)
  -- a queued entry's fingerprint and request
  return string.sub(item, 1, 16), string.sub(item, 17)
end
local function unready(host)
  -- out of the ready set it is in (rl: the level of the last one it was put in)
  local rl = redis.call('HGET', P .. 'host:' .. host, 'rl')
  if rl then redis.call('ZREM', P .. 'ready:' .. rl, host) end
end
local function schedule(host, free_at, stored)
  -- put a host in the ready set of its best queued URL's level if it has queued URLs, is not
  -- held, and its group is free; free_at: its group is known to be free from then (just
  -- released), no need to read it; stored: its SCHEDULE_FIELDS, when the caller just read
  -- them. A host with no pages left has its queues dropped.
  local h = P .. 'host:' .. host
  stored = stored or redis.call('HMGET', h, unpack(SCHEDULE_FIELDS))
  local held, group, left, rl = stored[1], stored[2], stored[3], stored[4]
  if held == '1' then return end
  local best = best_level(stored, 5)
  if not best then return end
  if spent(left) then
    for level = 0, LEVELS - 1 do
      local n = tonumber(stored[level + 5] or '0')
      if n > 0 then
        redis.call('DEL', P .. 'q:' .. host .. ':' .. level)
        redis.call('HDEL', h, 'n' .. level)
        redis.call('HINCRBY', P .. 'counters', 'queued', -n)
        redis.call('HINCRBY', P .. 'counters', 'dropped/budget', n)
      end
    end
    return
  end
  local next_allowed, busy = free_at, nil
  if not free_at then next_allowed, busy = key_times(host, group, stored, TIMES) end
  if busy and busy ~= '0' then return end
  best = tostring(best)
  if rl ~= best then
    if rl then redis.call('ZREM', P .. 'ready:' .. rl, host) end
    redis.call('HSET', h, 'rl', best)
  end
  redis.call('ZADD', P .. 'ready:' .. best, tonumber(next_allowed or '0'), host)
end
local function join(group, host)
  -- host joins the group's members; a group of more than one host is marked shared (a group
  -- not shared is its one host alone, so claims and releases need not read its members)
  redis.call('SADD', P .. 'members:' .. group, host)
  if redis.call('SCARD', P .. 'members:' .. group) > 1 then
    redis.call('HSET', P .. 'host:' .. group, 'shared', 1)
  end
end
local function members(group, host, shared)
  -- the hosts of the group of host; shared: the group's flag as read ('1', or false/nil: one
  -- host), unknown (true): read them
  if shared then return redis.call('SMEMBERS', P .. 'members:' .. group) end
  return {host}
end
local function release(group, host, free_at, busy, shared, stored)
  -- the fetch of host's group ended; free_at: its next allowed time, when the caller just
  -- wrote it. busy counts the group's fetches in flight: one, or more only where keys merged
  -- mid-fetch (absent or 0: none); '1' given: the caller read it and has just written it 0,
  -- and shared as read (see members); else both are read here. stored: host's
  -- SCHEDULE_FIELDS as the caller just read them (see schedule).
  if busy ~= '1' then
    local g = P .. 'host:' .. group
    if redis.call('HINCRBY', g, 'busy', -1) > 0 then return end
    redis.call('HDEL', g, 'busy')
    shared = true
  end
  for _, member in ipairs(members(group, host, shared)) do
    schedule(member, free_at, member == host and stored or nil)
  end
end
local function ensure_host(host, held)
  local h = P .. 'host:' .. host
  -- a host's hash may exist before the host does: as its name's politeness group (an IP)
  if redis.call('HSETNX', h, 'group', host) == 1 then
    redis.call('HSET', h, 'held', held)
    if ARGV[2] ~= '' then redis.call('HSET', h, 'left', ARGV[2]) end
    join(host, host)
  end
  return h
end
local function end_lease(fp, l, host, fetching, worker)
  -- the lease of fp (hash l) ends; a host still fetching is released
  redis.call('SREM', P .. 'worker:' .. (worker or ''), fp)
  redis.call('DEL', l)
  redis.call('ZREM', P .. 'leases', fp)
  if fetching == '1' then release(redis.call('HGET', P .. 'host:' .. host, 'group'), host) end
end
local function bury(fp, host, level, request, error, at)
  -- a dead letter, as dead_letters reads it back (DeadLetter); the caller counts it
  redis.call('HSET', P .. 'dead', fp, cjson.encode({host, tonumber(level), request, error, tonumber(at)}))
end
local function end_worker(worker)
  -- a worker is gone (silent, or it left): its leases end now, so the reap that follows queues
  -- their URLs again and frees their hosts, and it is listed no more; returns how many it held
  local w = P .. 'worker:' .. worker
  local fps = redis.call('SMEMBERS', w)
  for _, fp in ipairs(fps) do redis.call('ZADD', P .. 'leases', 'XX', 0, fp) end
  redis.call('DEL', w)
  redis.call('ZREM', P .. 'workers', worker)
  redis.call('HDEL', P .. 'quiet', worker)
  return #fps
end
