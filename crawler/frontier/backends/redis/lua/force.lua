-- ARGV[3..] (fp, host, level, request) x n, URLs the crawl has seen, added with force
-- (Scrapy's dont_filter): each one done, or parked for a revisit, is queued again; one
-- queued, leased, waiting for a retry or a dead letter is not. 1 or 0 each.
local out = {}
for i = 3, #ARGV, 4 do
  local fp, host, level, request = ARGV[i], ARGV[i + 1], ARGV[i + 2], ARGV[i + 3]
  local h = ensure_host(host, '0')
  local again = redis.call('EXISTS', P .. 'lease:' .. fp) == 0
    and not redis.call('ZSCORE', P .. 'waiting', fp) and redis.call('HEXISTS', P .. 'dead', fp) == 0
  local parked = redis.call('ZSCORE', P .. 'revisits', fp)  -- parked for a revisit: not queued
  if again and not parked then  -- queued? (a scan of the host's queues, for a URL done
    -- without a revisit: a page stored is parked, so a rerun's forced start URLs skip it)
    for l = 0, LEVELS - 1 do
      for _, item in ipairs(redis.call('LRANGE', P .. 'q:' .. host .. ':' .. l, 0, -1)) do
        if entry(item) == fp then again = false; break end
      end
      if not again then break end
    end
  end
  local left, pinned = unpack(redis.call('HMGET', h, 'left', 'level'))  -- pinned: a demoted host's level
  if again and spent(left) then
    redis.call('HINCRBY', P .. 'counters', 'dropped/seen', -1)
    redis.call('HINCRBY', P .. 'counters', 'dropped/budget', 1)
    again = false
  end
  if again then
    if parked then redis.call('ZREM', P .. 'revisits', fp); redis.call('DEL', P .. 'retry:' .. fp) end
    enqueue(host, pinned or level, fp, request)
    redis.call('HINCRBY', P .. 'counters', 'dropped/seen', -1)
    schedule(host)
  end
  out[#out + 1] = again and 1 or 0
end
return out
