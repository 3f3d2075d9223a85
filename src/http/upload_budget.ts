/**
 * The broker-wide budget of upload bytes in flight. An upload reserves what
 * it may hold before its body is read; past the budget it is refused, so no
 * number of slow or large uploads can make the broker hold more.
 *
 * @module
 */

/**
 * Counts reserved upload bytes against a limit.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { UploadBudget } from "./upload_budget.ts";
 *
 * const budget = new UploadBudget(100);
 * const release = budget.reserve(60);
 * assert.equal(budget.reserve(60), null);
 * release!();
 * assert.notEqual(budget.reserve(60), null);
 * ```
 */
export class UploadBudget {
  #limit: number;
  #inFlight = 0;

  /** @param limit Bytes that may be reserved at once. */
  constructor(limit: number) {
    this.#limit = limit;
  }

  /** Bytes reserved now. */
  get inFlight(): number {
    return this.#inFlight;
  }

  /**
   * Reserves `bytes`, or refuses when they do not fit. An upload alone is
   * always let in, so a budget below the blob limit still takes one.
   *
   * @param bytes What the upload may hold.
   * @returns A release function (idempotent), or null when over budget.
   */
  reserve(bytes: number): (() => void) | null {
    if (this.#inFlight > 0 && this.#inFlight + bytes > this.#limit) {
      return null;
    }
    this.#inFlight += bytes;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.#inFlight -= bytes;
    };
  }
}
