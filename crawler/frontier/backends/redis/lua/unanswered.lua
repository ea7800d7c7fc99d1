-- ARGV[3] host: one more fetch of it got no answer; how many in a row have (ua in its hash,
-- ended by fetched.lua when one is answered)
return redis.call('HINCRBY', ensure_host(ARGV[3], '0'), 'ua', 1)
