local function bloom_add(key, positions)
  local present = true
  for position in string.gmatch(positions, '[^,]+') do
    if redis.call('SETBIT', key, position, 1) == 0 then present = false end
  end
  return not present
end
