/**
 * Turns an uploaded blob into a stored pod: verify, build the record with a
 * fresh id, `putPod`.
 *
 * @module
 */

import { encodeBase64Url } from "../_util/encoding.ts";
import { sha256 } from "../_util/hash.ts";
import { POD_ID_LENGTH, randomAlphanumeric } from "../_util/id.ts";
import { DEFAULT_MAX_BLOB_BYTES } from "../config/options.ts";

export { DEFAULT_MAX_BLOB_BYTES };
import { PodError } from "../pod/errors.ts";
import { type VerifiedPod, verifyPod } from "../pod/verify.ts";
import { BrokerError } from "./problem.ts";
import type { PodRecord, Registry } from "../registries/types.ts";

/** Options of {@linkcode createPod}. */
export interface CreatePodOptions {
  /** Largest accepted blob in bytes. @default {52428800} */
  maxBlobBytes?: number;
  /** Clock for `uploadedAt`. @default {() => new Date()} */
  now?: () => Date;
  /** Id generator; a taken id is retried. @default 12 random `[A-Za-z0-9]` */
  randomId?: () => string;
}

/** How many fresh ids are tried before giving up on a collision. */
const ID_ATTEMPTS = 8;

/**
 * Verifies `blob` as a pod and stores it with a fresh id. Nothing reaches
 * `registry.putPod` unless every check passed.
 *
 * @param registry Where to store the pod.
 * @param blob The pod's bytes.
 * @param options Limit, clock and id generator.
 * @returns The stored record.
 * @throws {BrokerError} `blob_too_large`, a verification code, or
 * `storage_failed` when the registry could not store it.
 *
 * @example Store a signed pod
 * ```ts
 * import assert from "node:assert/strict";
 * import { createPod, generateKeyPair, MemoryRegistry, signPod } from "../core.ts";
 *
 * const { seed } = await generateKeyPair();
 * const record = await createPod(new MemoryRegistry(), await signPod("<p>hi</p>", seed));
 * assert.match(record.id, /^[A-Za-z0-9]{12}$/);
 * ```
 */
export function createPod(
  registry: Registry,
  blob: Uint8Array,
  options: CreatePodOptions = {},
): Promise<PodRecord> {
  return storePod(registry, blob, options);
}

/** What the upload route adds to {@linkcode CreatePodOptions}. */
export interface StorePodOptions extends CreatePodOptions {
  /** SHA-256 of `blob`, when it was computed as the bytes arrived. */
  sha256?: Uint8Array;
  /** Refuses a verified pod (the deny list) by throwing a `BrokerError`. */
  admit?: (pod: VerifiedPod) => void;
}

/**
 * {@linkcode createPod}, for the upload route: the digest may come from the
 * reading of the body, and a verified pod may still be refused.
 */
export async function storePod(
  registry: Registry,
  blob: Uint8Array,
  options: StorePodOptions = {},
): Promise<PodRecord> {
  const maxBlobBytes = options.maxBlobBytes ?? DEFAULT_MAX_BLOB_BYTES;
  if (blob.length > maxBlobBytes) {
    throw new BrokerError(
      "blob_too_large",
      `Cannot accept the pod: it is ${blob.length} bytes, the limit is ${maxBlobBytes}`,
    );
  }
  const verified = await verifyPod(blob).catch((error) => {
    if (!(error instanceof PodError)) throw error;
    throw new BrokerError(error.code, error.message, { cause: error });
  });
  options.admit?.(verified);
  const { manifest, ownerPubkey, contentSha256 } = verified;
  const randomId = options.randomId ??
    (() => randomAlphanumeric(POD_ID_LENGTH));
  try {
    const record: PodRecord = {
      id: await freshId(registry, randomId),
      ownerPubkey,
      blobSize: blob.length,
      sha256: encodeBase64Url(options.sha256 ?? sha256(blob)),
      contentSha256,
      name: manifest.name ?? null,
      createdAt: manifest.createdAt ?? null,
      uploadedAt: (options.now?.() ?? new Date()).toISOString(),
      hits: 0,
    };
    await registry.putPod(record, blob);
    return record;
  } catch (cause) {
    // 500, or 503 when the cause says so (decided where problems are made).
    throw new BrokerError(
      "storage_failed",
      "Cannot store the pod in the registry",
      { cause },
    );
  }
}

async function freshId(
  registry: Registry,
  randomId: () => string,
): Promise<string> {
  for (let attempt = 0; attempt < ID_ATTEMPTS; attempt++) {
    const id = randomId();
    // A registry that answers at once is asked without a promise.
    const taken = registry.getRecordNow
      ? registry.getRecordNow(id)
      : await registry.getRecord(id);
    if (!taken) return id;
  }
  throw new Error(`Cannot find a free pod id after ${ID_ATTEMPTS} attempts`);
}
