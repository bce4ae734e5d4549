-- The hints of a tools/list answer, in one round trip: per tool, the sets of hints the fleet
-- has served, in the order first seen. A set not seen before for a tool already known is a
-- change, reported once whichever replica serves it first (a half-done rollout alternating
-- between old and new replicas is one change, not one per listing).
--
-- KEYS: 1 hints (hash: tool -> "h1,h2,..." hint sets, 4 letters each, oldest first)
-- ARGV: 1 most tools, 2 ttl ms, then pairs (tool, hint set)
-- Returns, per pair, the set it changed from (the newest before it), or '' for no change.
local out = {}
local pairs_n = (#ARGV - 2) / 2
for i = 1, pairs_n do
  local tool, hints = ARGV[1 + 2 * i], ARGV[2 + 2 * i]
  local seen = redis.call('HGET', KEYS[1], tool)
  local from = ''
  if not seen then
    if redis.call('HLEN', KEYS[1]) < tonumber(ARGV[1]) then
      redis.call('HSET', KEYS[1], tool, hints)
    end
  elseif not string.find(',' .. seen .. ',', ',' .. hints .. ',', 1, true) then
    from = string.match(seen, '([^,]+)$')
    redis.call('HSET', KEYS[1], tool, seen .. ',' .. hints)
  end
  out[i] = from
end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return out
