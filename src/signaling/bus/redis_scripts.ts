/**
 * The Lua scripts of `RedisBus`: each membership change is one script, so
 * it is atomic and published in the order of its number, to the channel of
 * each broker that holds a member of the session after it, as
 * `+<seq> <session> <peer> <node>` (joined) or `!<seq> …` (left): `+` and
 * `!` start no session name, so the channel also carries signal data. The
 * key layout is described in redis.ts.
 *
 * @module
 */

const NOW_MS = `local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)`;

// Publishes a membership change to the brokers that hold a member of the
// session after it (each once), but `skip` (a dead broker, or nil). A
// function of every script that changes a session: `channels` is the node
// channels' prefix (`<prefix>n:`).
const TELL = `
local function tell(channels, nodes, message, skip)
  local told = {}
  if skip then told[skip] = true end
  for _, node in ipairs(nodes) do
    if not told[node] then
      told[node] = true
      redis.call('PUBLISH', channels .. node, message)
    end
  end
end`;

// KEYS: session, peers, node hash, seq, nodes.
// ARGV: peer, node, max, node channel prefix, session name.
const JOIN = `${TELL}
if not redis.call('ZSCORE', KEYS[5], ARGV[2]) then return {-3} end
if redis.call('HLEN', KEYS[1]) >= tonumber(ARGV[3]) then return {-1} end
if redis.call('HSETNX', KEYS[2], ARGV[1], ARGV[2]) == 0 then return {-2} end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
redis.call('HSET', KEYS[3], ARGV[1], ARGV[5])
local seq = redis.call('INCR', KEYS[4])
tell(ARGV[4], redis.call('HVALS', KEYS[1]),
  '+' .. seq .. ' ' .. ARGV[5] .. ' ' .. ARGV[1] .. ' ' .. ARGV[2])
return {seq, redis.call('HGETALL', KEYS[1])}`;

// KEYS: session, peers, node hash, seq.
// ARGV: peer, node, node channel prefix, session name.
const LEAVE = `${TELL}
if redis.call('HGET', KEYS[1], ARGV[1]) ~= ARGV[2] then return 0 end
redis.call('HDEL', KEYS[1], ARGV[1])
redis.call('HDEL', KEYS[2], ARGV[1])
redis.call('HDEL', KEYS[3], ARGV[1])
local seq = redis.call('INCR', KEYS[4])
tell(ARGV[3], redis.call('HVALS', KEYS[1]),
  '!' .. seq .. ' ' .. ARGV[4] .. ' ' .. ARGV[1] .. ' ' .. ARGV[2])
return seq`;

// KEYS: session, seq.
const SNAPSHOT = `
return {tonumber(redis.call('GET', KEYS[2]) or '0'), redis.call('HGETALL', KEYS[1])}`;

// KEYS: nodes. ARGV: node, ttl ms. Returns 1 when the node was not there.
const HEARTBEAT = `${NOW_MS}
return redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), ARGV[1])`;

// KEYS: nodes, peers, seq. ARGV: prefix, a node to remove now (or ''), and
// the most peers to remove in this call. Removes the peers of every lapsed
// node (or of the one named), publishing their leaves, and a node once its
// peers are gone. Returns {removed, 1 when peers remain (call again) or 0}.
// The bound keeps one call short however many peers a dead broker held, so
// Redis serves the other brokers between calls.
const REAP = `${NOW_MS}${TELL}
local dead
if ARGV[2] ~= '' then dead = {ARGV[2]}
else dead = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now) end
local budget = tonumber(ARGV[3])
local count = 0
for _, node in ipairs(dead) do
  local key = ARGV[1] .. 'node:' .. node
  local cursor = '0'
  repeat
    if count >= budget then return {count, 1} end
    local page = redis.call('HSCAN', key, cursor, 'COUNT', budget - count)
    cursor = page[1]
    local held = page[2]
    for i = 1, #held, 2 do
      -- HSCAN's COUNT is a hint: the page may hold more.
      if count >= budget then return {count, 1} end
      local peer, session = held[i], held[i + 1]
      local members = ARGV[1] .. 'session:' .. session
      if redis.call('HGET', members, peer) == node then
        redis.call('HDEL', members, peer)
        redis.call('HDEL', KEYS[2], peer)
        local seq = redis.call('INCR', KEYS[3])
        tell(ARGV[1] .. 'n:', redis.call('HVALS', members),
          '!' .. seq .. ' ' .. session .. ' ' .. peer .. ' ' .. node, node)
      end
      redis.call('HDEL', key, peer)
      count = count + 1
    end
  until cursor == '0'
  -- One whole scan in this call: every peer the node held is gone.
  redis.call('DEL', key)
  redis.call('ZREM', KEYS[1], node)
end
return {count, 0}`;

/**
 * The most peers one call of the reaping script removes; a dead broker's
 * peers take as many calls as they need, one after the other.
 */
export const REAP_BATCH = 500;

/** The scripts by the name `RedisBus` defines them under, with their key counts. */
export const SCRIPTS: Readonly<
  Record<string, { readonly lua: string; readonly keys: number }>
> = {
  podJoin: { lua: JOIN, keys: 5 },
  podLeave: { lua: LEAVE, keys: 4 },
  podSnapshot: { lua: SNAPSHOT, keys: 2 },
  podHeartbeat: { lua: HEARTBEAT, keys: 1 },
  podReap: { lua: REAP, keys: 3 },
} as const;
