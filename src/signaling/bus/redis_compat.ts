/**
 * The {@linkcode CompatBus} of `RedisBus`: `/y-webrtc` topics and PeerJS
 * ids shared by the brokers of one Redis. What Redis holds (under the
 * bus's prefix; `<h>` is the SHA-256 of a dialect key, base64url, so that
 * no client's text names a Redis key):
 * - `ct:<h>`: hash node -> subscribers of the topic on that node;
 * - `claims`: hash `<h>` -> node, the `from`s and PeerJS ids held;
 * - `cn:<node>`: set of what the node holds (`t<h>` topics, `c<h>` claims),
 *   and `cnodes`: the nodes with any, so that a dead node's share is found
 *   and removed (at most {@linkcode COMPAT_REAP_BATCH} entries a script
 *   call) whether or not the session reaper saw it.
 *
 * Each change is one Lua script, so it is atomic. A publish goes to the
 * channel of each other node with a subscriber of the topic, a message for
 * an id to the channel of its holder, as `~t` or `~c` and JSON of
 * `[key, message]`: the broker's own channel, which `RedisBus` routes here.
 *
 * @module
 */

import { createHash } from "node:crypto";
import type { Redis } from "ioredis";
import type { CompatBus, CompatBusListener } from "./compat.ts";

const NOW_MS = `local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)`;

// KEYS: ct:<h>, cn:<node>, cnodes. ARGV: node, max, h.
// Returns {1 or 0 (refused), subscribers on other nodes}.
const SUBSCRIBE = `
local total, mine = 0, 0
local counts = redis.call('HGETALL', KEYS[1])
for i = 1, #counts, 2 do
  total = total + tonumber(counts[i + 1])
  if counts[i] == ARGV[1] then mine = tonumber(counts[i + 1]) end
end
if total >= tonumber(ARGV[2]) then return {0, total - mine} end
redis.call('HINCRBY', KEYS[1], ARGV[1], 1)
redis.call('SADD', KEYS[2], 't' .. ARGV[3])
redis.call('SADD', KEYS[3], ARGV[1])
return {1, total - mine}`;

// KEYS: ct:<h>, cn:<node>. ARGV: node, h.
const UNSUBSCRIBE = `
local left = redis.call('HINCRBY', KEYS[1], ARGV[1], -1)
if left <= 0 then
  redis.call('HDEL', KEYS[1], ARGV[1])
  redis.call('SREM', KEYS[2], 't' .. ARGV[2])
end
return left`;

// KEYS: ct:<h>. ARGV: node, channel prefix, message.
// Returns the subscribers on other nodes.
const PUBLISH = `
local others = 0
local counts = redis.call('HGETALL', KEYS[1])
for i = 1, #counts, 2 do
  if counts[i] ~= ARGV[1] then
    others = others + tonumber(counts[i + 1])
    redis.call('PUBLISH', ARGV[2] .. counts[i], ARGV[3])
  end
end
return others`;

// KEYS: claims, cn:<node>, cnodes, nodes. ARGV: h, node.
// A node taken for dead (no heartbeat entry) claims nothing.
const CLAIM = `
if not redis.call('ZSCORE', KEYS[4], ARGV[2]) then return 0 end
local holder = redis.call('HGET', KEYS[1], ARGV[1])
if holder and holder ~= ARGV[2] then return 0 end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
redis.call('SADD', KEYS[2], 'c' .. ARGV[1])
redis.call('SADD', KEYS[3], ARGV[2])
return 1`;

// KEYS: claims, cn:<node>. ARGV: h, node.
const RELEASE = `
if redis.call('HGET', KEYS[1], ARGV[1]) == ARGV[2] then
  redis.call('HDEL', KEYS[1], ARGV[1])
end
redis.call('SREM', KEYS[2], 'c' .. ARGV[1])
return 1`;

// KEYS: claims. ARGV: h, channel prefix, message. Returns 1 when sent.
const SEND = `
local holder = redis.call('HGET', KEYS[1], ARGV[1])
if not holder then return 0 end
redis.call('PUBLISH', ARGV[2] .. holder, ARGV[3])
return 1`;

// KEYS: cnodes, nodes, claims. ARGV: prefix, a node to remove now (or ''),
// the most entries to remove in this call. Removes the share of every node
// in cnodes that has no live heartbeat (or of the one named). Returns 1
// when entries remain (call again), else 0.
const REAP = `${NOW_MS}
local dead = {}
if ARGV[2] ~= '' then dead = {ARGV[2]}
else
  for _, node in ipairs(redis.call('SMEMBERS', KEYS[1])) do
    local lapses = redis.call('ZSCORE', KEYS[2], node)
    if not lapses or tonumber(lapses) < now then table.insert(dead, node) end
  end
end
local budget = tonumber(ARGV[3])
for _, node in ipairs(dead) do
  local held = ARGV[1] .. 'cn:' .. node
  local entries = redis.call('SPOP', held, budget)
  for _, entry in ipairs(entries) do
    local kind, h = string.sub(entry, 1, 1), string.sub(entry, 2)
    if kind == 't' then redis.call('HDEL', ARGV[1] .. 'ct:' .. h, node)
    elseif redis.call('HGET', KEYS[3], h) == node then
      redis.call('HDEL', KEYS[3], h)
    end
  end
  budget = budget - #entries
  if budget <= 0 then return 1 end
  redis.call('SREM', KEYS[1], node)
end
return 0`;

/**
 * The most entries (subscriptions and claims) one call of the compat
 * reaping script removes.
 */
export const COMPAT_REAP_BATCH = 500;

// Calls of the reaping script in a row, at most, per beat.
const MAX_REAP_CALLS = 200;

/** The scripts by the name the bus defines them under, with their key counts. */
export const COMPAT_SCRIPTS: Readonly<
  Record<string, { readonly lua: string; readonly keys: number }>
> = {
  podCompatSubscribe: { lua: SUBSCRIBE, keys: 3 },
  podCompatUnsubscribe: { lua: UNSUBSCRIBE, keys: 2 },
  podCompatPublish: { lua: PUBLISH, keys: 1 },
  podCompatClaim: { lua: CLAIM, keys: 4 },
  podCompatRelease: { lua: RELEASE, keys: 2 },
  podCompatSend: { lua: SEND, keys: 1 },
  podCompatReap: { lua: REAP, keys: 3 },
};

type Script = (...args: (string | number)[]) => Promise<unknown>;

/**
 * The longest dialect message read from Redis, in characters: a client's
 * frame (at most `maxFrameBytes`) with its key, even escaped six times
 * over, fits; past it the message is dropped unread, so that what is put
 * on Redis cannot make a broker parse without bound.
 */
export const MAX_COMPAT_MESSAGE_CHARS: number = 8 * 1024 * 1024;

/** What {@linkcode RedisCompatBus} needs of its `RedisBus`. */
export interface RedisCompatOptions {
  /** The command connection, with {@linkcode COMPAT_SCRIPTS} defined. */
  cmd: Redis;
  /** The prefix of every key. */
  prefix: string;
  /** This broker's node id. */
  node: string;
  /** The channel of a node; with "", their common prefix. */
  channel: (node: string) => string;
}

/** The dialects' share of a `RedisBus` (see the module documentation). */
export class RedisCompatBus implements CompatBus {
  #cmd: Redis;
  #prefix: string;
  #node: string;
  #channel: (node: string) => string;
  #listener: CompatBusListener | undefined;

  /** @param options The bus's connection, prefix, node and channels. */
  constructor(options: RedisCompatOptions) {
    this.#cmd = options.cmd;
    this.#prefix = options.prefix;
    this.#node = options.node;
    this.#channel = options.channel;
  }

  /** Attaches the hubs' listener. */
  attach(listener: CompatBusListener): void {
    this.#listener = listener;
  }

  /** Counts a subscriber of this node, unless the topic is full. */
  async subscribe(
    key: string,
    max: number,
  ): Promise<{ ok: boolean; remote: number }> {
    const h = hashOf(key);
    const [ok, remote] = await this.#script("podCompatSubscribe")(
      this.#key(`ct:${h}`),
      this.#key(`cn:${this.#node}`),
      this.#key("cnodes"),
      this.#node,
      max,
      h,
    ) as [number, number];
    return { ok: ok === 1, remote };
  }

  /** Counts a subscriber of this node less. */
  async unsubscribe(key: string): Promise<void> {
    const h = hashOf(key);
    await this.#script("podCompatUnsubscribe")(
      this.#key(`ct:${h}`),
      this.#key(`cn:${this.#node}`),
      this.#node,
      h,
    );
  }

  /** Sends to the other nodes with subscribers of the topic. */
  async publish(key: string, message: string): Promise<number> {
    return await this.#script("podCompatPublish")(
      this.#key(`ct:${hashOf(key)}`),
      this.#node,
      this.#channel(""),
      `~t${JSON.stringify([key, message])}`,
    ) as number;
  }

  /** Claims a `from` or an id for this node. */
  async claim(key: string): Promise<boolean> {
    return await this.#script("podCompatClaim")(
      this.#key("claims"),
      this.#key(`cn:${this.#node}`),
      this.#key("cnodes"),
      this.#key("nodes"),
      hashOf(key),
      this.#node,
    ) === 1;
  }

  /** Lets a claim of this node go. */
  async release(key: string): Promise<void> {
    await this.#script("podCompatRelease")(
      this.#key("claims"),
      this.#key(`cn:${this.#node}`),
      hashOf(key),
      this.#node,
    );
  }

  /** Sends to the node that holds the claim. */
  async send(key: string, message: string): Promise<boolean> {
    return await this.#script("podCompatSend")(
      this.#key("claims"),
      hashOf(key),
      this.#channel(""),
      `~c${JSON.stringify([key, message])}`,
    ) === 1;
  }

  /**
   * Removes the share of dead nodes (or of `node`, this one at close),
   * {@linkcode COMPAT_REAP_BATCH} entries a call.
   */
  async reap(node = ""): Promise<void> {
    for (let call = 0; call < MAX_REAP_CALLS; call++) {
      const more = await this.#script("podCompatReap")(
        this.#key("cnodes"),
        this.#key("nodes"),
        this.#key("claims"),
        this.#prefix,
        node,
        COMPAT_REAP_BATCH,
      );
      if (more !== 1 || this.#cmd.status !== "ready") return;
    }
  }

  /**
   * A message from this broker's channel that starts with `~` (`~t` a
   * publish, `~c` a message for an id), hostile until the hubs check it.
   */
  onMessage(text: string): void {
    const listener = this.#listener;
    if (listener === undefined || text.length > MAX_COMPAT_MESSAGE_CHARS) {
      return;
    }
    let parsed: unknown;
    try {
      parsed = JSON.parse(text.slice(2));
    } catch {
      return;
    }
    if (
      !Array.isArray(parsed) || parsed.length !== 2 ||
      typeof parsed[0] !== "string" || typeof parsed[1] !== "string"
    ) return;
    if (text[1] === "t") listener.topic(parsed[0], parsed[1]);
    else if (text[1] === "c") listener.direct(parsed[0], parsed[1]);
  }

  #key(name: string): string {
    return `${this.#prefix}${name}`;
  }

  #script(name: string): Script {
    const client = this.#cmd as unknown as Record<string, Script>;
    return client[name]!.bind(this.#cmd);
  }
}

function hashOf(key: string): string {
  return createHash("sha256").update(key).digest("base64url");
}
