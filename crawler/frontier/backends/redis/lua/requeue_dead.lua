-- ARGV[3] fp, ARGV[4] request: a dead letter queued again
local record = redis.call('HGET', P .. 'dead', ARGV[3])
if not record then return 0 end
local letter = cjson.decode(record)
redis.call('HDEL', P .. 'dead', ARGV[3])
redis.call('HINCRBY', P .. 'counters', 'dead_letters', -1)
enqueue(letter[1], letter[2], ARGV[3], ARGV[4])
schedule(letter[1])
return 1
