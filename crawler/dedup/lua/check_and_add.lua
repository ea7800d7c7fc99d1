-- The one-Redis check and add, run after versions.lua. KEYS[1] = the index prefix P;
-- ARGV = sha (16 bytes), simhash (8 bytes, big-endian), url, host, near ('1' or '0'), k,
-- then with near: the nearest simhash the caller found in the 4 buckets ('' for none),
-- its distance, the 4 bucket lengths it read and the P cuts count it read with them.
-- Returns {kind, original} or nil. Layout: P x:<hex of sha's first 2 bytes> hash
-- sha -> url; P n<t>:<hex of block t> string of 8-byte simhashes whose block t has that
-- value (t = 0..3, block 0 the least significant 16 bits), appended to; P s:<hex of
-- block 0> hash simhash -> sha; P v:<first 3 hex of sha1(url)> hash url -> its recorded
-- version: a page's new version replaces its old one (its entries leave x:, s: and the
-- buckets, and P cuts counts the buckets cut, so that a caller who read them before
-- rescans them whole); P pages and P dups hashes host -> count.
local P, sha, fp, url, host = KEYS[1], ARGV[1], ARGV[2], ARGV[3], ARGV[4]
-- As the frontier's scripts: on a Redis Cluster slot being moved, stop before any write.
if type(redis.pcall('EXISTS', P .. '~1', P .. '~2')) == 'table' then
  return redis.error_reply('TRYAGAIN the slot of ' .. P .. ' is being moved')
end
local near, k = ARGV[5] == '1', tonumber(ARGV[6])
local function hex2(s, i) return string.format('%02x%02x', s:byte(i, i + 1)) end
redis.call('HINCRBY', P .. 'pages', host, 1)
local exact_key = P .. 'x:' .. hex2(sha, 1)
local original = redis.call('HGET', exact_key, sha)
if original == url then return nil end
if original then
  redis.call('HINCRBY', P .. 'dups', host, 1)
  return {'exact', original}
end
if near then
  local best, best_distance = ARGV[7], tonumber(ARGV[8])
  -- a version replaced since the caller read the buckets cut them: scan them whole
  local cut = (redis.call('GET', P .. 'cuts') or '0') ~= ARGV[13]
  if best == '' or cut then best, best_distance = nil, k + 1 end
  -- fingerprints appended since the caller read the buckets: usually none
  local ones, bxor, q1, q2, q3, q4, q5, q6, q7, q8
  for t = 0, 3 do
    local from = cut and 0 or ARGV[9 + t]
    local tail = redis.call('GETRANGE', P .. 'n' .. t .. ':' .. hex2(fp, 7 - 2 * t), from, -1)
    if #tail > 0 and not ones then
      ones = {[0] = 0}  -- bits set in each byte value
      for v = 1, 255 do ones[v] = ones[bit.rshift(v, 1)] + v % 2 end
      bxor, q1, q2, q3, q4, q5, q6, q7, q8 = bit.bxor, fp:byte(1, 8)
    end
    for i = 1, #tail, 8 do
      local c1, c2, c3, c4, c5, c6, c7, c8 = tail:byte(i, i + 7)
      local distance = ones[bxor(q1, c1)] + ones[bxor(q2, c2)] + ones[bxor(q3, c3)] + ones[bxor(q4, c4)]
        + ones[bxor(q5, c5)] + ones[bxor(q6, c6)] + ones[bxor(q7, c7)] + ones[bxor(q8, c8)]
      if distance < best_distance then best_distance, best = distance, tail:sub(i, i + 7) end
    end
  end
  if best then
    local best_sha = redis.call('HGET', P .. 's:' .. hex2(best, 7), best)
    original = best_sha and redis.call('HGET', P .. 'x:' .. hex2(best_sha, 1), best_sha)
    if original and original ~= url then
      redis.call('HINCRBY', P .. 'dups', host, 1)
      return {'near', original}
    end
  end
end
local version_key = P .. 'v:' .. redis.sha1hex(url):sub(1, 3)
local old = swap_version(version_key, url, near and sha .. fp or sha)
if old then
  local old_sha = old:sub(1, 16)
  forget_exact(P .. 'x:' .. hex2(old_sha, 1), old_sha, url)
  if #old == 24 then
    local old_fp = old:sub(17, 24)
    local s_key = P .. 's:' .. hex2(old_fp, 7)
    if redis.call('HGET', s_key, old_fp) == old_sha then redis.call('HDEL', s_key, old_fp) end
    for t = 0, 3 do cut_record(P .. 'n' .. t .. ':' .. hex2(old_fp, 7 - 2 * t), old_fp) end
    redis.call('INCR', P .. 'cuts')
  end
end
redis.call('HSETNX', exact_key, sha, url)
if near then
  for t = 0, 3 do redis.call('APPEND', P .. 'n' .. t .. ':' .. hex2(fp, 7 - 2 * t), fp) end
  redis.call('HSET', P .. 's:' .. hex2(fp, 7), fp, sha)
end
return nil
