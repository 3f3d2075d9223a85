/**
 * Verifies a pod: the ordered checks of the v1 format, stopping at the first
 * failure.
 *
 * @module
 */

import { decodeBase64Url, encodeBase64Url } from "../_util/encoding.ts";
import { sha256 } from "../_util/hash.ts";
import { PodError } from "./errors.ts";
import { verify } from "./ed25519.ts";
import { parsePod } from "./format.ts";
import type { ScannedContent } from "./content_scan.ts";
import { parseManifest, type PodManifest, signedMessage } from "./manifest.ts";

/** What a verified pod proves. */
export interface VerifiedPod {
  /** The manifest, schema-checked and signature-checked. */
  manifest: PodManifest;
  /** The author's public key (base64url), equal to `manifest.publicKey`. */
  ownerPubkey: string;
  /** SHA-256 of the pod without its payload (base64url). */
  contentSha256: string;
}

/**
 * Verifies `bytes` as a v1 pod: one slot with a strict-base64 JSON manifest
 * of the v1 schema (`manifest_missing` / `manifest_malformed`), a valid
 * Ed25519 signature under libsodium's strict policy (`signature_invalid`),
 * then `contentSha256` equal to the digest of the payload-free bytes
 * (`content_mismatch`). The size limit is the caller's.
 *
 * @param bytes The pod.
 * @returns The manifest and owner key.
 * @throws {PodError} With the code of the first failed check.
 *
 * @example Verify a pod signed with signPod
 * ```ts
 * import assert from "node:assert/strict";
 * import { generateKeyPair, signPod, verifyPod } from "../core.ts";
 *
 * const { seed } = await generateKeyPair();
 * const pod = await signPod("<!doctype html><p>hi</p>", seed);
 * const { manifest } = await verifyPod(pod);
 * assert.equal(manifest.v, 1);
 * ```
 */
export function verifyPod(bytes: Uint8Array): Promise<VerifiedPod> {
  return verifyScannedPod(bytes, null);
}

/**
 * {@linkcode verifyPod}, taking the content digest found while the bytes
 * arrived (`ContentScan`) when it covers the payload found here,
 * instead of hashing the pod a second time.
 *
 * @param bytes The pod.
 * @param scanned What a scan of the same bytes found, or null.
 * @returns The manifest and owner key.
 * @throws {PodError} As `verifyPod`.
 */
export async function verifyScannedPod(
  bytes: Uint8Array,
  scanned: ScannedContent | null,
): Promise<VerifiedPod> {
  const { payloadStart, payloadEnd, json } = parsePod(bytes);
  const manifest = parseManifest(json);
  const signature = decodeBase64Url(manifest.signature)!;
  const publicKey = decodeBase64Url(manifest.publicKey)!;
  if (!(await verify(signature, signedMessage(manifest), publicKey))) {
    throw new PodError(
      "signature_invalid",
      "Cannot verify the manifest signature with its public key",
    );
  }
  const same = scanned?.payloadStart === payloadStart &&
    scanned.payloadEnd === payloadEnd;
  const contentSha256 = encodeBase64Url(
    same
      ? scanned.contentSha256
      : sha256(bytes.subarray(0, payloadStart), bytes.subarray(payloadEnd)),
  );
  if (contentSha256 !== manifest.contentSha256) {
    throw new PodError(
      "content_mismatch",
      "Cannot accept the pod: its bytes do not match the signed contentSha256",
    );
  }
  return { manifest, ownerPubkey: manifest.publicKey, contentSha256 };
}
