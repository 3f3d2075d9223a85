/**
 * A rate per client address for an HTTP route: a token bucket of the
 * signaling rate limit's rule (`RateLimit`) for each address, the buckets
 * kept in a bounded least-recently-used map, so that no stream of new
 * addresses grows it.
 *
 * @module
 */

import { Lru } from "../_util/lru.ts";
import { type Bucket, RateLimit } from "../signaling/rate_limit.ts";

/**
 * Addresses whose buckets are kept at most. Past it the least recently seen
 * address is forgotten: it starts again with a full bucket, which only ever
 * lets more through, never refuses an honest client.
 */
export const MAX_RATED_ADDRESSES = 10_000;

/**
 * Requests per client address, refilled evenly over a minute.
 *
 * @example Two a minute, then a refusal
 * ```ts
 * import assert from "node:assert/strict";
 * import { AddressRate } from "./address_rate.ts";
 *
 * const rate = new AddressRate(2);
 * assert.deepEqual(
 *   [rate.take("a", 0), rate.take("a", 0), rate.take("a", 0)],
 *   [true, true, false],
 * );
 * assert.equal(rate.take("b", 0), true);
 * assert.equal(rate.take("a", 30_000), true);
 * assert.equal(rate.retryAfterSeconds, 30);
 * ```
 */
export class AddressRate {
  readonly #rule: RateLimit;
  readonly #buckets = new Lru<string, Bucket>({
    maxEntries: MAX_RATED_ADDRESSES,
  });
  /** Seconds until a refused address has a token again, at most. */
  readonly retryAfterSeconds: number;

  /**
   * Makes the rate.
   *
   * @param perMinute Requests an address may make at once, and the refill
   * of a minute.
   */
  constructor(perMinute: number) {
    this.#rule = new RateLimit(perMinute, perMinute / 60);
    this.retryAfterSeconds = Math.ceil(60 / perMinute);
  }

  /**
   * Takes a token for one request of `address`.
   *
   * @param address The client address ("" when unknown: one shared bucket).
   * @param now The time (ms since the epoch).
   * @returns Whether the request may go ahead.
   */
  take(address: string, now: number = Date.now()): boolean {
    let bucket = this.#buckets.get(address);
    if (bucket === undefined) {
      bucket = this.#rule.bucket(now);
      this.#buckets.set(address, bucket);
    }
    return this.#rule.take(bucket, now) === "accept";
  }
}
