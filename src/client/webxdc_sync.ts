/**
 * How peers of one webxdc instance share its updates, on the room's data
 * channels (text messages; binary ones are the realtime channel's):
 *
 * - `{"t":"have","h":{AUTHOR:N}}`: a summary, per author the highest
 *   sequence number held with none missing below. Sent to a peer when its
 *   channel opens, and again after each batch it marks `more`.
 * - `{"t":"upd","u":[UPDATE...],"more":BOOL}`: updates, each signed by its
 *   author. The answer to a summary carries what the peer lacks, at most
 *   {@linkcode ROUND_BYTES} or {@linkcode ROUND_UPDATES} a round; a new
 *   update is sent to every peer at once.
 *
 * A peer is cut (nothing more is read from it or sent to it) when it sends
 * what does not parse or verify, an update over `sendUpdateMaxSize`, a batch
 * over the round's bounds, a summary nobody asked for, or floods
 * {@linkcode MAX_DUPLICATES} updates the log had already.
 *
 * @module
 */

import {
  AUTHOR,
  byteLength,
  MAX_LOG_UPDATES,
  MAX_UPDATE_BYTES,
  type SignedUpdate,
  type Summary,
  type UpdateLog,
} from "./webxdc_log.ts";

/** The most update bytes in one round's batch (one update may exceed it alone). */
export const ROUND_BYTES: number = 256 * 1024;
/** The most updates in one batch. */
export const ROUND_UPDATES = 64;
/** The most updates a peer may send that the log had already. */
export const MAX_DUPLICATES: number = 4 * ROUND_UPDATES;
/**
 * The largest text message a peer may send: a full batch, its bodies
 * escaped as JSON strings (at most six characters a byte), and their ids.
 */
export const MAX_SYNC_MESSAGE: number = 6 * (ROUND_BYTES + MAX_UPDATE_BYTES) +
  ROUND_UPDATES * 256;

/** Where the replicator's messages go. */
export interface Wire {
  /** Sends a text message to one peer. */
  send(peer: string, text: string): void;
}

/** What the replicator asks of its page. */
export interface Host {
  /** The log. */
  log: UpdateLog;
  /** Whether the update's signature is its author's. */
  verify(update: SignedUpdate): Promise<boolean>;
  /** Called for each update added from a peer (persist, deliver). */
  added(update: SignedUpdate): void;
  /** Called once for a peer cut, with why. */
  cut?(peer: string, why: string): void;
}

/** One peer's state: the summaries and answers it may send, its duplicates. */
interface PeerState {
  asks: number;
  answers: number;
  duplicates: number;
  /** Messages are handled one at a time, in order. */
  queue: Promise<void>;
}

/** Shares one instance's log with the peers of its room. */
export class Replicator {
  /** The log and what to do with updates. */
  readonly host: Host;
  /** Where messages go. */
  readonly wire: Wire;
  #peers = new Map<string, PeerState>();
  #cut = new Set<string>();

  /**
   * A replicator with no peer yet.
   *
   * @param host The log and what to do with updates.
   * @param wire Where messages go.
   */
  constructor(host: Host, wire: Wire) {
    this.host = host;
    this.wire = wire;
  }

  /** Whether a peer was cut. */
  isCut(peer: string): boolean {
    return this.#cut.has(peer);
  }

  /** The peers a message may go to (open and not cut). */
  get peers(): string[] {
    return [...this.#peers.keys()];
  }

  /** A peer's channel opened: it gets our summary. */
  join(peer: string): void {
    if (this.#cut.has(peer) || this.#peers.has(peer)) return;
    const state = {
      asks: 1,
      answers: 0,
      duplicates: 0,
      queue: Promise.resolve(),
    };
    this.#peers.set(peer, state);
    this.#sendHave(peer, state);
  }

  /** A peer's channel closed. */
  leave(peer: string): void {
    this.#peers.delete(peer);
  }

  /** Sends a new signed update to every peer. */
  broadcast(update: SignedUpdate): void {
    const text = JSON.stringify({ t: "upd", u: [update], more: false });
    for (const peer of this.#peers.keys()) this.wire.send(peer, text);
  }

  /**
   * Handles a text message from a peer, after the ones before it.
   *
   * @returns When it was handled.
   */
  receive(peer: string, text: string): Promise<void> {
    const state = this.#peers.get(peer);
    if (!state || this.#cut.has(peer)) return Promise.resolve();
    state.queue = state.queue.then(() => this.#handle(peer, state, text));
    return state.queue;
  }

  /** Cuts a peer: nothing more is read from it or sent to it. */
  cut(peer: string, why: string): void {
    if (this.#cut.has(peer)) return;
    this.#cut.add(peer);
    this.#peers.delete(peer);
    this.host.cut?.(peer, why);
  }

  async #handle(peer: string, state: PeerState, text: string): Promise<void> {
    if (this.#cut.has(peer)) return;
    if (text.length > MAX_SYNC_MESSAGE) return this.cut(peer, "oversized");
    let message: unknown;
    try {
      message = JSON.parse(text);
    } catch {
      return this.cut(peer, "not JSON");
    }
    const { t } = (message ?? {}) as { t?: unknown };
    if (t === "have") return this.#have(peer, state, message);
    if (t === "upd") return await this.#updates(peer, state, message);
    this.cut(peer, "an unknown message");
  }

  #have(peer: string, state: PeerState, message: unknown): void {
    const summary = summaryOf(message);
    if (!summary) return this.cut(peer, "a malformed summary");
    if (--state.asks < 0) return this.cut(peer, "a summary unasked for");
    const { updates, more } = this.host.log.missingFor(
      summary,
      ROUND_BYTES,
      ROUND_UPDATES,
    );
    if (more) state.asks++;
    if (updates.length === 0 && !more) return;
    this.wire.send(
      peer,
      JSON.stringify({ t: "upd", u: updates, more, r: true }),
    );
  }

  async #updates(
    peer: string,
    state: PeerState,
    message: unknown,
  ): Promise<void> {
    const { u, more, r } = message as {
      u?: unknown;
      more?: unknown;
      r?: unknown;
    };
    const answer = r === true;
    if (
      !Array.isArray(u) || u.length > (answer ? ROUND_UPDATES : 1) ||
      !u.every(isUpdate)
    ) {
      return this.cut(peer, "a malformed batch");
    }
    if (answer && --state.answers < 0) {
      return this.cut(peer, "a batch unasked for");
    }
    const { log } = this.host;
    let progress = false;
    for (const update of u) {
      if (log.has(update)) {
        if (!answer && ++state.duplicates > MAX_DUPLICATES) {
          return this.cut(peer, "a flood of duplicates");
        }
        continue;
      }
      if (!await this.host.verify(update)) {
        return this.cut(peer, "an update that does not verify");
      }
      if (this.#cut.has(peer)) return;
      const added = log.add(update);
      if (added === "full") break; // ask no more
      if (added === "duplicate") continue; // another peer's came first
      progress = true;
      this.host.added(update);
    }
    // Another round only while rounds bring something new.
    if (answer && more === true && progress) this.#sendHave(peer, state);
  }

  #sendHave(peer: string, state: PeerState): void {
    state.answers++;
    this.wire.send(
      peer,
      JSON.stringify({ t: "have", h: this.host.log.summary() }),
    );
  }
}

/** A well-formed update: author, sequence, body in bounds, signature. */
export function isUpdate(value: unknown): value is SignedUpdate {
  if (typeof value !== "object" || value === null) return false;
  const { a, n, b, s } = value as Partial<SignedUpdate>;
  return typeof a === "string" && AUTHOR.test(a) &&
    Number.isSafeInteger(n) && n! >= 1 &&
    typeof b === "string" && b.length <= MAX_UPDATE_BYTES &&
    byteLength(b) <= MAX_UPDATE_BYTES &&
    typeof s === "string" && /^[A-Za-z0-9_-]{86}$/.test(s) &&
    Object.keys(value).length === 4;
}

/** The summary of a `have` message, or undefined when it is malformed. */
function summaryOf(message: unknown): Summary | undefined {
  const { h } = message as { h?: unknown };
  if (typeof h !== "object" || h === null || Array.isArray(h)) return undefined;
  const entries = Object.entries(h);
  if (entries.length > MAX_LOG_UPDATES) return undefined;
  const summary: Summary = Object.create(null);
  for (const [author, n] of entries) {
    if (!AUTHOR.test(author) || !Number.isSafeInteger(n) || n < 0) {
      return undefined;
    }
    summary[author] = n;
  }
  return summary;
}
