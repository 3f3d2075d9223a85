/**
 * The proof a join into a private (keyed) session carries, checked by the
 * broker that holds the socket alone (DESIGN.md section 10.2): an Ed25519
 * signature, by the key the session is named after, of
 * `pod-room-v1\n<Host of the request>\n<session>\n<t>`, with `t` within
 * {@linkcode PROOF_WINDOW_S} of the broker's clock. The Host binds it to
 * this broker's name and the time to now, so a proof seen elsewhere or
 * kept for later opens nothing.
 *
 * @module
 */

import { decodeBase64Url } from "../_util/encoding.ts";
import { verify } from "../pod/ed25519.ts";
import type { JoinProof } from "./messages.ts";

/** How far, in seconds, a proof's time may be from the broker's clock. */
export const PROOF_WINDOW_S = 120;

/**
 * The text a proof signs.
 *
 * @param host The `Host` the socket connected to.
 * @param session The keyed session.
 * @param t The proof's time, in Unix seconds.
 * @returns `pod-room-v1\n<host>\n<session>\n<t>`.
 */
export function proofText(host: string, session: string, t: number): string {
  return `pod-room-v1\n${host}\n${session}\n${t}`;
}

/**
 * Whether `proof` admits a socket that connected to `host` into the keyed
 * `session`. Never throws: anything wrong is false.
 *
 * @param session A keyed session (`k_` and a base64url public key).
 * @param proof The join's proof, or undefined when it had none.
 * @param host The `Host` of the socket's request.
 * @param nowMs The broker's clock, in milliseconds.
 * @returns True for a valid, fresh proof by the session's key over `host`.
 *
 * @example A missing or stale proof opens nothing
 * ```ts
 * import assert from "node:assert/strict";
 * import { checkProof } from "./keyed.ts";
 *
 * const session = "k_" + "A".repeat(43);
 * assert.equal(await checkProof(session, undefined, "h", Date.now()), false);
 * assert.equal(await checkProof(session, { t: 0, sig: "" }, "h", Date.now()), false);
 * ```
 */
export async function checkProof(
  session: string,
  proof: JoinProof | undefined,
  host: string,
  nowMs: number,
): Promise<boolean> {
  if (proof === undefined) return false;
  if (Math.abs(proof.t - nowMs / 1000) > PROOF_WINDOW_S) return false;
  const key = decodeBase64Url(session.slice(2));
  const signature = decodeBase64Url(proof.sig);
  if (key === null || signature === null) return false;
  const text = new TextEncoder().encode(proofText(host, session, proof.t));
  try {
    return await verify(signature, text, key);
  } catch {
    return false;
  }
}
