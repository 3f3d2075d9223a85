/**
 * A registry that keeps everything in memory: fast, and lost on restart.
 *
 * @module
 */

import type { PodRecord, Registry } from "./types.ts";

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
  #deleted = new Set<string>();

  /** Stores a copy of the record and the blob. */
  putPod(record: PodRecord, blob: Uint8Array): Promise<void> {
    if (this.#records.has(record.id) || this.#deleted.has(record.id)) {
      return Promise.reject(
        new Error(`Cannot store pod '${record.id}': the id is taken`),
      );
    }
    this.#records.set(record.id, {
      ...record,
      version: record.version ?? 1,
      updatedAt: record.updatedAt ?? record.uploadedAt,
    });
    this.#blobs.set(record.id, blob);
    return Promise.resolve();
  }

  /**
   * Replaces the pod if its `sha256` is still `expectedSha256` (compare and
   * swap, in one synchronous step). The stored record is a new object, so
   * one read by {@linkcode MemoryRegistry.getRecordNow} before stays whole.
   */
  updatePod(
    record: PodRecord,
    blob: Uint8Array,
    expectedSha256: string,
  ): Promise<boolean> {
    const current = this.#records.get(record.id);
    if (current === undefined || current.sha256 !== expectedSha256) {
      return Promise.resolve(false);
    }
    this.#records.set(record.id, {
      ...record,
      hits: current.hits,
      uploadedAt: current.uploadedAt,
      version: (current.version ?? 1) + 1,
      updatedAt: record.updatedAt ?? new Date().toISOString(),
    });
    this.#blobs.set(record.id, blob);
    return Promise.resolve(true);
  }

  /** A copy of the record of `id`, or null. */
  getRecord(id: string): Promise<PodRecord | null> {
    const record = this.#records.get(id);
    return Promise.resolve(record ? { ...record } : null);
  }

  /** The stored record of `id` itself (not a copy), or null. */
  getRecordNow(id: string): Readonly<PodRecord> | null {
    return this.#records.get(id) ?? null;
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

  /**
   * Takes `id` down: removes its record and blob and keeps a tombstone, so
   * that its URL answers 410 from now on. Whether there was a pod.
   */
  deletePod(id: string): Promise<boolean> {
    this.#blobs.delete(id);
    const existed = this.#records.delete(id);
    if (existed) this.#deleted.add(id);
    return Promise.resolve(existed);
  }

  /** Whether `id` was taken down by {@linkcode MemoryRegistry.deletePod}. */
  isDeleted(id: string): Promise<boolean> {
    return Promise.resolve(this.#deleted.has(id));
  }

  /** Copies of the stored records, oldest first, of one owner key or all. */
  async *listPods(options: { owner?: string } = {}): AsyncIterable<PodRecord> {
    for (const record of [...this.#records.values()]) {
      if (options.owner === undefined || record.ownerPubkey === options.owner) {
        yield { ...record };
      }
    }
  }

  /** Number of stored pods. */
  get size(): number {
    return this.#records.size;
  }
}
