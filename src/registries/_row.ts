/**
 * A pod record as the SQL registries (SQLite, PostgreSQL) store it: one row
 * with snake_case columns, and its conversion to a {@linkcode PodRecord}.
 *
 * The manifest's `name` is signed, and any JSON string: NUL, lone
 * surrogates, U+2028. PostgreSQL's `text` cannot hold NUL, SQLite's reads
 * stop at it, and both turn a lone surrogate into U+FFFD; so the exact name
 * is kept as JSON (`name_json`: `JSON.stringify` escapes each of these, and
 * its text is valid UTF-8 without NUL) and read from there. `name` keeps a
 * readable copy for people who query the table (and for older brokers).
 *
 * @module
 */

import type { PodRecord } from "./types.ts";

/** A `pods` row (numbers may come back as bigint or text). */
export interface PodRow {
  id: string;
  owner_pubkey: string;
  blob_size: number | bigint | string;
  sha256: string;
  content_sha256: string;
  name: string | null;
  /** The exact name as JSON; absent or null in rows of older brokers. */
  name_json?: string | null;
  created_at: string | null;
  uploaded_at: string;
  hits: number | bigint | string;
  /** Absent in rows written before updates existed. */
  version?: number | bigint | string | null;
  updated_at?: string | null;
}

/** The record of a row. */
export function toRecord(row: PodRow): PodRecord {
  return {
    id: row.id,
    ownerPubkey: row.owner_pubkey,
    blobSize: Number(row.blob_size),
    sha256: row.sha256,
    contentSha256: row.content_sha256,
    name: row.name_json == null ? row.name : JSON.parse(row.name_json),
    createdAt: row.created_at,
    uploadedAt: row.uploaded_at,
    hits: Number(row.hits),
    version: Number(row.version ?? 1),
    updatedAt: row.updated_at ?? row.uploaded_at,
  };
}

/**
 * The two stored forms of a signed `name`: a readable copy that any text
 * column holds (NUL and lone surrogates become U+FFFD), and the exact name
 * as JSON.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { storedName } from "./_row.ts";
 *
 * assert.deepEqual(storedName("a\u0000b"), ["a\ufffdb", '"a\\u0000b"']);
 * assert.deepEqual(storedName(null), [null, null]);
 * ```
 */
export function storedName(
  name: string | null,
): [readable: string | null, json: string | null] {
  if (name === null) return [null, null];
  return [
    name.replaceAll("\u0000", "\ufffd").toWellFormed(),
    JSON.stringify(name),
  ];
}
