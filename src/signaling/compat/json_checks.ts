/**
 * Small checks of parsed JSON that both dialects' frame parsers use.
 *
 * @module
 */

/** Whether `value` is a JSON object (not null, not an array). */
export function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** Whether `object` has no member but `keys` (some may be absent). */
export function hasOnly(
  object: Record<string, unknown>,
  keys: readonly string[],
): boolean {
  for (const key in object) if (!keys.includes(key)) return false;
  return true;
}

const CANDIDATE_KEYS = [
  "candidate",
  "sdpMid",
  "sdpMLineIndex",
  "usernameFragment",
] as const;

/**
 * Whether `value` is an `RTCIceCandidateInit` as JSON has it: a
 * `candidate` string, and optionally `sdpMid`, `sdpMLineIndex` and
 * `usernameFragment` (each may be null).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { isCandidateInit } from "./json_checks.ts";
 *
 * assert.equal(isCandidateInit({ candidate: "", sdpMid: "0", sdpMLineIndex: 0 }), true);
 * assert.equal(isCandidateInit({ candidate: "x", note: "hi" }), false);
 * ```
 */
export function isCandidateInit(value: unknown): boolean {
  if (!isObject(value) || typeof value.candidate !== "string") return false;
  if (!hasOnly(value, CANDIDATE_KEYS)) return false;
  const index = value.sdpMLineIndex;
  if (
    index !== undefined && index !== null &&
    !(Number.isInteger(index) && (index as number) >= 0)
  ) return false;
  for (const key of ["sdpMid", "usernameFragment"] as const) {
    const item = value[key];
    if (item !== undefined && item !== null && typeof item !== "string") {
      return false;
    }
  }
  return true;
}
