/**
 * Turns an uploaded blob into a stored pod: verify, build the record with a
 * fresh id, `putPod`; or, for an update, check it against the stored
 * version and `updatePod`.
 *
 * @module
 */

import { encodeBase64Url } from "../_util/encoding.ts";
import { sha256 } from "../_util/hash.ts";
import { isPodId, POD_ID_LENGTH, randomAlphanumeric } from "../_util/id.ts";
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
  const { verified, sha256 } = await verifyUpload(blob, options);
  const randomId = options.randomId ??
    (() => randomAlphanumeric(POD_ID_LENGTH));
  try {
    const uploadedAt = (options.now?.() ?? new Date()).toISOString();
    const record: PodRecord = {
      ...describe(verified, blob, sha256),
      id: await freshId(registry, randomId),
      uploadedAt,
      hits: 0,
      version: 1,
      updatedAt: uploadedAt,
    };
    await registry.putPod(record, blob);
    return record;
  } catch (cause) {
    throw storageFailed(cause);
  }
}

/**
 * Replaces the pod stored at `id` with `blob` (`PUT /:id`): verified and
 * admitted as an upload is, then stored by `updatePod` (compare and swap)
 * when its key is the stored owner's and its `createdAt` is strictly later
 * than the stored version's (none stored counts as earliest).
 *
 * @param registry Where the pod is; it must have `updatePod`.
 * @param id The pod's id.
 * @param blob The new version's bytes.
 * @param options Limit, clock, digest and admission, as for an upload.
 * @returns The stored record (`version` one more; `hits` as read).
 * @throws {BrokerError} Every upload refusal; `pod_not_found`,
 * `pod_deleted`, `owner_mismatch`, or `stale_update` (also when a
 * concurrent update won).
 */
export async function replacePod(
  registry: Registry,
  id: string,
  blob: Uint8Array,
  options: StorePodOptions = {},
): Promise<PodRecord> {
  const { verified, sha256 } = await verifyUpload(blob, options);
  const current = await currentRecord(registry, id);
  if (verified.ownerPubkey !== current.ownerPubkey) {
    throw new BrokerError(
      "owner_mismatch",
      `Cannot update pod '${id}': it is signed by another key than the stored one`,
    );
  }
  const createdAt = verified.manifest.createdAt ?? null;
  if (!isLater(createdAt, current.createdAt)) {
    throw staleUpdate(
      id,
      `its createdAt (${createdAt}) is not later than the stored version's (${current.createdAt})`,
    );
  }
  const record: PodRecord = {
    ...describe(verified, blob, sha256),
    id,
    uploadedAt: current.uploadedAt,
    hits: current.hits,
    version: (current.version ?? 1) + 1,
    updatedAt: (options.now?.() ?? new Date()).toISOString(),
  };
  let swapped: boolean;
  try {
    swapped = await registry.updatePod!(record, blob, current.sha256);
  } catch (cause) {
    throw storageFailed(cause);
  }
  if (!swapped) {
    // Deleted meanwhile (404/410), or another update won.
    await currentRecord(registry, id);
    throw staleUpdate(id, "another update of it was stored first");
  }
  return record;
}

/**
 * The record of `id`, before an update.
 *
 * @throws {BrokerError} `pod_not_found`, or `pod_deleted` for a pod taken
 * down.
 */
export async function currentRecord(
  registry: Registry,
  id: string,
): Promise<PodRecord> {
  const record = isPodId(id) ? await registry.getRecord(id) : null;
  if (record !== null) return record;
  if (isPodId(id) && await registry.isDeleted?.(id)) {
    throw new BrokerError(
      "pod_deleted",
      `Cannot update pod '${id}': it was taken down`,
    );
  }
  throw new BrokerError(
    "pod_not_found",
    `Cannot update pod '${id.slice(0, 64)}': there is no such pod`,
  );
}

/** Checks size, signature and admission: the verified pod and its digest. */
async function verifyUpload(
  blob: Uint8Array,
  options: StorePodOptions,
): Promise<{ verified: VerifiedPod; sha256: string }> {
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
  return {
    verified,
    sha256: encodeBase64Url(options.sha256 ?? sha256(blob)),
  };
}

/** The record fields that describe one version of a pod. */
function describe(
  { manifest, ownerPubkey, contentSha256 }: VerifiedPod,
  blob: Uint8Array,
  sha256: string,
): Pick<
  PodRecord,
  "ownerPubkey" | "blobSize" | "sha256" | "contentSha256" | "name" | "createdAt"
> {
  return {
    ownerPubkey,
    blobSize: blob.length,
    sha256,
    contentSha256,
    name: manifest.name ?? null,
    createdAt: manifest.createdAt ?? null,
  };
}

/** Whether `next` is strictly later than `stored` (null stored: earliest). */
function isLater(next: string | null, stored: string | null): boolean {
  if (next === null) return false;
  const time = Date.parse(next);
  if (Number.isNaN(time)) return false;
  const before = stored === null ? NaN : Date.parse(stored);
  return Number.isNaN(before) || time > before;
}

function staleUpdate(id: string, why: string): BrokerError {
  return new BrokerError("stale_update", `Cannot update pod '${id}': ${why}`);
}

/** 500, or 503 when the cause says so (decided where problems are made). */
function storageFailed(cause: unknown): BrokerError {
  return new BrokerError(
    "storage_failed",
    "Cannot store the pod in the registry",
    { cause },
  );
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
