/**
 * The peers parked in one process: each away peer's place (its session and
 * resume token), the signals held for it within the broker's budget
 * (`held.ts`), and its window of {@linkcode RESUME_MS}. A broker without a
 * bus keeps its own (`membership.ts`), and `LocalBus` keeps them for its
 * nodes; Redis keeps them for `RedisBus` (`redis_resume.ts`).
 *
 * @module
 */

import {
  type Held,
  HeldBudget,
  HeldSignals,
  MAX_HELD_BYTES_TOTAL,
  RESUME_MS,
} from "./held.ts";

interface Parked {
  readonly session: string;
  readonly token: string;
  readonly held: HeldSignals;
  readonly timer: ReturnType<typeof setTimeout>;
}

/**
 * Parked peers by id and by token, each for its window.
 *
 * @example Park, hold, resume
 * ```ts
 * import assert from "node:assert/strict";
 * import { ParkedPeers } from "./parked.ts";
 *
 * const parked = new ParkedPeers(() => {});
 * parked.park("p1", "room", "token");
 * assert.equal(parked.hold("room", "p1", "p2", '{"x":1}'), true);
 * assert.equal(parked.resume("other-room", "token"), null);
 * assert.deepEqual(parked.resume("room", "token"), {
 *   peerId: "p1",
 *   held: { signals: [{ from: "p2", data: '{"x":1}' }], dropped: [] },
 * });
 * assert.equal(parked.has("p1"), false);
 * ```
 */
export class ParkedPeers {
  #byId = new Map<string, Parked>();
  #byToken = new Map<string, string>();
  readonly #budget: HeldBudget;
  readonly #expired: (peerId: string, session: string) => void;

  /**
   * @param expired Told of a peer whose window ended unresumed (it is
   * forgotten here first).
   * @param maxHeldBytes The bytes all of them may hold together.
   */
  constructor(
    expired: (peerId: string, session: string) => void,
    maxHeldBytes: number = MAX_HELD_BYTES_TOTAL,
  ) {
    this.#expired = expired;
    this.#budget = new HeldBudget(maxHeldBytes);
  }

  /** Whether `peerId` is parked. */
  has(peerId: string): boolean {
    return this.#byId.has(peerId);
  }

  /** Parks `peerId` of `session` under `token` for {@linkcode RESUME_MS}. */
  park(peerId: string, session: string, token: string): void {
    const timer = setTimeout(() => this.#expire(peerId), RESUME_MS);
    const held = new HeldSignals(this.#budget);
    this.#byId.set(peerId, { session, token, held, timer });
    this.#byToken.set(token, peerId);
  }

  /**
   * Holds signal data for `peerId` when it is parked in `session`.
   *
   * @returns Whether it was held (false: not parked there).
   */
  hold(session: string, peerId: string, from: string, data: string): boolean {
    const parked = this.#byId.get(peerId);
    if (parked?.session !== session) return false;
    parked.held.push(from, data);
    return true;
  }

  /**
   * Unparks the peer of `token` in `session`: its id and what was held.
   *
   * @returns Null when no peer of `session` is parked under `token`.
   */
  resume(
    session: string,
    token: string,
  ): { peerId: string; held: Held } | null {
    const peerId = this.#byToken.get(token);
    const parked = peerId === undefined ? undefined : this.#byId.get(peerId);
    if (parked === undefined || parked.session !== session) return null;
    const held = parked.held.take();
    this.#unpark(peerId!, parked);
    return { peerId: peerId!, held };
  }

  /** Ends every window now, each peer told as expired. */
  expireAll(): void {
    for (const peerId of [...this.#byId.keys()]) this.#expire(peerId);
  }

  /** Forgets every parked peer, untold, and their timers. */
  clear(): void {
    for (const [peerId, parked] of [...this.#byId]) {
      this.#unpark(peerId, parked);
    }
  }

  #unpark(peerId: string, parked: Parked): void {
    clearTimeout(parked.timer);
    parked.held.take();
    this.#byId.delete(peerId);
    this.#byToken.delete(parked.token);
  }

  #expire(peerId: string): void {
    const parked = this.#byId.get(peerId);
    if (parked === undefined) return;
    this.#unpark(peerId, parked);
    this.#expired(peerId, parked.session);
  }
}
