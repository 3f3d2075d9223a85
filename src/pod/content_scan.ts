/**
 * The manifest slot found, and the signed content hashed, while a pod's
 * bytes arrive: the SHA-256 that `contentSha256` names covers every byte
 * but the payload, so each byte is hashed (or skipped, in the payload)
 * once, as it comes, instead of in a second pass over the whole pod once
 * it is there. Its result is only a candidate: `verifyPod` takes it when
 * the payload it names is the one {@linkcode locatePayload} finds in the
 * whole pod, and hashes the pod itself otherwise.
 *
 * @module
 */

import type { Hash } from "node:crypto";
import { createSha256 } from "../_util/hash.ts";
import { findSlots, SLOT_LITERAL } from "./format.ts";

/** The signed content's digest, and where the payload it skipped is. */
export interface ScannedContent {
  /** Offset of the first payload byte. */
  payloadStart: number;
  /** Offset just past the last payload byte. */
  payloadEnd: number;
  /** SHA-256 of the bytes before `payloadStart` and from `payloadEnd`. */
  contentSha256: Uint8Array;
}

const SLOT_LENGTH = new TextEncoder().encode(SLOT_LITERAL).length;
const LESS_THAN = 0x3c;

/**
 * Follows one pod as its bytes arrive in one growing buffer.
 *
 * @example A pod fed in two pieces
 * ```ts
 * import assert from "node:assert/strict";
 * import { ContentScan } from "./content_scan.ts";
 * import { SLOT_LITERAL } from "./format.ts";
 *
 * const pod = new TextEncoder().encode(
 *   `<p>a</p>${SLOT_LITERAL}eyJ9</script><p>b</p>`,
 * );
 * const scan = new ContentScan();
 * scan.update(pod, 20);
 * scan.update(pod, pod.length);
 * const found = scan.result()!;
 * assert.equal(found.payloadStart, 8 + SLOT_LITERAL.length);
 * assert.equal(found.payloadEnd, found.payloadStart + 4);
 * ```
 */
export class ContentScan {
  readonly #hash: Hash = createSha256();
  /** Bytes before this offset are hashed, or skipped as payload. */
  #done = 0;
  /** Where the search for the slot goes on. */
  #searchFrom = 0;
  #payloadStart = -1;
  #payloadEnd = -1;

  /**
   * Takes the bytes that arrived since the last call.
   *
   * @param bytes The buffer the pod arrives in (its first `size` bytes
   * are the pod so far; earlier ones never change).
   * @param size How many bytes of it have arrived.
   */
  update(bytes: Uint8Array, size: number): void {
    if (this.#payloadStart < 0) {
      const slot = findSlots(bytes.subarray(this.#searchFrom, size))[0];
      if (slot === undefined) {
        // A slot that starts here may still end in the next bytes.
        this.#searchFrom = Math.max(0, size - SLOT_LENGTH + 1);
        this.#take(bytes, size);
        return;
      }
      this.#payloadStart = this.#searchFrom + slot + SLOT_LENGTH;
      this.#take(bytes, this.#payloadStart);
    }
    if (this.#payloadEnd < 0) {
      const end = bytes.subarray(0, size).indexOf(LESS_THAN, this.#done);
      if (end < 0) {
        this.#done = size;
        return;
      }
      this.#payloadEnd = this.#done = end;
    }
    this.#take(bytes, size);
  }

  /** What was found once every byte was given, or null without a payload. */
  result(): ScannedContent | null {
    if (this.#payloadEnd < 0) return null;
    return {
      payloadStart: this.#payloadStart,
      payloadEnd: this.#payloadEnd,
      contentSha256: new Uint8Array(this.#hash.digest()),
    };
  }

  #take(bytes: Uint8Array, to: number): void {
    if (to <= this.#done) return;
    this.#hash.update(bytes.subarray(this.#done, to));
    this.#done = to;
  }
}
