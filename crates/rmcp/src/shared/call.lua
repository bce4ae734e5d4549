-- One finished call, in one round trip: what the fleet knew of the previous identical call,
-- then this call recorded in its place. Atomic: two replicas ending identical calls at once
-- are ordered by the server, each repeat judged once.
--
-- KEYS: 1 epoch (counter), 2 calls (sorted set: entry id -> end, ms), 3 entries (hash: entry
--       id -> "epoch|end ms|replica|summary"), 4 tables (hash: table -> epoch of last write)
-- ARGV: 1 entry id, 2 replica, 3 summary, 4 ttl ms, 5 most entries, 6 most tables,
--       7 n touched tables, 8 .. 7+n touched tables, then the written tables
-- Returns {seen (0/1), disturbed (0/1), age ms, previous replica, previous summary}.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local ttl = tonumber(ARGV[4])
local epoch = redis.call('INCR', KEYS[1])

-- Entries older than the TTL go, a bounded number per call.
local old = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', now - ttl, 'LIMIT', 0, 64)
if #old > 0 then
  redis.call('ZREM', KEYS[2], unpack(old))
  redis.call('HDEL', KEYS[3], unpack(old))
end

local n = tonumber(ARGV[7])
local answer = {0, 0, 0, '', ''}
local prev = redis.call('HGET', KEYS[3], ARGV[1])
if prev then
  local e, ended, replica, summary = string.match(prev, '^(%d+)|(%d+)|([^|]*)|(.*)$')
  local prev_epoch = tonumber(e)
  -- Past the table bound, an untracked table may have been written: disturbed (precision).
  local full = redis.call('HLEN', KEYS[4]) >= tonumber(ARGV[6])
  local disturbed = 0
  for i = 1, n do
    local w = redis.call('HGET', KEYS[4], ARGV[7 + i])
    if (w and tonumber(w) > prev_epoch) or (not w and full) then
      disturbed = 1
    end
  end
  answer = {1, disturbed, now - tonumber(ended), replica, summary}
end

redis.call('HSET', KEYS[3], ARGV[1], epoch .. '|' .. now .. '|' .. ARGV[2] .. '|' .. ARGV[3])
redis.call('ZADD', KEYS[2], now, ARGV[1])
local over = redis.call('ZCARD', KEYS[2]) - tonumber(ARGV[5])
if over > 0 then
  local gone = redis.call('ZPOPMIN', KEYS[2], over)
  for i = 1, #gone, 2 do
    redis.call('HDEL', KEYS[3], gone[i])
  end
end

local tracked = redis.call('HLEN', KEYS[4])
for i = 8 + n, #ARGV do
  if redis.call('HSET', KEYS[4], ARGV[i], epoch) == 1 then
    tracked = tracked + 1
    if tracked > tonumber(ARGV[6]) then
      redis.call('HDEL', KEYS[4], ARGV[i])
      tracked = tracked - 1
    end
  end
end

-- A fleet that stops calling leaves nothing behind after the TTL.
for i = 1, 4 do
  redis.call('PEXPIRE', KEYS[i], ttl)
end
return answer
