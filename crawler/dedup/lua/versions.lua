-- The content index's rule of one version per URL, run by the one-Redis check
-- (check_and_add.lua) and by the Redis Cluster index's scripts (each a single key):
-- a URL's version is its SHA (16 bytes), then its simhash (8 bytes, big-endian) when its
-- page is compared near. Recording a new version replaces the old one, whose entries
-- the caller then forgets.

-- Records `version` as the one `url` holds in the hash `key`. Returns the version it
-- replaces when that one has another text (its entries to forget), else nil.
local function swap_version(key, url, version)
  local old = redis.call('HGET', key, url)
  redis.call('HSET', key, url, version)
  if old and old:sub(1, 16) ~= version:sub(1, 16) then return old end
  return nil
end

-- Deletes the exact entry `sha` of the hash `key` if it names `url`: a text another URL
-- recorded stays that URL's.
local function forget_exact(key, sha, url)
  if redis.call('HGET', key, sha) == url then redis.call('HDEL', key, sha) end
end

-- Cuts the first record equal to `record` (records of its length, end to end) from the
-- bucket string `key`, deleting the key once it is empty. Returns 1 if one was cut.
local function cut_record(key, record)
  local data, size = redis.call('GET', key) or '', #record
  for i = 1, #data, size do
    if data:sub(i, i + size - 1) == record then
      data = data:sub(1, i - 1) .. data:sub(i + size)
      if #data == 0 then redis.call('DEL', key) else redis.call('SET', key, data) end
      return 1
    end
  end
  return 0
end
