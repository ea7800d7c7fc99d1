-- The Redis Cluster index's version swap (after versions.lua): KEYS[1] the URL's version
-- hash, ARGV the URL and its new version; returns the version to forget, or nil.
return swap_version(KEYS[1], ARGV[1], ARGV[2])
