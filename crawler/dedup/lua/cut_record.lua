-- The Redis Cluster index's cut of a replaced version's band record (after versions.lua):
-- KEYS[1] the bucket, ARGV[1] the 24-byte record (simhash, then SHA); 1 if it was cut.
return cut_record(KEYS[1], ARGV[1])
