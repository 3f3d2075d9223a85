/**
 * The SQLite registry's schema: its tables, and the columns added after the
 * first release (added by the registry when it opens an older database).
 *
 * @module
 */

/** The tables of a new database (then given the ADDED_COLUMNS it lacks). */
export const SCHEMA: string = `
CREATE TABLE IF NOT EXISTS pods (
  id TEXT PRIMARY KEY,
  owner_pubkey TEXT NOT NULL,
  blob_size INTEGER NOT NULL,
  sha256 TEXT NOT NULL,
  content_sha256 TEXT NOT NULL,
  name TEXT,
  created_at TEXT,
  uploaded_at TEXT NOT NULL,
  hits INTEGER NOT NULL DEFAULT 0,
  version INTEGER NOT NULL DEFAULT 1,
  updated_at TEXT,
  blob TEXT
) STRICT;
CREATE TABLE IF NOT EXISTS deleted (
  id TEXT PRIMARY KEY,
  deleted_at TEXT NOT NULL
) STRICT`;

/** Columns added after the first release: name and definition. */
export const ADDED_COLUMNS: readonly (readonly [string, string])[] = [
  ["version", "INTEGER NOT NULL DEFAULT 1"],
  ["updated_at", "TEXT"],
  // The blob's file name in blobs/ when not the id (an updated pod).
  ["blob", "TEXT"],
  // The exact signed name, as JSON (see _row.ts).
  ["name_json", "TEXT"],
] as const;
