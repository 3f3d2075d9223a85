/**
 * `RedisBus`: the signaling bus on Redis, so that the peers of one session
 * can sit on different brokers. Create one per broker with
 * {@linkcode createRedisBus}, pass it as the `bus` option, and close it after
 * the server.
 *
 * What Redis holds (every key under `prefix`, default `pod-broker:`):
 * - `session:<name>`: hash peer id -> node, the members of a session;
 * - `peers`: hash peer id -> node, so that an id is unique on the bus;
 * - `node:<node>`: hash peer id -> session, the peers a broker holds;
 * - `nodes`: sorted set node -> the time its heartbeat lapses;
 * - `seq`: the one counter that orders every membership change.
 *
 * Joins, leaves and the removal of a dead broker's peers are Lua scripts,
 * so each is atomic: `maxPeersPerSession` holds across brokers, and each
 * change is published in the order of its number to the channel of every
 * broker that holds a member of the session after it (`n:<node>`, the one
 * channel a broker subscribes to), so a join is one round trip and the
 * broker subscribes to nothing per session. A signal goes to the channel of
 * the one broker that holds its addressee as `<session> <to> <from> <data>`,
 * never as a ready frame: the receiving hub checks the sender and the data
 * and builds the frame. Nothing reaches a broker with no peer in the
 * session.
 *
 * Every `heartbeatMs` a broker renews its entry in `nodes` (for three
 * beats) and removes the peers of any broker whose entry lapsed, so the
 * peers of a killed broker are reported left within four beats. A beat
 * costs O(1) in sessions and peers (one `ZADD`, one `ZRANGEBYSCORE` of the
 * brokers); a dead broker's peers are removed {@linkcode REAP_BATCH} per
 * script call, so Redis serves the others between calls. Scripts
 * touch keys they compute, so the bus needs a single Redis (or a primary
 * with replicas), not Redis Cluster.
 *
 * @module
 */

import { Redis } from "ioredis";
import { randomAlphanumeric } from "../../_util/id.ts";
import type { Logger } from "../../_util/log.ts";
import { scrubSecrets, urlSecrets } from "../../_util/secrets.ts";
import { REAP_BATCH, SCRIPTS } from "./redis_scripts.ts";
import { COMPAT_SCRIPTS, RedisCompatBus } from "./redis_compat.ts";
import {
  expireOnRedis,
  pairs,
  parkOnRedis,
  parseBusMessage,
  type RedisResumeContext,
  resumeOnRedis,
  sendOnRedis,
} from "./redis_resume.ts";
import type {
  Bus,
  BusDelivery,
  BusJoinResult,
  BusListener,
  BusResume,
  BusSnapshot,
  BusState,
  CompatBus,
} from "./mod.ts";
import { RedisUrlError } from "./redis_url.ts";
import { HeldWindow } from "./held.ts";

export { REAP_BATCH, RedisUrlError };

/** Options of {@linkcode createRedisBus}. */
export interface RedisBusOptions {
  /**
   * `redis://[:password@]host[:port][/db]` or `rediss://` for TLS. It may
   * hold a password: it is never logged nor put in an error.
   */
  url: string;
  /**
   * Heartbeat interval; a broker silent for three beats is taken for dead
   * and its peers are reported left within one more. @default {5000}
   */
  heartbeatMs?: number;
  /** Prefix of every key and channel. @default {"pod-broker:"} */
  prefix?: string;
  /** How long the first connection may take. @default {5000} */
  connectTimeoutMs?: number;
  /** Receives the bus's log events (never the URL). */
  logger?: Logger;
}

/** The default heartbeat interval of a {@linkcode RedisBus}. */
export const DEFAULT_BUS_HEARTBEAT_MS = 5_000;

/** Heartbeats a broker may miss before it is taken for dead. */
export const BUS_MISSED_BEATS = 3;

// Calls of the reaping script in a row before the next beat takes over: at
// most 2,000 × REAP_BATCH peers per beat.
const MAX_REAP_CALLS = 2_000;

type Script = (...args: (string | number)[]) => Promise<unknown>;

/**
 * Connects a broker to the signaling bus on Redis and resolves once it is
 * up (connected, subscribed to its own channel and registered).
 *
 * @param options The Redis URL and the bus's timing.
 * @returns The bus, to pass as the `bus` option.
 * @throws {TypeError} For a URL that is not `redis:` or `rediss:`, or a
 * heartbeat under 100 ms.
 * @throws {Error} When Redis cannot be reached in `connectTimeoutMs`.
 *
 * @example Two brokers on one Redis
 * ```ts ignore
 * import { createSignalServer, MemoryRegistry } from "jsr:@pod/broker";
 * import { createRedisBus } from "jsr:@pod/broker/bus-redis";
 *
 * const bus = await createRedisBus({ url: "redis://127.0.0.1:6379" });
 * const server = await createSignalServer({ registry: new MemoryRegistry(), bus });
 * // ... on shutdown:
 * await server.close();
 * await bus.close();
 * ```
 */
export async function createRedisBus(
  options: RedisBusOptions,
): Promise<RedisBus> {
  const bus = new RedisBus(options);
  try {
    await bus.ready(options.connectTimeoutMs ?? 5_000);
  } catch (error) {
    await bus.close();
    throw error;
  }
  return bus;
}

/**
 * One broker's handle on the signaling bus in Redis (see the module
 * documentation for what it stores). Prefer {@linkcode createRedisBus},
 * which waits until the bus is up.
 */
export class RedisBus implements Bus {
  /** This broker's id on the bus (random, 16 characters). */
  readonly node: string;
  /** The y-webrtc topics and PeerJS ids shared on this Redis (redis_compat.ts). */
  get compat(): CompatBus {
    return this.#compat;
  }
  #compat: RedisCompatBus;
  #cmd: Redis;
  #sub: Redis;
  #prefix: string;
  #heartbeatMs: number;
  #secrets: string[];
  #logger: Logger | undefined;
  #listener: BusListener | undefined;
  #state: BusState = "down";
  #registered = false;
  #checking = false;
  #reaping = false;
  #closed = false;
  #timer: ReturnType<typeof setInterval> | undefined;
  #upWaiters: (() => void)[] = [];
  #loggedDown = false;
  #subscribed = false;
  #parking: RedisResumeContext;

  /**
   * Makes the bus and starts connecting.
   *
   * @param options The Redis URL and the bus's timing.
   * @throws {TypeError} For a bad URL or heartbeat.
   */
  constructor(options: RedisBusOptions) {
    let url: URL;
    try {
      url = new URL(options.url);
    } catch {
      throw new RedisUrlError("it is not a URL");
    }
    if (url.protocol !== "redis:" && url.protocol !== "rediss:") {
      throw new RedisUrlError("expected redis:// or rediss://");
    }
    const heartbeatMs = options.heartbeatMs ?? DEFAULT_BUS_HEARTBEAT_MS;
    if (!Number.isSafeInteger(heartbeatMs) || heartbeatMs < 100) {
      throw new TypeError(
        "Cannot use the bus heartbeat: expected an integer of at least 100 ms",
      );
    }
    this.node = randomAlphanumeric(16);
    this.#prefix = options.prefix ?? "pod-broker:";
    this.#heartbeatMs = heartbeatMs;
    this.#secrets = urlSecrets(url);
    this.#logger = options.logger;
    const common = {
      lazyConnect: true,
      connectTimeout: options.connectTimeoutMs ?? 5_000,
      // Reconnect for ever, backing off to one second.
      retryStrategy: (times: number) => Math.min(50 * times, 1_000),
    };
    // Commands fail at once while Redis is away (the hub closes the socket
    // or retries later) instead of queueing without bound.
    this.#cmd = new Redis(options.url, {
      ...common,
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
    });
    // The subscriber resubscribes by itself when it reconnects.
    this.#sub = new Redis(options.url, {
      ...common,
      autoResubscribe: true,
      maxRetriesPerRequest: null,
    });
    const scripts = { ...SCRIPTS, ...COMPAT_SCRIPTS };
    this.#compat = new RedisCompatBus({
      cmd: this.#cmd,
      prefix: this.#prefix,
      node: this.node,
      channel: (node) => this.#nodeChannel(node),
    });
    this.#parking = {
      run: (name, ...args) => this.#script(name)(...args),
      prefix: this.#prefix,
      node: this.node,
      held: new HeldWindow(),
    };
    for (const [name, { lua, keys }] of Object.entries(scripts)) {
      this.#cmd.defineCommand(name, { numberOfKeys: keys, lua });
    }
    for (const client of [this.#cmd, this.#sub]) {
      client.on("error", (error: Error) => this.#onError(error));
      client.on("close", () => this.#onDown());
      client.on("ready", () => this.#onReady());
    }
    this.#sub.on("message", (channel: string, message: string) => {
      this.#onMessage(channel, message);
    });
    this.#cmd.connect().catch(() => {});
    this.#sub.connect().then(
      () => this.#sub.subscribe(this.#nodeChannel(this.node)),
    ).then(() => {
      this.#subscribed = true;
      this.#onReady();
    }, () => {});
  }

  /** Whether the bus can be used now. */
  get state(): BusState {
    return this.#state;
  }

  /**
   * Resolves once the bus is up.
   *
   * @param timeoutMs How long to wait.
   * @throws {Error} When it is not up in time.
   */
  ready(timeoutMs: number): Promise<void> {
    if (this.#state === "up") return Promise.resolve();
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.#upWaiters.splice(this.#upWaiters.indexOf(done), 1);
        reject(
          new Error(
            `Cannot connect to the Redis bus: not up after ${timeoutMs} ms`,
          ),
        );
      }, timeoutMs);
      const done = () => {
        clearTimeout(timer);
        resolve();
      };
      this.#upWaiters.push(done);
    });
  }

  /** Attaches the hub's listener. */
  attach(listener: BusListener): void {
    this.#listener = listener;
  }

  /** Adds a peer of this broker to a session, atomically. */
  async join(
    session: string,
    peerId: string,
    maxPeers: number,
  ): Promise<BusJoinResult> {
    const reply = await this.#script("podJoin")(
      this.#key(`session:${session}`),
      this.#key("peers"),
      this.#key(`node:${this.node}`),
      this.#key("seq"),
      this.#key("nodes"),
      peerId,
      this.node,
      maxPeers,
      this.#nodeChannel(""),
      session,
    ) as [number, string[]?];
    const [seq, members] = reply;
    if (seq === -1) return { ok: false, reason: "full" };
    if (seq === -2) return { ok: false, reason: "taken" };
    if (seq === -3) {
      // This broker was taken for dead: the heartbeat will say so.
      this.#check();
      return { ok: false, reason: "lost" };
    }
    return { ok: true, snapshot: { seq, members: pairs(members ?? []) } };
  }

  /** Removes a peer of this broker from a session. */
  async leave(session: string, peerId: string): Promise<void> {
    await this.#script("podLeave")(
      this.#key(`session:${session}`),
      this.#key("peers"),
      this.#key(`node:${this.node}`),
      this.#key("seq"),
      peerId,
      this.node,
      this.#nodeChannel(""),
      session,
    );
  }

  /** The members of a session now. */
  async snapshot(session: string): Promise<BusSnapshot> {
    const [seq, members] = await this.#script("podSnapshot")(
      this.#key(`session:${session}`),
      this.#key("seq"),
    ) as [number, string[]];
    return { seq, members: pairs(members) };
  }

  /** Publishes signal data to the broker that holds its addressee. */
  async deliver(node: string, delivery: BusDelivery): Promise<void> {
    await this.#cmd.publish(
      this.#nodeChannel(node),
      `${delivery.session} ${delivery.to} ${delivery.from} ${delivery.data}`,
    );
  }

  /** Parks a peer of this broker (redis_resume.ts). */
  park(session: string, peerId: string, token: string): Promise<void> {
    return parkOnRedis(this.#parking, session, peerId, token);
  }

  /** Resumes a parked peer on this broker (redis_resume.ts). */
  async resume(session: string, token: string): Promise<BusResume | null> {
    const moved = await resumeOnRedis(this.#parking, session, token);
    if (moved !== "lost") return moved;
    this.#check();
    return null;
  }

  /** Sends to a peer wherever it is, or into its hold (redis_resume.ts). */
  send(delivery: BusDelivery, held?: HeldWindow): Promise<boolean> {
    return sendOnRedis(this.#parking, delivery, held);
  }

  /**
   * Removes this broker's remaining peers from the bus (their sessions are
   * told they left), then disconnects. Idempotent.
   */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    clearInterval(this.#timer);
    this.#timer = undefined;
    if (this.#cmd.status === "ready") {
      try {
        await this.#compat.reap(this.node);
        await this.#reap(this.node);
      } catch {
        // Its entry lapses by itself, and the others remove its peers.
      }
    }
    this.#state = "down";
    await Promise.all([this.#cmd, this.#sub].map(async (client) => {
      if (client.status !== "ready") {
        client.disconnect();
        return;
      }
      try {
        await client.quit();
      } catch {
        client.disconnect();
      }
    }));
  }

  #key(name: string): string {
    return `${this.#prefix}${name}`;
  }

  /** A broker's channel; with "", their common prefix (the scripts'). */
  #nodeChannel(node: string): string {
    return `${this.#prefix}n:${node}`;
  }

  #script(name: string): Script {
    const client = this.#cmd as unknown as Record<string, Script>;
    return client[name]!.bind(this.#cmd);
  }

  #onMessage(_channel: string, message: string): void {
    const listener = this.#listener;
    if (listener === undefined) return;
    const kind = message[0];
    if (kind === "~") return this.#compat.onMessage(message);
    const parsed = parseBusMessage(message);
    if (parsed === null) return;
    if ("peerId" in parsed) listener.event(parsed);
    else listener.deliver(parsed);
  }

  #onError(error: Error): void {
    if (this.#closed || this.#loggedDown) return;
    this.#loggedDown = true;
    // ioredis messages name the host and port at most; the password is
    // cut out all the same, should a server echo it.
    const message = scrubSecrets(error.message, this.#secrets);
    this.#logger?.("warn", "Signaling bus connection failed", {
      error: message,
    });
  }

  #onDown(): void {
    if (this.#closed || this.#state === "down") return;
    this.#state = "down";
    this.#listener?.state("down", false);
  }

  #onReady(): void {
    if (this.#closed || !this.#subscribed) return;
    if (this.#cmd.status !== "ready" || this.#sub.status !== "ready") return;
    this.#check();
    this.#timer ??= setInterval(() => this.#beat(), this.#heartbeatMs);
  }

  // Renews the registration; when it had lapsed (this broker was taken for
  // dead, or Redis lost its data) while peers were held, the hub is told
  // they are lost. The bus is up only once this is known.
  #check(): void {
    if (this.#checking || this.#closed) return;
    this.#checking = true;
    this.#heartbeat().then((added) => {
      this.#checking = false;
      const lost = added && this.#registered;
      this.#registered = true;
      this.#loggedDown = false;
      if (this.#state === "up" && !lost) return;
      this.#state = "up";
      for (const resolve of this.#upWaiters.splice(0)) resolve();
      this.#listener?.state("up", lost);
    }, () => {
      this.#checking = false;
    });
  }

  #beat(): void {
    if (this.#cmd.status !== "ready" || this.#sub.status !== "ready") return;
    this.#check();
    if (this.#reaping) return;
    this.#reaping = true;
    this.#compat.reap().then(() => this.#reap("")).then(() =>
      expireOnRedis(this.#parking)
    ).catch(() => {}).finally(
      () => {
        this.#reaping = false;
      },
    );
  }

  // Removes the peers of lapsed brokers (or of `node`), REAP_BATCH per
  // script call, until none is left.
  async #reap(node: string): Promise<void> {
    for (let call = 0; call < MAX_REAP_CALLS; call++) {
      const [, more] = await this.#script("podReap")(
        this.#key("nodes"),
        this.#key("peers"),
        this.#key("seq"),
        this.#prefix,
        node,
        REAP_BATCH,
      ) as [number, number];
      if (more !== 1 || this.#cmd.status !== "ready") return;
    }
  }

  async #heartbeat(): Promise<boolean> {
    const added = await this.#script("podHeartbeat")(
      this.#key("nodes"),
      this.node,
      this.#heartbeatMs * BUS_MISSED_BEATS,
    );
    return added === 1;
  }
}
