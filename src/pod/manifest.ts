/**
 * The manifest, version 1: its schema and the canonical message that its
 * signature covers.
 *
 * @module
 */

import { decodeBase64Url } from "../_util/encoding.ts";
import { PodError } from "./errors.ts";

/** A pod manifest, version 1. Byte strings are base64url without padding. */
export interface PodManifest {
  /** Format version: always 1. */
  v: 1;
  /** Ed25519 public key of the author (32 bytes). */
  publicKey: string;
  /** SHA-256 of the pod with the payload removed (32 bytes). */
  contentSha256: string;
  /** Ed25519 signature over {@linkcode signedMessage} (64 bytes). */
  signature: string;
  /** Optional display name, 1 to 200 characters. */
  name?: string;
  /** Optional RFC 3339 UTC time of signing. */
  createdAt?: string;
}

/** A manifest before it is signed. */
export type UnsignedManifest = Omit<PodManifest, "signature">;

/** Prefix of the signed message, which separates it from other uses of the key. */
export const SIGNING_CONTEXT = "pod-manifest-v1\n";
/** Longest display name, in characters (Unicode code points). */
export const MAX_NAME_CHARACTERS = 200;

const MEMBERS = new Set([
  "v",
  "publicKey",
  "contentSha256",
  "signature",
  "name",
  "createdAt",
]);
const ENCODER = new TextEncoder();
const RFC3339_UTC =
  /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(\.\d+)?Z$/;

/**
 * Checks `json` against the v1 schema.
 *
 * @param json A parsed manifest payload.
 * @returns The manifest, typed.
 * @throws {PodError} `manifest_malformed`, naming the first member at fault.
 */
export function parseManifest(json: unknown): PodManifest {
  if (typeof json !== "object" || json === null || Array.isArray(json)) {
    throw malformed("the manifest is not a JSON object");
  }
  const record = json as Record<string, unknown>;
  for (const key of Object.keys(record)) {
    if (!MEMBERS.has(key)) throw malformed(`unknown member "${key}"`);
  }
  if (record.v !== 1) throw malformed('"v" must be the integer 1');
  checkBytes(record, "publicKey", 32);
  checkBytes(record, "contentSha256", 32);
  checkBytes(record, "signature", 64);
  if ("name" in record) {
    const name = record.name;
    const length = typeof name === "string" ? [...name].length : 0;
    if (length < 1 || length > MAX_NAME_CHARACTERS) {
      throw malformed(
        `"name" must be a string of 1 to ${MAX_NAME_CHARACTERS} characters`,
      );
    }
  }
  if ("createdAt" in record && !isRfc3339Utc(record.createdAt)) {
    throw malformed(
      '"createdAt" must be an RFC 3339 UTC time such as 2026-11-21T12:00:00Z',
    );
  }
  return record as unknown as PodManifest;
}

/**
 * The bytes an author signs: `pod-manifest-v1\n` then the canonical JSON of
 * the manifest without `signature` (keys sorted by UTF-16 code units, no
 * whitespace, `JSON.stringify` escapes), as RFC 8785 gives for these types.
 *
 * @param manifest The manifest; a `signature` member is ignored.
 * @returns The UTF-8 message.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { signedMessage } from "./manifest.ts";
 *
 * const text = new TextDecoder().decode(
 *   signedMessage({ v: 1, publicKey: "k", contentSha256: "c", name: "Chat" }),
 * );
 * assert.equal(text, 'pod-manifest-v1\n{"contentSha256":"c","name":"Chat","publicKey":"k","v":1}');
 * ```
 */
export function signedMessage(
  manifest: UnsignedManifest | PodManifest,
): Uint8Array {
  const entries = Object.entries(manifest)
    .filter(([key, value]) => key !== "signature" && value !== undefined)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  const json = "{" +
    entries.map(([k, v]) => `${JSON.stringify(k)}:${JSON.stringify(v)}`).join(
      ",",
    ) +
    "}";
  return ENCODER.encode(SIGNING_CONTEXT + json);
}

/**
 * Whether `value` is an RFC 3339 time in UTC (`Z`) that names a real instant.
 *
 * @param value Anything.
 * @returns The verdict.
 */
export function isRfc3339Utc(value: unknown): value is string {
  if (typeof value !== "string") return false;
  const match = RFC3339_UTC.exec(value);
  if (!match) return false;
  const [, year, month, day, hour, minute, second] = match.map(
    Number,
  ) as number[];
  // Not Date.UTC: it reads years 0 to 99 as 1900 to 1999.
  const date = new Date(0);
  date.setUTCFullYear(year!, month! - 1, day!);
  date.setUTCHours(hour!, minute!, second!);
  return date.getUTCFullYear() === year && date.getUTCMonth() === month! - 1 &&
    date.getUTCDate() === day && date.getUTCHours() === hour &&
    date.getUTCMinutes() === minute && date.getUTCSeconds() === second;
}

function checkBytes(
  record: Record<string, unknown>,
  key: string,
  length: number,
): void {
  const value = record[key];
  const bytes = typeof value === "string" ? decodeBase64Url(value) : null;
  if (bytes === null || bytes.length !== length) {
    throw malformed(
      `"${key}" must be ${length} bytes as base64url without padding`,
    );
  }
}

function malformed(reason: string): PodError {
  return new PodError(
    "manifest_malformed",
    `Cannot accept the manifest: ${reason}`,
  );
}
