-- The Redis Cluster index's forgetting of a replaced version's exact entry (after
-- versions.lua): KEYS[1] the exact hash, ARGV the old SHA and the URL.
forget_exact(KEYS[1], ARGV[1], ARGV[2])
return nil
