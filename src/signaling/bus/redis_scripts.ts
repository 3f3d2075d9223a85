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
    if node ~= '' and not told[node] then
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

// Parking (held.ts): a parked peer's node is '' in its session and in
// \`peers\`; \`parked\` (sorted set peer -> end of its window), \`parked:<peer>\`
// (hash: session, token's SHA-256, bytes held), \`resume:<SHA-256 of the
// token>\` (its peer),
// \`held:<peer>\` (list of "<from> <data>", oldest first) and
// \`dropped:<peer>\` (set of senders whose signals were dropped). A move is
// published as \`=<seq> <session> <peer> <node>\`.

// KEYS: session, peers, node hash, seq, parked.
// ARGV: peer, node, node channel prefix, session, token, ttl ms, prefix.
const PARK = `${NOW_MS}${TELL}
if redis.call('HGET', KEYS[1], ARGV[1]) ~= ARGV[2] then return 0 end
redis.call('HSET', KEYS[1], ARGV[1], '')
redis.call('HSET', KEYS[2], ARGV[1], '')
redis.call('HDEL', KEYS[3], ARGV[1])
local ttl = tonumber(ARGV[6])
redis.call('ZADD', KEYS[5], now + ttl, ARGV[1])
local info = ARGV[7] .. 'parked:' .. ARGV[1]
redis.call('DEL', info, ARGV[7] .. 'held:' .. ARGV[1], ARGV[7] .. 'dropped:' .. ARGV[1])
redis.call('HSET', info, 'session', ARGV[4], 'token', ARGV[5], 'bytes', 0)
redis.call('PEXPIRE', info, ttl * 2)
redis.call('SET', ARGV[7] .. 'resume:' .. ARGV[5], ARGV[1], 'PX', ttl)
local seq = redis.call('INCR', KEYS[4])
tell(ARGV[3], redis.call('HVALS', KEYS[1]),
  '=' .. seq .. ' ' .. ARGV[4] .. ' ' .. ARGV[1] .. ' ')
return seq`;

// KEYS: session, peers, node hash, seq, parked, nodes.
// ARGV: token, session, node, node channel prefix, prefix.
// Returns {seq, peer, members, held, dropped}, {0} for no such parked peer
// in the session, or {-3} when this node was taken for dead.
const RESUME = `${TELL}
if not redis.call('ZSCORE', KEYS[6], ARGV[3]) then return {-3} end
local tokenKey = ARGV[5] .. 'resume:' .. ARGV[1]
local peer = redis.call('GET', tokenKey)
if not peer then return {0} end
local info = ARGV[5] .. 'parked:' .. peer
if redis.call('HGET', info, 'session') ~= ARGV[2] then return {0} end
if redis.call('HGET', KEYS[1], peer) ~= '' then return {0} end
redis.call('DEL', tokenKey, info)
redis.call('ZREM', KEYS[5], peer)
redis.call('HSET', KEYS[1], peer, ARGV[3])
redis.call('HSET', KEYS[2], peer, ARGV[3])
redis.call('HSET', KEYS[3], peer, ARGV[2])
local heldKey = ARGV[5] .. 'held:' .. peer
local droppedKey = ARGV[5] .. 'dropped:' .. peer
local held = redis.call('LRANGE', heldKey, 0, -1)
local dropped = redis.call('SMEMBERS', droppedKey)
redis.call('DEL', heldKey, droppedKey)
local seq = redis.call('INCR', KEYS[4])
tell(ARGV[4], redis.call('HVALS', KEYS[1]),
  '=' .. seq .. ' ' .. ARGV[2] .. ' ' .. peer .. ' ' .. ARGV[3])
return {seq, peer, redis.call('HGETALL', KEYS[1]), held, dropped}`;

// KEYS: session. ARGV: to, from, data, node channel prefix, prefix,
// session, most signals held, most bytes held, '1' when the sending broker
// may hold it (HeldWindow). Publishes to the node that holds \`to\` (returns
// 1), or holds the signal while \`to\` is parked, dropping the oldest past
// the bounds (returns 2; a signal the broker may not hold is dropped at once,
// and 1 returned). Returns 0 when \`to\` is no member.
const SEND = `
local node = redis.call('HGET', KEYS[1], ARGV[1])
if not node then return 0 end
if node ~= '' then
  redis.call('PUBLISH', ARGV[4] .. node,
    ARGV[6] .. ' ' .. ARGV[1] .. ' ' .. ARGV[2] .. ' ' .. ARGV[3])
  return 1
end
local list = ARGV[5] .. 'held:' .. ARGV[1]
local info = ARGV[5] .. 'parked:' .. ARGV[1]
local dropped = ARGV[5] .. 'dropped:' .. ARGV[1]
local ttl = redis.call('PTTL', info)
if ttl <= 0 then return 1 end
if ARGV[9] ~= '1' then
  if redis.call('SCARD', dropped) < tonumber(ARGV[7]) then
    redis.call('SADD', dropped, ARGV[2])
    redis.call('PEXPIRE', dropped, ttl)
  end
  return 1
end
redis.call('RPUSH', list, ARGV[2] .. ' ' .. ARGV[3])
local bytes = redis.call('HINCRBY', info, 'bytes', #ARGV[3])
local count = redis.call('LLEN', list)
while count > tonumber(ARGV[7]) or bytes > tonumber(ARGV[8]) do
  local old = redis.call('LPOP', list)
  local space = string.find(old, ' ', 1, true)
  bytes = redis.call('HINCRBY', info, 'bytes', space - #old)
  count = count - 1
  if redis.call('SCARD', dropped) < tonumber(ARGV[7]) then
    redis.call('SADD', dropped, string.sub(old, 1, space - 1))
  end
end
redis.call('PEXPIRE', list, ttl)
redis.call('PEXPIRE', dropped, ttl)
return 2`;

// KEYS: parked, peers, seq. ARGV: prefix, the most peers to expire.
// Parked peers whose window is over leave their session.
const EXPIRE = `${NOW_MS}${TELL}
local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'LIMIT', 0,
  tonumber(ARGV[2]))
for _, peer in ipairs(due) do
  local info = ARGV[1] .. 'parked:' .. peer
  local session = redis.call('HGET', info, 'session')
  local token = redis.call('HGET', info, 'token')
  if session then
    local members = ARGV[1] .. 'session:' .. session
    if redis.call('HGET', members, peer) == '' then
      redis.call('HDEL', members, peer)
      redis.call('HDEL', KEYS[2], peer)
      local seq = redis.call('INCR', KEYS[3])
      tell(ARGV[1] .. 'n:', redis.call('HVALS', members),
        '!' .. seq .. ' ' .. session .. ' ' .. peer .. ' ')
    end
  end
  if token then redis.call('DEL', ARGV[1] .. 'resume:' .. token) end
  redis.call('DEL', info, ARGV[1] .. 'held:' .. peer, ARGV[1] .. 'dropped:' .. peer)
  redis.call('ZREM', KEYS[1], peer)
end
return #due`;

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
  podPark: { lua: PARK, keys: 5 },
  podResume: { lua: RESUME, keys: 6 },
  podSend: { lua: SEND, keys: 1 },
  podExpire: { lua: EXPIRE, keys: 3 },
} as const;
