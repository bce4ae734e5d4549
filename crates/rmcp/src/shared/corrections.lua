-- The fleet's corrected annotations (correct_hints), in one round trip per request.
--
-- KEYS: 1 corrections (hash: tool -> "<4 letters>|<until, ms of the server's clock>")
--   letters, one per hint in MCP's order: '-' not corrected, else the value served:
--   't' true, 'f' false, 'u' unset.
-- ARGV: 1 op: 'put', 'all' or 'lift'; 2 key TTL ms (the history's)
--   put:  3 tool, 4 letters, 5 lasts ms, 6 most tools. Merges with the tool's correction in
--         force (a hint already corrected keeps its value: both are the cautious one).
--         Returns the letters in force after it.
--   all:  returns tool, letters, tool, letters, ... of every correction in force (those whose
--         time is up are removed).
--   lift: 3 tool. Returns 1 when a correction was removed.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local op = ARGV[1]

local function in_force(value)
  if not value then return nil end
  local letters, untl = string.match(value, '^([-tfu][-tfu][-tfu][-tfu])|(%d+)$')
  if not letters or tonumber(untl) <= now then return nil end
  return letters
end

if op == 'put' then
  local tool, letters, lasts = ARGV[3], ARGV[4], tonumber(ARGV[5])
  local old = in_force(redis.call('HGET', KEYS[1], tool))
  local merged = letters
  if old then
    merged = ''
    for i = 1, 4 do
      local o, n = string.sub(old, i, i), string.sub(letters, i, i)
      merged = merged .. ((o ~= '-') and o or n)
    end
    if merged == old then return old end
  elseif redis.call('HLEN', KEYS[1]) >= tonumber(ARGV[6]) then
    return ''
  end
  redis.call('HSET', KEYS[1], tool, merged .. '|' .. tostring(now + lasts))
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return merged
elseif op == 'all' then
  local out = {}
  local all = redis.call('HGETALL', KEYS[1])
  for i = 1, #all, 2 do
    local letters = in_force(all[i + 1])
    if letters then
      out[#out + 1] = all[i]
      out[#out + 1] = letters
    else
      redis.call('HDEL', KEYS[1], all[i])
    end
  end
  return out
else
  return redis.call('HDEL', KEYS[1], ARGV[3])
end
