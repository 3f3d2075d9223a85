/**
 * The parking half of `RedisBus` (held.ts, DESIGN.md section 10.4): park a
 * peer whose socket went away, resume it on any broker with its token, send
 * to a peer wherever it is (or into its hold), and let parked peers go at
 * the end of their window. The scripts are in redis_scripts.ts; what comes
 * back from Redis is checked here before the hub sees it.
 *
 * @module
 */

import { encodeHex } from "../../_util/encoding.ts";
import { sha256 } from "../../_util/hash.ts";
import type { BusDelivery, BusEvent, BusResume } from "./mod.ts";
import {
  heldBytes,
  type HeldSignal,
  type HeldWindow,
  MAX_HELD_BYTES,
  MAX_HELD_SIGNALS,
  RESUME_MS,
} from "./held.ts";

/** What the parking calls need of a `RedisBus`. */
export interface RedisResumeContext {
  /** Runs one of the bus's scripts. */
  run(name: string, ...args: (string | number)[]): Promise<unknown>;
  /** The key prefix (`pod-broker:`). */
  readonly prefix: string;
  /** This broker's node id. */
  readonly node: string;
  /** The bound on holds of a send that names none (`Bus.send`). */
  readonly held: HeldWindow;
}

// A peer id as the hubs make them.
const PEER_ID = /^[A-Za-z0-9]{1,64}$/;

// Parked peers let go per call of the expiry script.
const EXPIRE_BATCH = 500;

/**
 * Parks this broker's `peerId` in `session` under `token`.
 *
 * @param ctx The bus.
 * @param session The session.
 * @param peerId The peer.
 * @param token Its resume token.
 */
export async function parkOnRedis(
  ctx: RedisResumeContext,
  session: string,
  peerId: string,
  token: string,
): Promise<void> {
  const p = ctx.prefix;
  await ctx.run(
    "podPark",
    `${p}session:${session}`,
    `${p}peers`,
    `${p}node:${ctx.node}`,
    `${p}seq`,
    `${p}parked`,
    peerId,
    ctx.node,
    `${p}n:`,
    session,
    tokenKey(token),
    RESUME_MS,
    p,
  );
}

/**
 * What Redis knows a resume token by: its SHA-256, hex, so that whoever
 * reads Redis cannot resume anyone's place with what they read.
 */
function tokenKey(token: string): string {
  return encodeHex(sha256(new TextEncoder().encode(token)));
}

/**
 * Resumes the peer parked in `session` under `token` on this broker.
 *
 * @returns The move, null for no such parked peer, or "lost" when this
 * broker was taken for dead.
 */
export async function resumeOnRedis(
  ctx: RedisResumeContext,
  session: string,
  token: string,
): Promise<BusResume | null | "lost"> {
  const p = ctx.prefix;
  const reply = await ctx.run(
    "podResume",
    `${p}session:${session}`,
    `${p}peers`,
    `${p}node:${ctx.node}`,
    `${p}seq`,
    `${p}parked`,
    `${p}nodes`,
    tokenKey(token),
    session,
    ctx.node,
    `${p}n:`,
    p,
  ) as [number, string?, string[]?, string[]?, string[]?];
  const [seq, peerId, members, held, dropped] = reply;
  if (seq === -3) return "lost";
  if (!(seq > 0) || typeof peerId !== "string" || !PEER_ID.test(peerId)) {
    return null;
  }
  // Held to the bounds, whatever Redis answered.
  return {
    peerId,
    snapshot: { seq, members: pairs(members ?? []) },
    held: {
      signals: heldSignals(held ?? []).slice(-MAX_HELD_SIGNALS),
      dropped: (dropped ?? []).slice(0, MAX_HELD_SIGNALS),
    },
  };
}

/**
 * Sends signal data to its addressee wherever it is, or into its hold
 * while `held` (the sending broker's bound) has room for it.
 *
 * @returns False when the addressee is no member of the session.
 */
export async function sendOnRedis(
  ctx: RedisResumeContext,
  delivery: BusDelivery,
  held: HeldWindow = ctx.held,
): Promise<boolean> {
  const p = ctx.prefix;
  // Taken before the script runs, so that sends under way together cannot
  // pass the bound; given back unless the signal was held.
  const bytes = heldBytes(delivery.data);
  const mayHold = held.take(bytes);
  let sent: unknown;
  try {
    sent = await ctx.run(
      "podSend",
      `${p}session:${delivery.session}`,
      delivery.to,
      delivery.from,
      delivery.data,
      `${p}n:`,
      p,
      delivery.session,
      MAX_HELD_SIGNALS,
      MAX_HELD_BYTES,
      mayHold ? 1 : 0,
    );
  } finally {
    if (mayHold && sent !== HELD) held.give(bytes);
  }
  return sent === 1 || sent === HELD;
}

/** What the send script answers for a signal it held. */
const HELD = 2;

/**
 * Lets go of the parked peers whose window is over (each leaves its
 * session), {@linkcode EXPIRE_BATCH} per call, within a bounded number of
 * calls.
 */
export async function expireOnRedis(ctx: RedisResumeContext): Promise<void> {
  const p = ctx.prefix;
  for (let call = 0; call < 100; call++) {
    const count = await ctx.run(
      "podExpire",
      `${p}parked`,
      `${p}peers`,
      `${p}seq`,
      p,
      EXPIRE_BATCH,
    );
    if (count !== EXPIRE_BATCH) return;
  }
}

// "<from> <data>" entries; a malformed one is dropped.
function heldSignals(entries: string[]): HeldSignal[] {
  const signals: HeldSignal[] = [];
  for (const entry of entries.slice(-MAX_HELD_SIGNALS)) {
    const space = typeof entry === "string" ? entry.indexOf(" ") : -1;
    if (space <= 0) continue;
    signals.push({ from: entry.slice(0, space), data: entry.slice(space + 1) });
  }
  return signals;
}

/**
 * A flat `HGETALL` reply as a map.
 *
 * @param flat Keys and values, alternating.
 * @returns The map.
 */
export function pairs(flat: string[]): Map<string, string> {
  const map = new Map<string, string>();
  for (let i = 0; i + 1 < flat.length; i += 2) map.set(flat[i]!, flat[i + 1]!);
  return map;
}

const EVENT_KINDS: Record<string, BusEvent["kind"]> = {
  "+": "joined",
  "!": "left",
  "=": "moved",
};

/**
 * Reads a message of a broker's channel (but the dialects' `~` ones): a
 * membership change `+<seq> <session> <peer> <node>` (joined), `!…` (left)
 * or `=…` (moved; node "" when parked), or signal data
 * `<session> <to> <from> <data>` (names and ids hold no space). Fields are
 * split only: the hub checks them.
 *
 * @param message The message.
 * @returns The event or the delivery, or null when it has neither shape.
 */
export function parseBusMessage(
  message: string,
): BusEvent | BusDelivery | null {
  const kind = EVENT_KINDS[message[0]!];
  if (kind !== undefined) {
    const [seq, session, peerId, node] = message.slice(1).split(" ");
    if (node === undefined) return null;
    return { seq: Number(seq), kind, session: session!, peerId: peerId!, node };
  }
  const first = message.indexOf(" ");
  const second = message.indexOf(" ", first + 1);
  const third = message.indexOf(" ", second + 1);
  if (first < 0 || second < 0 || third < 0) return null;
  return {
    session: message.slice(0, first),
    to: message.slice(first + 1, second),
    from: message.slice(second + 1, third),
    data: message.slice(third + 1),
  };
}
