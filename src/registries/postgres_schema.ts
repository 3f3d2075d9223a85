/**
 * The PostgreSQL registry's schema: its migrations, one entry a version,
 * {@linkcode migrate}, which runs the missing ones, and how a blob is laid
 * out in chunks.
 *
 * @module
 */

import { Buffer } from "node:buffer";
import type postgres from "postgres";
import { PostgresRegistryError } from "./postgres_errors.ts";

/** Bytes of a stored chunk of a blob. */
export const POSTGRES_CHUNK_BYTES: number = 256 * 1024;

/** Chunk inserts of one upload in flight at once (a few MiB). */
const INSERTS_IN_FLIGHT = 4;

/** `pg_advisory_xact_lock` key of the migrations ("pod-brk"). */
const MIGRATION_LOCK = "31654407981888107";

/**
 * The schema, one entry a version; each entry's statements run in one
 * transaction. Append only: a released entry never changes.
 */
export const MIGRATIONS: readonly (readonly string[])[] = [
  [
    `CREATE TABLE pod_broker_pods (
      id text PRIMARY KEY,
      owner_pubkey text NOT NULL,
      blob_size bigint NOT NULL,
      sha256 text NOT NULL,
      content_sha256 text NOT NULL,
      name text,
      created_at text,
      uploaded_at text NOT NULL,
      hits bigint NOT NULL DEFAULT 0,
      stored bigserial NOT NULL
    )`,
    `CREATE INDEX pod_broker_pods_by_time
      ON pod_broker_pods (uploaded_at, stored)`,
    `CREATE INDEX pod_broker_pods_by_owner
      ON pod_broker_pods (owner_pubkey, uploaded_at, stored)`,
    `CREATE TABLE pod_broker_chunks (
      pod_id text NOT NULL REFERENCES pod_broker_pods (id) ON DELETE CASCADE,
      seq integer NOT NULL,
      bytes bytea NOT NULL,
      PRIMARY KEY (pod_id, seq)
    )`,
    `CREATE TABLE pod_broker_deleted (
      id text PRIMARY KEY,
      deleted_at timestamptz NOT NULL DEFAULT now()
    )`,
  ],
  // Updates: versions, and chunks of each version apart.
  [
    `ALTER TABLE pod_broker_pods
      ADD COLUMN version integer NOT NULL DEFAULT 1,
      ADD COLUMN updated_at text`,
    `ALTER TABLE pod_broker_chunks
      ADD COLUMN version integer NOT NULL DEFAULT 1`,
    `ALTER TABLE pod_broker_chunks
      DROP CONSTRAINT pod_broker_chunks_pkey,
      ADD PRIMARY KEY (pod_id, version, seq)`,
  ],
  // The exact signed name, as JSON: text cannot hold NUL (see _row.ts).
  [`ALTER TABLE pod_broker_pods ADD COLUMN name_json text`],
];

/** The schema version this code writes and reads. */
export const POSTGRES_SCHEMA_VERSION: number = MIGRATIONS.length;

/** The schema is newer than this code. */
class SchemaError extends PostgresRegistryError {}

/**
 * Runs the missing migrations, each in the transaction that records it,
 * under an advisory lock (brokers starting together take turns).
 *
 * @param sql The pool.
 * @param wrap Turns a driver error into a plain one.
 * @throws {Error} When the database cannot be reached or migrated, or its
 * schema is newer than this code.
 */
export async function migrate(
  sql: postgres.Sql,
  wrap: (action: string, error: unknown) => Error,
): Promise<void> {
  const action = "open PostgresRegistry";
  try {
    await sql.begin(async (tx) => {
      // Taken before anything else: two brokers starting together would
      // otherwise race on CREATE TABLE.
      await tx`SELECT pg_advisory_xact_lock(${MIGRATION_LOCK}::bigint)`;
      await tx`
        CREATE TABLE IF NOT EXISTS pod_broker_schema (
          version integer PRIMARY KEY,
          applied_at timestamptz NOT NULL DEFAULT now()
        )`;
      const rows = await tx<{ version: number }[]>`
        SELECT coalesce(max(version), 0)::integer AS version
        FROM pod_broker_schema`;
      const version = rows[0]?.version ?? 0;
      if (version > MIGRATIONS.length) {
        throw new SchemaError(
          action,
          `the schema is at version ${version}, newer than this broker's ${MIGRATIONS.length}`,
        );
      }
      for (let index = version; index < MIGRATIONS.length; index++) {
        for (const statement of MIGRATIONS[index]!) {
          await tx.unsafe(statement);
        }
        await tx`
          INSERT INTO pod_broker_schema (version) VALUES (${index + 1})`;
      }
    });
  } catch (error) {
    if (error instanceof SchemaError) throw error;
    throw wrap(action, error);
  }
}

/** Inserts the chunks of `blob` as `version` of `id`, a few at a time. */
export async function insertChunks(
  tx: postgres.TransactionSql,
  id: string,
  version: number,
  blob: Uint8Array,
): Promise<void> {
  let inFlight: Promise<unknown>[] = [];
  for (let seq = 0; seq * POSTGRES_CHUNK_BYTES < blob.length; seq++) {
    const start = seq * POSTGRES_CHUNK_BYTES;
    const bytes = blob.subarray(start, start + POSTGRES_CHUNK_BYTES);
    inFlight.push(tx`
      INSERT INTO pod_broker_chunks (pod_id, version, seq, bytes)
      VALUES (${id}, ${version}, ${seq}, ${bytes})`.execute());
    if (inFlight.length === INSERTS_IN_FLIGHT) {
      await Promise.all(inFlight);
      inFlight = [];
    }
  }
  await Promise.all(inFlight);
}

/**
 * A chunk's bytes from base64 text. Chunks are read as base64 text (`encode(bytes, 'base64')`, with its line
 * breaks, which the decoder skips): about four times faster to decode than
 * the hex text the client receives for `bytea`.
 */
export function fromBase64(text: string): Uint8Array {
  const buffer = Buffer.from(text, "base64");
  return new Uint8Array(buffer.buffer, buffer.byteOffset, buffer.byteLength);
}
