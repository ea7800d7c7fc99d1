-- A Bloom filter's bitmap allocated whole (grown bit by bit, Redis would double it).
-- KEYS[1] the bitmap; ARGV[1] its last bit.
if redis.call('EXISTS', KEYS[1]) == 0 then
  redis.call('SETBIT', KEYS[1], ARGV[1], 0)
end
