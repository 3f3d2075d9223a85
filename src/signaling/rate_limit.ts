/**
 * The signaling rate limit: a token bucket per socket, refilled by elapsed
 * time. The bucket's state lives on the socket's own record (three
 * numbers), the rule here once.
 *
 * @module
 */

/** The state of one socket's bucket. */
export interface Bucket {
  /** Tokens left (fractional between refills). */
  tokens: number;
  /** When the bucket was last refilled (ms since the epoch). */
  refilledAt: number;
  /** Frames dropped in a row since the last accepted one. */
  dropped: number;
}

/**
 * What to do with a frame: `accept` it; `warn` (drop it and send one
 * `rate_limited` notice: the first frame dropped in a row); `drop` it
 * silently; or `close` the socket (more dropped frames in a row than the
 * burst).
 */
export type RateVerdict = "accept" | "warn" | "drop" | "close";

/**
 * A token bucket rule: `burst` frames at once, refilled at `perSecond`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { RateLimit } from "./rate_limit.ts";
 *
 * const limit = new RateLimit(2, 1);
 * const bucket = limit.bucket(0);
 * assert.deepEqual(
 *   [0, 0, 0, 0, 0, 0].map((now) => limit.take(bucket, now)),
 *   ["accept", "accept", "warn", "drop", "close", "close"],
 * );
 * assert.equal(limit.take(bucket, 1_000), "accept");
 * ```
 */
export class RateLimit {
  readonly #burst: number;
  readonly #perSecond: number;

  /**
   * Makes the rule.
   *
   * @param burst Frames a socket may send at once.
   * @param perSecond Tokens added per second.
   */
  constructor(burst: number, perSecond: number) {
    this.#burst = burst;
    this.#perSecond = perSecond;
  }

  /**
   * A full bucket.
   *
   * @param now The time (ms since the epoch).
   * @returns The bucket's state.
   */
  bucket(now: number = Date.now()): Bucket {
    return { tokens: this.#burst, refilledAt: now, dropped: 0 };
  }

  /**
   * Takes a token for one frame, or `cost` tokens for a frame that fans out
   * to `cost` sockets (at most a full bucket, so any frame can pass).
   *
   * @param bucket The socket's bucket (updated).
   * @param now The time (ms since the epoch).
   * @param cost Tokens the frame costs.
   * @returns What to do with the frame.
   */
  take(bucket: Bucket, now: number = Date.now(), cost = 1): RateVerdict {
    bucket.tokens = Math.min(
      this.#burst,
      bucket.tokens + ((now - bucket.refilledAt) * this.#perSecond) / 1000,
    );
    bucket.refilledAt = now;
    const price = Math.min(cost, this.#burst);
    if (bucket.tokens >= price) {
      bucket.tokens -= price;
      bucket.dropped = 0;
      return "accept";
    }
    bucket.dropped += 1;
    if (bucket.dropped === 1) return "warn";
    return bucket.dropped > this.#burst ? "close" : "drop";
  }
}
