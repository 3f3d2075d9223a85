/**
 * The pace an upload body must keep while it streams in: no pause of the
 * window's length, at least the minimum rate over every window (a sliding
 * window, so bytes sent early earn no credit for later), and the whole
 * body within a total deadline of 40 windows.
 *
 * @module
 */

/**
 * The slowest a body may arrive, in bytes a second, over any window of
 * `uploadTimeoutMs` (the window is the same as the longest pause). A 50
 * MiB pod at this rate would take 14 hours; any real link is far faster,
 * and the total deadline ends such a body long before.
 */
export const MIN_UPLOAD_BYTES_PER_SECOND = 1024;

/**
 * A body must be whole within this many windows (`uploadTimeoutMs`): 10
 * minutes at the default of 15 s, time for 50 MiB at 90 KB a second. An
 * operator whose authors upload over slower links raises
 * `uploadTimeoutMs`, and with it this deadline.
 */
export const UPLOAD_DEADLINE_WINDOWS = 40;

/** Why a body must give up: the rule that ends its wait first. */
export type PaceLimit = "pause" | "slow" | "deadline";

/** Arrivals closer together than this share of the window share a mark. */
const MARKS_PER_WINDOW = 32;

/**
 * One body's pace. Each window of `windowMs` that ends while the body is
 * still arriving must hold {@linkcode MIN_UPLOAD_BYTES_PER_SECOND} ×
 * window bytes (the first window counts from the start, so a body needs
 * that much in its first window too), and the body must be whole within
 * {@linkcode UPLOAD_DEADLINE_WINDOWS} windows. Arrivals are kept as at most 34 marks (time of the first
 * arrival in a mark, bytes received by its last), so a mark's bytes count
 * as arrived at its start: at most a 32nd of the window stricter.
 *
 * @example A body that sent much at once, then trickles
 * ```ts
 * import assert from "node:assert/strict";
 * import { UploadPace } from "./upload_pace.ts";
 *
 * const pace = new UploadPace(1_000, 0);
 * pace.add(1_000_000, 10); // a megabyte up front
 * pace.add(1, 900);
 * // Within a window of the burst, the trickle must have brought 1,024 bytes.
 * assert.deepEqual(pace.next(900, 1_000), { waitMs: 110, limit: "slow" });
 * ```
 */
export class UploadPace {
  #windowMs: number;
  #minBytes: number;
  #endsAt: number;
  /** Times and running totals, oldest first; the last is the newest. */
  #marks: { at: number; total: number }[];
  #total = 0;

  /**
   * @param windowMs The window, and the longest pause (`uploadTimeoutMs`).
   * @param now The start of the body, on `performance.now()`'s clock.
   */
  constructor(windowMs: number, now: number) {
    this.#windowMs = windowMs;
    this.#minBytes = Math.ceil(
      MIN_UPLOAD_BYTES_PER_SECOND * windowMs / 1000,
    );
    this.#endsAt = now + UPLOAD_DEADLINE_WINDOWS * windowMs;
    this.#marks = [{ at: now, total: 0 }];
  }

  /** How many arrival marks are kept (at most 34, whatever the chunks). */
  get marks(): number {
    return this.#marks.length;
  }

  /** Records `bytes` more, arrived at `now`. */
  add(bytes: number, now: number): void {
    this.#total += bytes;
    const last = this.#marks[this.#marks.length - 1]!;
    if (now - last.at < this.#windowMs / MARKS_PER_WINDOW && last.total > 0) {
      last.total = this.#total;
    } else {
      this.#marks.push({ at: now, total: this.#total });
    }
    // A mark that the newest bytes alone outweigh never decides again.
    const floor = this.#total - this.#minBytes;
    while (this.#marks.length > 1 && this.#marks[0]!.total <= floor) {
      this.#marks.shift();
    }
  }

  /**
   * How long the body may wait for its next bytes from `now`, and which
   * rule ends the wait: a pause of `pauseMs`, the window's minimum, or the
   * total deadline, whichever comes first (0 or less: already over).
   */
  next(now: number, pauseMs: number): { waitMs: number; limit: PaceLimit } {
    const floor = this.#total - this.#minBytes;
    // The first mark after which fewer than the minimum arrived: its window
    // fails when it ends with no more bytes.
    const mark = this.#marks.find((m) => m.total > floor) ??
      this.#marks[this.#marks.length - 1]!;
    const slowAt = mark.at + this.#windowMs;
    let waitMs = pauseMs;
    let limit: PaceLimit = "pause";
    if (slowAt - now < waitMs) {
      waitMs = slowAt - now;
      limit = "slow";
    }
    if (this.#endsAt - now < waitMs) {
      waitMs = this.#endsAt - now;
      limit = "deadline";
    }
    return { waitMs, limit };
  }
}
