/**
 * The pod container, version 1: finds the one manifest slot in the HTML
 * bytes and decodes its strict-base64 payload. Works on bytes, so anything
 * outside the slot (invalid UTF-8, NUL, a BOM) passes through untouched.
 *
 * @module
 */

import { decodeBase64 } from "../_util/encoding.ts";
import { PodError } from "./errors.ts";

/** The exact bytes that open the manifest slot. */
export const SLOT_LITERAL =
  '<script type="application/pod-manifest" id="__POD_MANIFEST_B64">';
/** The bytes that must follow the payload. */
export const SLOT_END = "</script>";

const SLOT = new TextEncoder().encode(SLOT_LITERAL);
const END = new TextEncoder().encode(SLOT_END);
const LESS_THAN = 0x3c;
// One decoder each, reused: without `stream`, decode() keeps no state.
const LATIN1 = new TextDecoder("latin1");
const UTF8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

/** Where a pod's manifest payload sits, and what it decodes to. */
export interface ParsedPod {
  /** Offset of the first payload byte (just after the slot literal). */
  payloadStart: number;
  /** Offset just past the last payload byte (the `<` of `</script>`). */
  payloadEnd: number;
  /** The payload's base64 text. */
  payload: string;
  /** The payload decoded and parsed as JSON (not yet schema-checked). */
  json: unknown;
}

/**
 * Finds every start offset of the slot literal in `bytes`.
 *
 * @param bytes The pod.
 * @returns The offsets, in order.
 */
export function findSlots(bytes: Uint8Array): number[] {
  // Boyer-Moore-Horspool: the byte under the literal's last position says
  // how far it can move, usually its whole length (a 50 MiB pod full of
  // tags takes milliseconds, where stopping at every '<' took tens).
  const found: number[] = [];
  const last = SLOT.length - 1;
  for (let at = 0; at + last < bytes.length;) {
    const byte = bytes[at + last]!;
    if (byte === SLOT[last] && matchesAt(bytes, SLOT, at)) {
      found.push(at);
      at += SLOT.length;
    } else {
      at += SHIFT[byte]!;
    }
  }
  return found;
}

/** How far the literal moves when a byte is under its last position. */
const SHIFT: Uint8Array = (() => {
  const shift = new Uint8Array(256).fill(SLOT.length);
  for (let i = 0; i < SLOT.length - 1; i++) {
    shift[SLOT[i]!] = SLOT.length - 1 - i;
  }
  return shift;
})();

/**
 * Finds the payload of the one manifest slot, without decoding it: exactly
 * one slot, and a payload that ends at the first `<`, which must begin
 * `</script>`.
 *
 * @param bytes The pod.
 * @returns Offsets of the first payload byte and just past the last one.
 * @throws {PodError} `manifest_missing` without a slot; otherwise
 * `manifest_malformed`.
 */
export function locatePayload(
  bytes: Uint8Array,
): { payloadStart: number; payloadEnd: number } {
  const slots = findSlots(bytes);
  if (slots.length === 0) {
    throw new PodError(
      "manifest_missing",
      "Cannot find the manifest slot in the pod",
    );
  }
  if (slots.length > 1) {
    throw new PodError(
      "manifest_malformed",
      `Cannot accept the pod: it has ${slots.length} manifest slots, expected one`,
    );
  }
  const payloadStart = slots[0]! + SLOT.length;
  const payloadEnd = bytes.indexOf(LESS_THAN, payloadStart);
  if (payloadEnd === -1 || !matchesAt(bytes, END, payloadEnd)) {
    throw new PodError(
      "manifest_malformed",
      "Cannot read the manifest: its payload is not closed by '</script>'",
    );
  }
  return { payloadStart, payloadEnd };
}

/**
 * Parses the container of a pod: {@linkcode locatePayload}, then strict
 * base64 and UTF-8 JSON.
 *
 * @param bytes The pod.
 * @returns The payload's position and its parsed JSON.
 * @throws {PodError} `manifest_missing` without a slot; otherwise
 * `manifest_malformed`.
 */
export function parsePod(bytes: Uint8Array): ParsedPod {
  const { payloadStart, payloadEnd } = locatePayload(bytes);
  const payload = LATIN1.decode(
    bytes.subarray(payloadStart, payloadEnd),
  );
  const decoded = decodeBase64(payload);
  if (decoded === null || decoded.length === 0) {
    throw new PodError(
      "manifest_malformed",
      "Cannot decode the manifest: the payload is not strict padded base64",
    );
  }
  let json: unknown;
  try {
    json = JSON.parse(UTF8.decode(decoded));
  } catch (cause) {
    throw new PodError(
      "manifest_malformed",
      "Cannot parse the manifest: it is not UTF-8 JSON",
      { cause },
    );
  }
  return { payloadStart, payloadEnd, payload, json };
}

function matchesAt(bytes: Uint8Array, needle: Uint8Array, at: number): boolean {
  if (at + needle.length > bytes.length) return false;
  for (let i = 0; i < needle.length; i++) {
    if (bytes[at + i] !== needle[i]) return false;
  }
  return true;
}
