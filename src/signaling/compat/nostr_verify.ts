/**
 * Whether a Nostr event is what it says: its id is the sha256 of its
 * NIP-01 serialization, and its signature is its author's BIP-340 Schnorr
 * signature of that id (checked by `@noble/curves`, an audited library).
 * This costs far more than any other check of a frame, so the relay takes
 * the frame's tokens first.
 *
 * @module
 */

import { schnorr } from "@noble/curves/secp256k1.js";
import { decodeHex, encodeHex } from "../../_util/encoding.ts";
import { sha256 } from "../../_util/hash.ts";
import type { NostrEvent } from "./nostr_frames.ts";

/**
 * What is wrong with an event, or null when it is sound ("no signature
 * check": the check could not be loaded).
 */
export type EventFault =
  | "bad id"
  | "bad signature"
  | "no signature check"
  | null;

/**
 * Checks an event's id and signature (its shape was checked before).
 *
 * @param event The event, as `parseNostrFrame` gave it.
 * @returns What is wrong with it, or null.
 */
export function eventFault(event: NostrEvent): EventFault {
  const serialized = JSON.stringify([
    0,
    event.pubkey,
    event.created_at,
    event.kind,
    event.tags,
    event.content,
  ]);
  const id = sha256(new TextEncoder().encode(serialized));
  if (encodeHex(id) !== event.id) return "bad id";
  try {
    const ok = schnorr.verify(
      decodeHex(event.sig),
      id,
      decodeHex(event.pubkey),
    );
    return ok ? null : "bad signature";
  } catch {
    // A public key that is no point of the curve.
    return "bad signature";
  }
}
