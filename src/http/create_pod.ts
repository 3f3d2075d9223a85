/**
 * Turns an uploaded blob into a stored pod: verify, build the record with a
 * fresh id, `putPod`; or, for an update, check it against the stored
 * version and `updatePod`.
 *
 * @module
 */

import { encodeBase64Url } from "../_util/encoding.ts";
import { sha256 } from "../_util/hash.ts";
import { POD_ID_LENGTH, randomAlphanumeric } from "../_util/id.ts";
import { DEFAULT_MAX_BLOB_BYTES } from "../pod/limits.ts";

export { DEFAULT_MAX_BLOB_BYTES };
import { PodError } from "../pod/errors.ts";
import { verifyUpdate } from "../pod/update.ts";
import { type VerifiedPod, verifyScannedPod } from "../pod/verify.ts";
import type { ScannedContent } from "../pod/content_scan.ts";
import { BrokerError } from "./problem.ts";
import { findPod, refuseHidden } from "./find_pod.ts";
import type { PodRecord, Registry } from "../registries/types.ts";
import type { DenyList } from "../operator/deny_list.ts";

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
 * @throws {BrokerError} `blob_too_large`, a verification code,
 * `created_at_future` (a `createdAt` more than a day ahead of `now`), or
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
  /** The signed content's digest, when it was found as the bytes arrived. */
  content?: ScannedContent | null;
  /** Owner keys and content digests refused with 403. */
  denyList?: DenyList | null;
}

/**
 * {@linkcode createPod}, for the upload route: the digest may come from the
 * reading of the body, and a verified pod the deny list matches is refused
 * (403 `owner_denied` or `content_denied`).
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

/** What an update adds to {@linkcode StorePodOptions}. */
export interface ReplacePodOptions extends StorePodOptions {
  /**
   * The `Pod-Update-Signature`: the owner's signature of the update
   * statement (`signUpdate`), base64url.
   */
  signature: string;
  /**
   * The `sha256` of the version the update names as the one it replaces
   * (`Pod-Update-Replaces`). @default {the stored version's}
   */
  replaces?: string;
  /**
   * The stored record, when read already (before the body arrived): the
   * version an update must replace. @default {the record read now}
   */
  current?: PodRecord;
}

/**
 * Replaces the pod stored at `id` with `blob` (`PUT /:id`): verified and
 * admitted as an upload is; then the owner's signature of the update
 * statement (this id, the version replaced, the new content) must verify
 * under the stored owner key, the version it names must be the stored one,
 * the new key must be the owner's, and its `createdAt` strictly later than
 * the stored version's (none stored counts as earliest); then it is stored
 * by `updatePod`, a compare and swap on the version named.
 *
 * @param registry Where the pod is; it must have `updatePod`.
 * @param id The pod's id.
 * @param blob The new version's bytes.
 * @param options The signature; limit, clock, digest and admission, as for
 * an upload.
 * @returns The stored record (`version` one more; `hits` as read).
 * @throws {BrokerError} Every upload refusal; `pod_not_found`,
 * `pod_deleted`, `update_unauthorized`, `owner_mismatch`, or
 * `stale_update` (also when the named version is no longer stored).
 */
export async function replacePod(
  registry: Registry,
  id: string,
  blob: Uint8Array,
  options: ReplacePodOptions,
): Promise<PodRecord> {
  const { verified, sha256 } = await verifyUpload(blob, options);
  const current = options.current ?? await findPod(registry, id, "update");
  // The deny list may have been reloaded while the body arrived: what it
  // says now holds, or a pod taken down by its content would come back.
  refuseHidden(current, "update", options.denyList ?? null);
  const replaces = options.replaces ?? current.sha256;
  await authorizeUpdate(current, replaces, verified, options.signature);
  if (replaces !== current.sha256) {
    throw staleUpdate(
      id,
      `it replaces version ${replaces}, but the stored version is ${current.sha256}`,
    );
  }
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
    // Deleted meanwhile (404/410), or the named version was replaced.
    await findPod(registry, id, "update");
    throw staleUpdate(
      id,
      `the version it replaces (${current.sha256}) is no longer the stored one`,
    );
  }
  return record;
}

/**
 * Checks the update statement's signature: by the stored owner key, over
 * this id, the version it names and the new content.
 *
 * @throws {BrokerError} `update_unauthorized`.
 */
async function authorizeUpdate(
  current: PodRecord,
  replaces: string,
  verified: VerifiedPod,
  signature: string,
): Promise<void> {
  const statement = {
    id: current.id,
    replaces,
    contentSha256: verified.contentSha256,
  };
  if (!await verifyUpdate(statement, signature, current.ownerPubkey)) {
    throw new BrokerError(
      "update_unauthorized",
      `Cannot update pod '${current.id}': its Pod-Update-Signature does not verify under the owner's key for version ${replaces} and this content; sign the update statement with the key that published the pod`,
    );
  }
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
  const scanned = options.content ?? null;
  const verified = await verifyScannedPod(blob, scanned).catch((error) => {
    if (!(error instanceof PodError)) throw error;
    throw new BrokerError(error.code, error.message, { cause: error });
  });
  refuseFutureCreatedAt(verified, options.now?.() ?? new Date());
  refuseDenied(verified, options.denyList ?? null);
  return {
    verified,
    sha256: encodeBase64Url(options.sha256 ?? sha256(blob)),
  };
}

/**
 * Refuses a verified pod the deny list matches: 403 `owner_denied` or
 * `content_denied`.
 */
function refuseDenied(pod: VerifiedPod, denyList: DenyList | null): void {
  const code = denyList?.denies(pod);
  if (code) {
    throw new BrokerError(
      code,
      code === "owner_denied"
        ? "Cannot accept the pod: its owner key is denied by the operator"
        : "Cannot accept the pod: its content is denied by the operator",
    );
  }
}

/**
 * How far a manifest's `createdAt` may be ahead of the broker's clock: a
 * day of clock skew. A later time could block every honest update until
 * that time (an update's `createdAt` must be later than the stored one's).
 */
export const MAX_CREATED_AT_AHEAD_MS: number = 24 * 60 * 60 * 1000;

/** @throws {BrokerError} `created_at_future` past the allowed skew. */
function refuseFutureCreatedAt(verified: VerifiedPod, now: Date): void {
  const createdAt = verified.manifest.createdAt;
  if (createdAt === undefined) return;
  if (Date.parse(createdAt) > now.getTime() + MAX_CREATED_AT_AHEAD_MS) {
    throw new BrokerError(
      "created_at_future",
      `Cannot accept the pod: its createdAt (${createdAt}) is more than 24 hours ahead of the broker's clock (${now.toISOString()}); sign it again with the right time`,
    );
  }
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
