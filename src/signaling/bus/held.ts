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
  #signals: HeldSignal[] = [];
  #bytes = 0;
  #dropped = new Set<string>();

  /** Holds one signal, dropping the oldest past the bounds. */
  push(from: string, data: string): void {
    this.#signals.push({ from, data });
    this.#bytes += utf8Bytes(data);
    while (
      this.#signals.length > MAX_HELD_SIGNALS || this.#bytes > MAX_HELD_BYTES
    ) {
      const old = this.#signals.shift()!;
      this.#bytes -= utf8Bytes(old.data);
      // Bounded: a sender is remembered once, and at most as many as held.
      if (this.#dropped.size < MAX_HELD_SIGNALS) this.#dropped.add(old.from);
    }
  }

  /** Everything held, and empties it. */
  take(): Held {
    const held = { signals: this.#signals, dropped: [...this.#dropped] };
    this.#signals = [];
    this.#bytes = 0;
    this.#dropped.clear();
    return held;
  }
}

function utf8Bytes(text: string): number {
  return new TextEncoder().encode(text).byteLength;
}
