-- The Bloom seen set: a fingerprint's k bit positions (comma-separated) in one bitmap.
local function seen_add(bitmap, positions)
  return bloom_add(P .. 'bloom:' .. bitmap, positions)
end
