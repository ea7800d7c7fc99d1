-- One value of a parameter over one URL gave a text: kept unless known or the hash holds
-- enough values. KEYS[1] the evidence hash of one (host, parameter, rest); ARGV value,
-- digest, most. Returns every value -> digest so far.
if redis.call('HEXISTS', KEYS[1], ARGV[1]) == 0 and redis.call('HLEN', KEYS[1]) < tonumber(ARGV[3]) then
  redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
end
return redis.call('HGETALL', KEYS[1])
