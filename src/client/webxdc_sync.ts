/**
 * How peers of one webxdc instance share its updates, on the room's data
 * channels (text messages; binary ones are the realtime channel's):
 *
 * - `{"t":"have","h":{AUTHOR:N}}`: a summary, per author the highest
 *   sequence number held and signed with none missing below. Sent to a
 *   peer when its channel opens, and again after each answer it marks
 *   `more` that brought something new.
 * - `{"t":"upd","u":[UPDATE...],"more":BOOL,"r":true}`: updates, each
 *   signed by its author. The answer (`r`) to a summary carries what the
 *   peer lacks, at most {@linkcode ROUND_BYTES} or {@linkcode ROUND_UPDATES}
 *   a round; a new update is sent to every peer at once, without `r`.
 *
 * A peer is cut (nothing more is read from it or sent to it, and its link
 * is closed through {@linkcode Wire.close}) when it sends what does not
 * parse or verify, an update over `sendUpdateMaxSize`, a batch over the
 * round's bounds, a summary nobody asked for, or floods
 * {@linkcode MAX_DUPLICATES} updates the log had already; and when it lies
 * in its summary. A summary claims, per author, updates the peer holds, so
 * an honest peer's answers are bound by it:
 *
 * - its summaries never take back what they claimed, nor claim more than a
 *   log may hold;
 * - an answer holds only updates past the summary it answers, and says
 *   `more` only when the round's bounds stopped it;
 * - its last answer (without `more`) leaves nothing it claimed missing
 *   here, and an answer comes within {@linkcode ANSWER_MS} whenever its
 *   summary claims what ours lacked.
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
 * How long a peer whose summary claims what ours lacks has to answer it
 * (ms): time enough for a full round on a slow relayed link.
 */
export const ANSWER_MS = 30_000;
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
  /** Closes the link to a peer that was cut (again, if it comes back). */
  close?(peer: string): void;
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
  /** How many summaries it may still send. */
  asks: number;
  /** Our summaries it has yet to answer, oldest first. */
  asked: Summary[];
  /** Its last summary: what it claims to hold. */
  claim?: Summary;
  duplicates: number;
  /** Cuts it when an answer its summary owes us does not come. */
  timer?: ReturnType<typeof setTimeout> | undefined;
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
  #answerMs: number;

  /**
   * A replicator with no peer yet.
   *
   * @param host The log and what to do with updates.
   * @param wire Where messages go.
   * @param answerMs How long an answer a peer's summary owes may take
   * ({@linkcode ANSWER_MS}).
   */
  constructor(host: Host, wire: Wire, answerMs: number = ANSWER_MS) {
    this.host = host;
    this.wire = wire;
    this.#answerMs = answerMs;
  }

  /** Whether a peer was cut. */
  isCut(peer: string): boolean {
    return this.#cut.has(peer);
  }

  /** The peers a message may go to (open and not cut). */
  get peers(): string[] {
    return [...this.#peers.keys()];
  }

  /** A peer's channel opened: it gets our summary; a peer cut is closed again. */
  join(peer: string): void {
    if (this.#cut.has(peer)) return this.wire.close?.(peer);
    if (this.#peers.has(peer)) return;
    const state: PeerState = {
      asks: 1,
      asked: [],
      duplicates: 0,
      queue: Promise.resolve(),
    };
    this.#peers.set(peer, state);
    this.#sendHave(peer, state);
  }

  /** A peer's channel closed. */
  leave(peer: string): void {
    clearTimeout(this.#peers.get(peer)?.timer);
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

  /** Cuts a peer: nothing more is read from it or sent to it; its link closes. */
  cut(peer: string, why: string): void {
    if (this.#cut.has(peer)) return;
    this.#cut.add(peer);
    this.leave(peer);
    this.host.cut?.(peer, why);
    this.wire.close?.(peer);
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
    const lie = claimProblem(state.claim, summary);
    if (lie) return this.cut(peer, lie);
    state.claim = summary;
    this.#expect(peer, state);
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
    const asked = answer ? state.asked.shift() : undefined;
    if (answer) {
      if (!asked) return this.cut(peer, "a batch unasked for");
      clearTimeout(state.timer); // it came: verifying it takes no deadline
      const lie = batchProblem(u, more === true, asked);
      if (lie) return this.cut(peer, lie);
    }
    const added = await this.#add(peer, state, u, answer);
    if (added === undefined || !asked) return;
    if (
      more !== true && !added.full && owes(state.claim, asked, this.host.log)
    ) {
      return this.cut(peer, "a summary that claims updates it did not send");
    }
    // Another round only while rounds bring something new.
    if (more === true && added.progress) this.#sendHave(peer, state);
    else this.#expect(peer, state);
  }

  /**
   * Adds a batch's updates the log lacks; undefined when the peer was cut
   * for them, else whether any was new and whether the log is full.
   */
  async #add(
    peer: string,
    state: PeerState,
    updates: SignedUpdate[],
    answer: boolean,
  ): Promise<{ progress: boolean; full: boolean } | undefined> {
    const { log } = this.host;
    let progress = false;
    for (const update of updates) {
      if (log.has(update)) {
        if (!answer && ++state.duplicates > MAX_DUPLICATES) {
          return void this.cut(peer, "a flood of duplicates");
        }
        continue;
      }
      if (!await this.host.verify(update)) {
        return void this.cut(peer, "an update that does not verify");
      }
      if (this.#cut.has(peer)) return undefined;
      const added = log.add(update);
      if (added === "full") return { progress, full: true }; // ask no more
      if (added === "duplicate") continue; // another peer's came first
      progress = true;
      this.host.added(update);
    }
    return { progress, full: false };
  }

  #sendHave(peer: string, state: PeerState): void {
    const summary = this.host.log.summary();
    state.asked.push(summary);
    this.wire.send(peer, JSON.stringify({ t: "have", h: summary }));
    this.#expect(peer, state);
  }

  /**
   * Arms the deadline of the oldest answer owed: when the peer's summary
   * claims what ours lacked, an honest peer answers at once.
   */
  #expect(peer: string, state: PeerState): void {
    clearTimeout(state.timer);
    state.timer = undefined;
    const asked = state.asked[0];
    if (!asked || !state.claim || !claimsMore(state.claim, asked)) return;
    state.timer = setTimeout(
      () => this.cut(peer, "a summary that claims updates it never sends"),
      this.#answerMs,
    );
  }
}

/**
 * Why a peer's new summary cannot be an honest one, after `before` (its
 * last): more updates than a log holds, or fewer of an author's than it
 * claimed already.
 */
function claimProblem(
  before: Summary | undefined,
  summary: Summary,
): string | undefined {
  let total = 0;
  for (const n of Object.values(summary)) total += n;
  if (total > MAX_LOG_UPDATES) {
    return "a summary that claims more than a log holds";
  }
  for (const [author, n] of Object.entries(before ?? {})) {
    if ((summary[author] ?? 0) < n) {
      return "a summary that takes back what it claimed";
    }
  }
  return undefined;
}

/**
 * Why an answer to `asked` cannot be an honest one: it holds an update
 * the summary it answers says we hold, more bytes than a round, or it says
 * `more` though the round's bounds did not stop it.
 */
function batchProblem(
  updates: SignedUpdate[],
  more: boolean,
  asked: Summary,
): string | undefined {
  if (updates.some((update) => update.n <= (asked[update.a] ?? 0))) {
    return "a batch of updates we said we hold";
  }
  const bytes = updates.reduce((sum, update) => sum + byteLength(update.b), 0);
  if (bytes > ROUND_BYTES) return "a batch over the round's bounds";
  // A round stops at ROUND_UPDATES, or before an update that would pass
  // ROUND_BYTES (an update has at most MAX_UPDATE_BYTES).
  if (
    more && updates.length < ROUND_UPDATES &&
    bytes <= ROUND_BYTES - MAX_UPDATE_BYTES
  ) return "a batch that says more but is not full";
  return undefined;
}

/** Whether `claim` holds, of some author, more than `summary`. */
function claimsMore(claim: Summary, summary: Summary): boolean {
  return Object.entries(claim).some(([author, n]) =>
    n > (summary[author] ?? 0)
  );
}

/**
 * Whether the log still lacks an update that `claim` says the peer holds
 * and that `asked` said we lacked: after its last answer, it owes them.
 */
function owes(
  claim: Summary | undefined,
  asked: Summary,
  log: UpdateLog,
): boolean {
  return Object.entries(claim ?? {}).some(([author, n]) =>
    n > (asked[author] ?? 0) && log.heldUpTo(author) < n
  );
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
