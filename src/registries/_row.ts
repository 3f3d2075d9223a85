/**
 * A pod record as the SQL registries (SQLite, PostgreSQL) store it: one row
 * with snake_case columns, and its conversion to a {@linkcode PodRecord}.
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
    name: row.name,
    createdAt: row.created_at,
    uploadedAt: row.uploaded_at,
    hits: Number(row.hits),
    version: Number(row.version ?? 1),
    updatedAt: row.updated_at ?? row.uploaded_at,
  };
}
