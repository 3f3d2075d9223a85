/**
 * Hit counting in batches, for any registry whose store is costly to write:
 * a durable write per `GET` would cost more than serving the pod. Hits are
 * counted in memory and written together at most a second after the first
 * one; reads add the hits not yet written, and `close()` writes them.
 *
 * @module
 */

import { unrefTimer } from "../_util/host.ts";

/** How long counted hits wait before they are written together. */
export const HITS_WRITE_MS = 1_000;

/**
 * Writes counted hits (`id` → how many), all or none. It may throw or
 * reject: the hits then wait for the next write.
 */
export type WriteHits = (
  hits: ReadonlyMap<string, number>,
) => void | Promise<void>;

/**
 * Counts hits and writes them in batches through `write`. A registry
 * calls {@linkcode HitBatcher.count} from `bumpHits`, adds
 * {@linkcode HitBatcher.pending} to the `hits` it reads, and calls
 * {@linkcode HitBatcher.close} from its `close`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { HitBatcher } from "./hit_batcher.ts";
 *
 * const written = new Map<string, number>();
 * const hits = new HitBatcher((batch) => {
 *   for (const [id, n] of batch) written.set(id, (written.get(id) ?? 0) + n);
 * });
 * hits.count("AAAAAAAAAAAA");
 * hits.count("AAAAAAAAAAAA");
 * assert.equal(hits.pending("AAAAAAAAAAAA"), 2);
 * await hits.close();
 * assert.equal(written.get("AAAAAAAAAAAA"), 2);
 * assert.equal(hits.pending("AAAAAAAAAAAA"), 0);
 * ```
 */
export class HitBatcher {
  #write: WriteHits;
  #delayMs: number;
  /** Hits counted since the last write began. */
  #queued = new Map<string, number>();
  /** Hits of the write in flight (an asynchronous store). */
  #writing = new Map<string, number>();
  #inFlight: Promise<void> | null = null;
  /** Writes begun so far. */
  #writes = 0;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #closed = false;

  /**
   * @param write Writes a batch to the store.
   * @param delayMs How long the first hit of a batch waits.
   */
  constructor(write: WriteHits, delayMs: number = HITS_WRITE_MS) {
    this.#write = write;
    this.#delayMs = delayMs;
  }

  /** Counts one more hit for `id`; the batch is written within `delayMs`. */
  count(id: string): void {
    this.#queued.set(id, (this.#queued.get(id) ?? 0) + 1);
    this.#schedule();
  }

  /** Hits of `id` counted and not yet written. */
  pending(id: string): number {
    return (this.#queued.get(id) ?? 0) + (this.#writing.get(id) ?? 0);
  }

  /**
   * Runs `select`, a read of the stored hits, so that
   * {@linkcode HitBatcher.pending} then adds exactly what it did not see:
   * with no write in flight, and none begun while it ran. A write that
   * began meanwhile may or may not be in what it read, so it runs again
   * after that write (three tries, then the last read as it is).
   *
   * @param select The read.
   * @returns What the read returned.
   */
  async read<T>(select: () => Promise<T>): Promise<T> {
    for (let tries = 1;; tries++) {
      while (this.#inFlight !== null) await this.#inFlight;
      const writes = this.#writes;
      const value = await select();
      const clean = writes === this.#writes && this.#inFlight === null;
      if (clean || tries === 3) return value;
    }
  }

  /**
   * Writes the hits counted so far now. With an asynchronous store, the
   * promise resolves once they are written (or have failed and wait).
   */
  flush(): void | Promise<void> {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    if (this.#inFlight !== null) return this.#inFlight.then(() => this.flush());
    if (this.#queued.size === 0) return;
    const batch = this.#queued;
    this.#queued = new Map();
    this.#writing = batch;
    this.#writes += 1;
    const failed = () => {
      this.#writing = new Map();
      for (const [id, count] of batch) {
        this.#queued.set(id, (this.#queued.get(id) ?? 0) + count);
      }
      this.#schedule();
    };
    let result;
    try {
      result = this.#write(batch);
    } catch {
      failed();
      return;
    }
    if (!(result instanceof Promise)) {
      this.#writing = new Map();
      return;
    }
    this.#inFlight = result.then(() => {
      this.#writing = new Map();
    }, failed).finally(() => {
      this.#inFlight = null;
    });
    return this.#inFlight;
  }

  /** Writes what is counted and stops the timer; later hits are written by `flush` only. */
  close(): void | Promise<void> {
    this.#closed = true;
    return this.flush();
  }

  #schedule(): void {
    if (this.#timer !== undefined || this.#closed) return;
    this.#timer = setTimeout(() => void this.flush(), this.#delayMs);
    // Counting hits never keeps a process alive.
    unrefTimer(this.#timer);
  }
}
