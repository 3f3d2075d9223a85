/**
 * Signs a pod: fills (or inserts) the manifest slot with a signed manifest
 * that binds every other byte of the HTML.
 *
 * @module
 */

import { encodeBase64, encodeBase64Url } from "../_util/encoding.ts";
import { sha256 } from "../_util/hash.ts";
import { publicKeyFromSeed, sign } from "./ed25519.ts";
import { findSlots, locatePayload, SLOT_END, SLOT_LITERAL } from "./format.ts";
import {
  type PodManifest,
  signedMessage,
  type UnsignedManifest,
} from "./manifest.ts";

/** Optional manifest members for {@linkcode signPod}. */
export interface SignPodOptions {
  /** Display name, 1 to 200 characters. */
  name?: string;
  /** RFC 3339 UTC time of signing; `true` for now. Omitted by default. */
  createdAt?: string | true;
}

/**
 * Signs an HTML document as a v1 pod. When the document has the manifest
 * slot, its payload (empty or an old signature) is replaced; otherwise an
 * empty slot is inserted before the first `</head>`, or at the very start.
 *
 * @param html The document, as text or bytes (bytes are kept exactly).
 * @param seed The author's 32-byte Ed25519 seed (see `decodePrivateKeyPem`).
 * @param options Optional `name` and `createdAt`.
 * @returns The signed pod's bytes.
 * @throws {PodError} When the document has more than one slot or a slot
 * that is not closed by `</script>`.
 *
 * @example Sign a page
 * ```ts
 * import assert from "node:assert/strict";
 * import { generateKeyPair, signPod } from "../core.ts";
 *
 * const { seed } = await generateKeyPair();
 * const pod = await signPod("<!doctype html><p>hi</p>", seed, { name: "Hi" });
 * assert.ok(new TextDecoder().decode(pod).includes("__POD_MANIFEST_B64"));
 * ```
 */
export async function signPod(
  html: string | Uint8Array,
  seed: Uint8Array,
  options: SignPodOptions = {},
): Promise<Uint8Array> {
  const bytes = withSlot(
    typeof html === "string" ? new TextEncoder().encode(html) : html,
  );
  const { payloadStart, payloadEnd } = locatePayload(bytes);
  const before = bytes.subarray(0, payloadStart);
  const after = bytes.subarray(payloadEnd);
  const unsigned: UnsignedManifest = {
    v: 1,
    publicKey: encodeBase64Url(await publicKeyFromSeed(seed)),
    contentSha256: encodeBase64Url(sha256(before, after)),
  };
  if (options.name !== undefined) unsigned.name = options.name;
  if (options.createdAt !== undefined) {
    unsigned.createdAt = options.createdAt === true
      ? new Date().toISOString()
      : options.createdAt;
  }
  const manifest: PodManifest = {
    ...unsigned,
    signature: encodeBase64Url(await sign(signedMessage(unsigned), seed)),
  };
  const payload = new TextEncoder().encode(
    encodeBase64(new TextEncoder().encode(JSON.stringify(manifest))),
  );
  const out = new Uint8Array(before.length + payload.length + after.length);
  out.set(before);
  out.set(payload, before.length);
  out.set(after, before.length + payload.length);
  return out;
}

function withSlot(bytes: Uint8Array): Uint8Array {
  if (findSlots(bytes).length > 0) return bytes;
  const slot = new TextEncoder().encode(`${SLOT_LITERAL}${SLOT_END}\n`);
  const head = new TextDecoder("latin1").decode(bytes).search(/<\/head>/i);
  const at = head === -1 ? 0 : head;
  const out = new Uint8Array(bytes.length + slot.length);
  out.set(bytes.subarray(0, at));
  out.set(slot, at);
  out.set(bytes.subarray(at), at + slot.length);
  return out;
}
