/**
 * The broker-wide budget of upload bytes in flight. An upload holds what it
 * has received, and its hold grows as bytes arrive: a request head holds
 * nothing, and bytes a client announced but has not sent hold nothing, so
 * neither heads nor trickling connections can keep other uploads out. Past the budget an
 * upload is refused, before its body is read or as it grows, so no number
 * of slow or large uploads can make the broker hold more. Optionally, one
 * client address may have only so many uploads in flight.
 *
 * @module
 */

/** One upload's share of an {@linkcode UploadBudget}. */
export interface UploadReservation {
  /** Bytes held now. */
  readonly bytes: number;
  /**
   * Grows the hold to `total` bytes (a smaller `total` changes nothing).
   *
   * @param total The bytes the upload holds from now on.
   * @returns Whether it fits; when not, the hold is unchanged.
   */
  grow(total: number): boolean;
  /** Gives the bytes back. Idempotent; a released reservation never grows. */
  release(): void;
}

/**
 * Counts held upload bytes against a limit. An upload that is the only
 * holder always gets what it asks for, so a budget below the blob limit
 * still takes one upload.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { UploadBudget } from "./upload_budget.ts";
 *
 * const budget = new UploadBudget(100);
 * const a = budget.reserve(10)!;
 * const b = budget.reserve(10)!;
 * assert.ok(a.grow(60));
 * assert.equal(b.grow(50), false);
 * assert.equal(budget.reserve(40), null);
 * a.release();
 * assert.ok(b.grow(90));
 * ```
 */
export class UploadBudget {
  #limit: number;
  #held = 0;
  #perAddress: number;
  /** Uploads in flight by client address (only while the cap is on). */
  #byAddress = new Map<string, number>();

  /**
   * @param limit Bytes that may be held at once.
   * @param perAddress Uploads one client address may have in flight at
   * once; 0 for no cap.
   */
  constructor(limit: number, perAddress = 0) {
    this.#limit = limit;
    this.#perAddress = perAddress;
  }

  /**
   * Whether `address` has as many uploads in flight as the per-address cap
   * allows (always false without a cap, or without an address).
   */
  isAddressFull(address: string | undefined): boolean {
    return this.#perAddress > 0 && address !== undefined &&
      (this.#byAddress.get(address) ?? 0) >= this.#perAddress;
  }

  /**
   * Opens a reservation holding `bytes`, or refuses when they do not fit,
   * or when `address` is at its cap of uploads in flight.
   *
   * @param bytes What the upload holds to begin with (0 before its first
   * byte).
   * @param address The client's address, counted against the cap.
   * @returns The reservation, or null when over budget or cap.
   */
  reserve(bytes: number, address?: string): UploadReservation | null {
    if (this.isAddressFull(address)) return null;
    let own = 0;
    let released = false;
    const take = (total: number): boolean => {
      if (released) return false;
      const more = total - own;
      if (more <= 0) return true;
      if (this.#held > own && this.#held + more > this.#limit) return false;
      this.#held += more;
      own = total;
      return true;
    };
    if (!take(bytes)) return null;
    const counted = this.#perAddress > 0 ? address : undefined;
    if (counted !== undefined) {
      this.#byAddress.set(counted, (this.#byAddress.get(counted) ?? 0) + 1);
    }
    return {
      get bytes() {
        return own;
      },
      grow: take,
      release: () => {
        if (released) return;
        released = true;
        this.#held -= own;
        own = 0;
        if (counted !== undefined) this.#uncount(counted);
      },
    };
  }

  #uncount(address: string): void {
    const left = (this.#byAddress.get(address) ?? 1) - 1;
    if (left > 0) this.#byAddress.set(address, left);
    else this.#byAddress.delete(address);
  }
}
