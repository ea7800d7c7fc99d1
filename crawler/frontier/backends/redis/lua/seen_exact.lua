-- The exact seen set: a fingerprint's bits past its bucket, a field of the bucket's small hash.
local function seen_add(bucket, field)
  return redis.call('HSETNX', P .. 'seen:' .. bucket, field, '') == 1
end
