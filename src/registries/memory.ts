/**
 * A registry that keeps everything in memory: fast, and lost on restart.
 *
 * @module
 */

import type { PodRecord, Registry } from "../types.ts";

/**
 * Keeps records and blobs in maps.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { MemoryRegistry } from "./memory.ts";
 *
 * const registry = new MemoryRegistry();
 * assert.equal(await registry.getRecord("AAAAAAAAAAAA"), null);
 * ```
 */
export class MemoryRegistry implements Registry {
  #records = new Map<string, PodRecord>();
  #blobs = new Map<string, Uint8Array>();

  /** Stores a copy of the record and the blob. */
  putPod(record: PodRecord, blob: Uint8Array): Promise<void> {
    this.#records.set(record.id, { ...record });
    this.#blobs.set(record.id, blob);
    return Promise.resolve();
  }

  /** A copy of the record of `id`, or null. */
  getRecord(id: string): Promise<PodRecord | null> {
    const record = this.#records.get(id);
    return Promise.resolve(record ? { ...record } : null);
  }

  /** The blob of `id`, or null. */
  getBlob(id: string): Promise<Uint8Array | null> {
    return Promise.resolve(this.#blobs.get(id) ?? null);
  }

  /** Counts one more hit for `id`. */
  bumpHits(id: string): Promise<void> {
    const record = this.#records.get(id);
    if (record) record.hits += 1;
    return Promise.resolve();
  }

  /** Removes the record and blob of `id`; whether there was one. */
  deletePod(id: string): Promise<boolean> {
    this.#blobs.delete(id);
    return Promise.resolve(this.#records.delete(id));
  }

  /** Number of stored pods. */
  get size(): number {
    return this.#records.size;
  }
}
