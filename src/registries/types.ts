/**
 * The registry interface and the stored record: what every registry
 * implements and what the broker reads.
 *
 * @module
 */

/** The stored record of a pod. Digests and keys are base64url, times RFC 3339 UTC. */
export interface PodRecord {
  /** 12 characters of `[A-Za-z0-9]`, chosen by the broker. */
  id: string;
  /** The author's Ed25519 public key (the manifest's `publicKey`). */
  ownerPubkey: string;
  /** Size of the stored blob in bytes. */
  blobSize: number;
  /** SHA-256 of the whole stored blob (the ETag's value). */
  sha256: string;
  /** SHA-256 of the blob without its manifest payload (signed by the author). */
  contentSha256: string;
  /** The manifest's display name, or null. */
  name: string | null;
  /** The manifest's `createdAt`, or null. */
  createdAt: string | null;
  /** When the broker stored the pod (the broker's clock). */
  uploadedAt: string;
  /** How many times the pod was served with 200 (all versions together). */
  hits: number;
  /** 1 for the first upload, +1 for each update; absent means 1. */
  version?: number;
  /** When the current version was stored (the broker's clock); absent means `uploadedAt`. */
  updatedAt?: string;
}

/**
 * What a registry's error carries when its store is unreachable for now (a
 * database down or restarting), as opposed to broken: the broker then
 * answers 503 `storage_failed` with `Retry-After` instead of 500.
 */
export interface RegistryUnavailable {
  /** Set on errors that say "try again shortly". */
  readonly unavailable: true;
}

/**
 * Whether `error`, or an error it was caused by, is
 * {@linkcode RegistryUnavailable}. The broker's one reader of the flag.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { isUnavailable } from "./types.ts";
 *
 * const down = Object.assign(new Error("down"), { unavailable: true });
 * assert.equal(isUnavailable(new Error("wrapped", { cause: down })), true);
 * assert.equal(isUnavailable(new Error("broken")), false);
 * ```
 */
export function isUnavailable(error: unknown): boolean {
  // Bounded: a cause chain may be long, or a cycle.
  for (let depth = 0; depth < 4 && error != null; depth++) {
    if ((error as Partial<RegistryUnavailable>).unavailable === true) {
      return true;
    }
    error = (error as { cause?: unknown }).cause;
  }
  return false;
}

/**
 * Storage for pods. Any object with these four methods is a valid registry.
 * `putPod` is only ever called for a verified pod. A method whose store is
 * unreachable for now rejects with an error that is
 * {@linkcode RegistryUnavailable} (`unavailable: true`).
 */
export interface Registry {
  /** Stores a record and its blob, all or nothing. */
  putPod(record: PodRecord, blob: Uint8Array): Promise<void>;
  /** The record of `id`, or null. */
  getRecord(id: string): Promise<PodRecord | null>;
  /** The blob of `id`, or null. */
  getBlob(id: string): Promise<Uint8Array | null>;
  /** Counts one more hit for `id`. */
  bumpHits(id: string): Promise<void>;
  /**
   * Optional: the blob of `id` as a stream, so that large pods are served
   * without loading them whole. Used instead of `getBlob` when present.
   */
  getBlobStream?(id: string): Promise<ReadableStream<Uint8Array> | null>;
  /**
   * Optional: removes the blob of `id` and keeps a tombstone, so that its
   * URL answers 410. Resolves true when a live pod was deleted.
   */
  deletePod?(id: string): Promise<boolean>;
  /** Optional: whether `id` was removed by `deletePod`. */
  isDeleted?(id: string): Promise<boolean>;
  /**
   * Optional fast path: the record of `id` read without waiting (a
   * registry in memory, or a synchronous database handle), or null when
   * there is none. Serving a hot pod then needs no promise at all. The
   * broker never modifies what it returns.
   */
  getRecordNow?(id: string): Readonly<PodRecord> | null;
  /**
   * Optional compare and swap: replaces the pod stored at `record.id` with
   * `record` and `blob`, all or nothing, if its `sha256` is still
   * `expectedSha256`; resolves false (and changes nothing) when it is not,
   * or when there is no such pod. The stored `version` becomes the old one
   * plus 1; `hits` and `uploadedAt` carry over. A reader sees the whole old
   * pod or the whole new one, and the old blob goes once nothing serves
   * it. Without it, `PUT /:id` answers 405.
   */
  updatePod?(
    record: PodRecord,
    blob: Uint8Array,
    expectedSha256: string,
  ): Promise<boolean>;
  /** Optional: the live records, oldest first, of one owner key or all. */
  listPods?(options?: { owner?: string }): AsyncIterable<PodRecord>;
  /** Optional: releases connections and handles. */
  close?(): void | Promise<void>;
}
