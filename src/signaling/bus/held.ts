/**
 * What a broker keeps of a peer whose socket went away and who may resume
 * (DESIGN.md section 10.4): how long, how much, and the signals addressed
 * to it meanwhile, oldest first, bounded. The bounds are the protocol's:
 * {@linkcode RESUME_MS}, {@linkcode MAX_HELD_SIGNALS} and
 * {@linkcode MAX_HELD_BYTES}; past them the oldest signal is dropped and
 * its sender remembered, so that the peer is told to restart ICE with it.
 *
 * @module
 */

/**
 * How long a peer's place is kept after its socket went away: 30 seconds,
 * the protocol's (not an option; written in seconds so that no option's
 * default is read into it).
 */
export const RESUME_MS: number = 30 * 1000;

/** The most signals held for one peer while it is away. */
export const MAX_HELD_SIGNALS = 64;

/** The most bytes of signal data held for one peer while it is away. */
export const MAX_HELD_BYTES = 262_144;

/**
 * The most bytes of signal data held for all the away peers of one broker
 * (or one in-process bus) together: each away peer may hold
 * {@linkcode MAX_HELD_BYTES}, and peers that come and go could otherwise
 * make it hold that many times over for the window.
 */
export const MAX_HELD_BYTES_TOTAL: number = 64 * 1024 * 1024;

/**
 * The bytes that the away peers of one broker hold together, within
 * {@linkcode MAX_HELD_BYTES_TOTAL} (or `max`).
 */
export class HeldBudget {
  /** The bytes held now. */
  used = 0;
  /** The most bytes held at once. */
  readonly max: number;

  /** @param max The most bytes held at once. */
  constructor(max: number = MAX_HELD_BYTES_TOTAL) {
    this.max = max;
  }
}

/**
 * The bytes of signal data one broker put into holds on a shared bus
 * (Redis) over the last {@linkcode RESUME_MS}, within `max`. A held signal
 * is gone by the end of its peer's window, so what the broker's peers can
 * make the bus hold at once, for every away peer there together, stays
 * within `max` whatever they do. Counted by the second, and a little long
 * (up to one second more than the window): a bound, never a leak.
 *
 * @example Full until a window has passed
 * ```ts
 * import assert from "node:assert/strict";
 * import { HeldWindow, RESUME_MS } from "./held.ts";
 *
 * let now = 0;
 * const window = new HeldWindow(100, () => now);
 * assert.equal(window.take(60), true);
 * assert.equal(window.take(60), false);
 * window.give(60);
 * assert.equal(window.take(40), true);
 * now += RESUME_MS + 1000;
 * assert.equal(window.take(100), true);
 * ```
 */
export class HeldWindow {
  /** The most bytes taken within one window. */
  readonly max: number;
  readonly #now: () => number;
  // Bytes taken in each second of the window, by second modulo its length.
  readonly #seconds = new Array<number>(WINDOW_SECONDS).fill(0);
  #second = -Infinity;
  #used = 0;

  /**
   * Makes an empty window.
   *
   * @param max The most bytes taken within one window.
   * @param now The clock, in milliseconds. @default {Date.now}
   * @throws {TypeError} When `max` is not a whole number of at least 1.
   */
  constructor(
    max: number = MAX_HELD_BYTES_TOTAL,
    now: () => number = Date.now,
  ) {
    if (!Number.isSafeInteger(max) || max < 1) {
      throw new TypeError(
        `Cannot bound held signals to ${max} bytes: expected a whole number of at least 1`,
      );
    }
    this.max = max;
    this.#now = now;
  }

  /**
   * Takes `bytes` of the window for a signal that may be held.
   *
   * @returns False, and nothing taken, when they would pass `max`.
   */
  take(bytes: number): boolean {
    const second = this.#advance();
    if (this.#used + bytes > this.max) return false;
    this.#seconds[windowSlot(second)]! += bytes;
    this.#used += bytes;
    return true;
  }

  /** Gives back `bytes` taken for a signal that was not held after all. */
  give(bytes: number): void {
    const slot = windowSlot(this.#advance());
    // Taken in an earlier second: that second keeps them until it ends.
    const back = Math.min(bytes, this.#seconds[slot]!);
    this.#seconds[slot]! -= back;
    this.#used -= back;
  }

  // Forgets the seconds that left the window; returns the current one.
  #advance(): number {
    const second = Math.floor(this.#now() / 1000);
    const from = Math.max(this.#second + 1, second - WINDOW_SECONDS + 1);
    for (let s = from; s <= second; s++) {
      this.#used -= this.#seconds[windowSlot(s)]!;
      this.#seconds[windowSlot(s)] = 0;
    }
    this.#second = Math.max(this.#second, second);
    return this.#second;
  }
}

/** The seconds a {@linkcode HeldWindow} counts: the window and the current one. */
const WINDOW_SECONDS = Math.ceil(RESUME_MS / 1000) + 1;

/** Where a second's count is kept (seconds before 1970 included). */
function windowSlot(second: number): number {
  return ((second % WINDOW_SECONDS) + WINDOW_SECONDS) % WINDOW_SECONDS;
}

/** The shape of a resume token: 32 characters of `[A-Za-z0-9]`. */
export const RESUME_TOKEN: RegExp = /^[A-Za-z0-9]{32}$/;

/** A signal held for a peer: its sender and its data as JSON text. */
export interface HeldSignal {
  /** The sender's peer id. */
  from: string;
  /** The signal's data as JSON text (checked again when delivered). */
  data: string;
}

/** What a resume hands back: the held signals, and whose were dropped. */
export interface Held {
  /** The signals held, oldest first. */
  signals: HeldSignal[];
  /** The senders of signals dropped past the bounds (each once). */
  dropped: string[];
}

/**
 * The signals held for one away peer, oldest first, within
 * {@linkcode MAX_HELD_SIGNALS} and {@linkcode MAX_HELD_BYTES}.
 *
 * @example The oldest goes first
 * ```ts
 * import assert from "node:assert/strict";
 * import { HeldSignals, MAX_HELD_SIGNALS } from "./held.ts";
 *
 * const held = new HeldSignals();
 * for (let i = 0; i <= MAX_HELD_SIGNALS; i++) held.push("a", `${i}`);
 * const { signals, dropped } = held.take();
 * assert.equal(signals.length, MAX_HELD_SIGNALS);
 * assert.equal(signals[0]!.data, "1");
 * assert.deepEqual(dropped, ["a"]);
 * ```
 */
export class HeldSignals {
  #signals: { from: string; data: string; bytes: number }[] = [];
  #bytes = 0;
  #dropped = new Set<string>();
  readonly #budget: HeldBudget;

  /**
   * @param budget The bytes all the away peers of the broker may hold
   * together (a budget of its own when absent).
   */
  constructor(budget: HeldBudget = new HeldBudget()) {
    this.#budget = budget;
  }

  /**
   * Holds one signal, dropping the oldest past the bounds (this peer's, or
   * the broker's: then the new one too, when nothing older is left).
   */
  push(from: string, data: string): void {
    const bytes = heldBytes(data);
    const over = () =>
      this.#signals.length > MAX_HELD_SIGNALS ||
      this.#bytes > MAX_HELD_BYTES || this.#budget.used > this.#budget.max;
    this.#hold(from, data, bytes);
    while (this.#signals.length > 0 && over()) this.#drop();
  }

  /** Everything held, and empties it (its bytes go back to the budget). */
  take(): Held {
    const held = {
      signals: this.#signals.map(({ from, data }) => ({ from, data })),
      dropped: [...this.#dropped],
    };
    this.#budget.used -= this.#bytes;
    this.#signals = [];
    this.#bytes = 0;
    this.#dropped.clear();
    return held;
  }

  #hold(from: string, data: string, bytes: number): void {
    this.#signals.push({ from, data, bytes });
    this.#bytes += bytes;
    this.#budget.used += bytes;
  }

  #drop(): void {
    const old = this.#signals.shift()!;
    this.#bytes -= old.bytes;
    this.#budget.used -= old.bytes;
    // Bounded: a sender is remembered once, and at most as many as held.
    if (this.#dropped.size < MAX_HELD_SIGNALS) this.#dropped.add(old.from);
  }
}

const encoder = new TextEncoder();

/**
 * What a held signal counts against the bounds: its data's UTF-8 bytes (as
 * Redis counts them).
 *
 * @param data The signal's data as JSON text.
 * @returns Its size in bytes.
 */
export function heldBytes(data: string): number {
  return encoder.encode(data).byteLength;
}
