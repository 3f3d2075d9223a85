/**
 * The update statement: what a pod's owner signs to replace one stored
 * version of the pod with a new one (`PUT /:id` with the header
 * `Pod-Update-Signature`). It names the pod, the version replaced and the
 * new content, so a signature cannot be used for another pod, for another
 * version, or with other bytes.
 *
 * @module
 */

import { decodeBase64Url, encodeBase64Url } from "../_util/encoding.ts";
import { isPodId } from "../_util/id.ts";
import { sign, verify } from "./ed25519.ts";

/** What an update names; digests are base64url without padding. */
export interface UpdateStatement {
  /** The pod's id (12 characters of `[A-Za-z0-9]`). */
  id: string;
  /**
   * SHA-256 of the stored version being replaced: the `sha256` of the pod's
   * `/meta` (the value of its `ETag`).
   */
  replaces: string;
  /** The new version's `contentSha256` (from its manifest). */
  contentSha256: string;
}

/** Prefix of the statement, which separates it from other uses of the key. */
export const UPDATE_CONTEXT = "pod-update-v1\n";

/** The request header that carries the statement's signature. */
export const UPDATE_SIGNATURE_HEADER = "Pod-Update-Signature";

/**
 * The request header that names the version replaced (the statement's
 * `replaces`), so that a broker can tell an update that lost a race (409
 * `stale_update`) from one not signed by the owner (403). Without it the
 * version stored when the request arrives is taken as the one named.
 */
export const UPDATE_REPLACES_HEADER = "Pod-Update-Replaces";

/** Whether `digest` is a SHA-256 in base64url without padding. */
export function isSha256Digest(digest: string): boolean {
  return /^[A-Za-z0-9_-]{43}$/.test(digest) &&
    decodeBase64Url(digest)?.length === 32;
}

/**
 * The signed bytes of `statement`: UTF-8 of
 * `pod-update-v1\n<id>\n<replaces>\n<contentSha256>`.
 *
 * @param statement The pod, the version replaced and the new content.
 * @returns The bytes the owner's key signs.
 * @throws {TypeError} When the id is not a pod id, or a digest is not the
 * base64url of 32 bytes (so no field can hold a line break).
 */
export function updateMessage(statement: UpdateStatement): Uint8Array {
  const { id, replaces, contentSha256 } = statement;
  if (!isPodId(id)) {
    throw new TypeError(`Cannot sign an update of '${id}': not a pod id`);
  }
  for (
    const [what, digest] of [["replaces", replaces], [
      "contentSha256",
      contentSha256,
    ]] as const
  ) {
    if (!isSha256Digest(digest)) {
      throw new TypeError(
        `Cannot sign an update: ${what} is not a SHA-256 in base64url`,
      );
    }
  }
  return new TextEncoder().encode(
    `${UPDATE_CONTEXT}${id}\n${replaces}\n${contentSha256}`,
  );
}

/**
 * Signs an update statement with the owner's key: the value of the
 * `Pod-Update-Signature` header of `PUT /:id` (send `replaces` as
 * `Pod-Update-Replaces`). The broker stores the new version only if this
 * verifies under the pod's stored owner key (else 403
 * `update_unauthorized`) and `replaces` is still the stored version (else
 * 409 `stale_update`).
 *
 * @param statement The pod's id, the `sha256` of the version replaced (as
 * its `/meta` gives it) and the new version's `contentSha256`.
 * @param seed The owner's 32-byte Ed25519 seed (see `decodePrivateKeyPem`).
 * @returns The signature, base64url without padding.
 * @throws {TypeError} When the statement is malformed (see
 * {@linkcode updateMessage}).
 *
 * @example Replace a pod
 * ```ts ignore
 * import { decodePrivateKeyPem, signPod, signUpdate, verifyPod } from "@pod/broker";
 *
 * const seed = decodePrivateKeyPem(await Deno.readTextFile("author.pem"));
 * const id = "Ab3dEf6hIj9k";
 * const meta = await (await fetch(`https://pods.example/${id}/meta`)).json();
 * const pod = await signPod(await Deno.readFile("page.html"), seed, { createdAt: true });
 * const { contentSha256 } = await verifyPod(pod);
 * const signature = await signUpdate({ id, replaces: meta.sha256, contentSha256 }, seed);
 * await fetch(`https://pods.example/${id}`, {
 *   method: "PUT",
 *   headers: {
 *     "Content-Type": "text/html",
 *     "Pod-Update-Signature": signature,
 *     "Pod-Update-Replaces": meta.sha256,
 *   },
 *   body: pod,
 * });
 * ```
 */
export async function signUpdate(
  statement: UpdateStatement,
  seed: Uint8Array,
): Promise<string> {
  return encodeBase64Url(await sign(updateMessage(statement), seed));
}

/**
 * Whether `signature` (base64url, no padding) is the signature of
 * `statement` by `publicKey` (base64url), under libsodium's strict policy.
 * Anything malformed is `false`.
 *
 * @param statement What the signature must cover.
 * @param signature The header's value.
 * @param publicKey The pod's stored owner key.
 * @returns Whether it verifies.
 */
export async function verifyUpdate(
  statement: UpdateStatement,
  signature: string,
  publicKey: string,
): Promise<boolean> {
  const signatureBytes = decodeBase64Url(signature);
  const keyBytes = decodeBase64Url(publicKey);
  if (signatureBytes === null || keyBytes === null) return false;
  let message: Uint8Array;
  try {
    message = updateMessage(statement);
  } catch {
    return false;
  }
  return await verify(signatureBytes, message, keyBytes);
}
