/**
 * A registry in PostgreSQL, shared by any number of brokers: records in one
 * table, blobs as 256 KiB `bytea` chunks in another, tombstones in a third.
 *
 * - An upload is one transaction: the record and all its chunks, or nothing.
 * - A blob is served as a stream that reads one chunk a query, so a large
 *   pod never sits whole in the broker's memory and no connection is held
 *   between chunks (a slow reader does not starve the pool).
 * - The schema is versioned (`pod_broker_schema`); missing migrations run
 *   when the registry is first used, each in the transaction that records
 *   it, under an advisory lock, so brokers starting at the same moment
 *   take turns.
 * - Errors name the server (host, port, database), never the password.
 *
 * The client is [`postgres`](https://github.com/porsager/postgres) (npm,
 * pure JavaScript, no native code): it runs unchanged on Deno and Node 22,
 * pools connections, reconnects lazily after the server comes back, and
 * has no dependencies.
 *
 * @module
 */

import { Buffer } from "node:buffer";
import postgres from "postgres";
import type { PodRecord, Registry } from "./types.ts";
import { type PodRow, toRecord } from "./_row.ts";
import { HitBatcher } from "./hit_batcher.ts";

/** Options of {@linkcode PostgresRegistry}. */
export interface PostgresRegistryOptions {
  /**
   * `postgres://user:password@host:port/database` (or `postgresql://`).
   * It is never shown: messages name the host, port and database only.
   */
  url: string;
  /** Connections in the pool. @default {10} */
  maxConnections?: number;
  /** Seconds to wait for a connection before failing. @default {10} */
  connectTimeoutSeconds?: number;
}

/** Bytes of a stored chunk of a blob. */
export const POSTGRES_CHUNK_BYTES: number = 256 * 1024;

/** Chunk inserts of one upload in flight at once (a few MiB). */
const INSERTS_IN_FLIGHT = 4;
/** Rows fetched at a time by `listPods`. */
const LIST_BATCH = 100;
/** `pg_advisory_xact_lock` key of the migrations ("pod-brk"). */
const MIGRATION_LOCK = "31654407981888107";

/**
 * The schema, one entry a version; each entry's statements run in one
 * transaction. Append only: a released entry never changes.
 */
const MIGRATIONS: readonly (readonly string[])[] = [
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
];

/** The schema version this code writes and reads. */
export const POSTGRES_SCHEMA_VERSION: number = MIGRATIONS.length;

const COLUMNS =
  "id, owner_pubkey, blob_size, sha256, content_sha256, name, created_at, uploaded_at, hits";

type Sql = ReturnType<typeof postgres>;

/** Connection failures, as Node and `postgres` name them. */
const UNREACHABLE = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "ENOTFOUND",
  "EAI_AGAIN",
  "ETIMEDOUT",
  "EPIPE",
  "CONNECT_TIMEOUT",
  "CONNECTION_CLOSED",
  "CONNECTION_ENDED",
  "CONNECTION_DESTROYED",
]);

/**
 * Stores pods in PostgreSQL. Create it with {@linkcode PostgresRegistry.open}
 * (which migrates and checks the connection), or with `new` and let the
 * first call migrate.
 *
 * @example
 * ```ts ignore
 * import { PostgresRegistry } from "./postgres.ts";
 *
 * const registry = await PostgresRegistry.open({
 *   url: Deno.env.get("DATABASE_URL")!,
 * });
 * console.log(await registry.getRecord("AAAAAAAAAAAA")); // null
 * await registry.close();
 * ```
 */
export class PostgresRegistry implements Registry {
  #sql: Sql;
  #target: string;
  #secrets: string[];
  #ready: Promise<void> | null = null;
  #closed = false;
  /** Hits counted and not yet written (one UPDATE a second, not one a GET). */
  #hits = new HitBatcher((hits) => this.#writeHits(hits));

  /**
   * Opens a registry and runs the missing migrations.
   *
   * @param options The database URL and pool size.
   * @returns The ready registry.
   * @throws {TypeError} For a missing or malformed URL (not shown).
   * @throws {Error} When the database cannot be reached or migrated; the
   * message names host, port and database, never the password.
   */
  static async open(
    options: PostgresRegistryOptions,
  ): Promise<PostgresRegistry> {
    const registry = new PostgresRegistry(options);
    try {
      await registry.ready();
    } catch (error) {
      await registry.close();
      throw error;
    }
    return registry;
  }

  /**
   * Makes the pool; connects lazily, on first use.
   *
   * @param options The database URL and pool size.
   * @throws {TypeError} For a missing or malformed URL (not shown).
   */
  constructor(options: PostgresRegistryOptions) {
    const url = options?.url;
    if (typeof url !== "string" || url === "") {
      throw new TypeError(
        "Cannot open PostgresRegistry: option 'url' is required",
      );
    }
    let parsed: URL;
    try {
      parsed = new URL(url);
    } catch {
      throw new TypeError(
        "Cannot open PostgresRegistry: option 'url' is not a URL",
      );
    }
    if (parsed.protocol !== "postgres:" && parsed.protocol !== "postgresql:") {
      throw new TypeError(
        "Cannot open PostgresRegistry: option 'url' must start with postgres:// or postgresql://",
      );
    }
    const max = options.maxConnections ?? 10;
    if (!Number.isInteger(max) || max < 1) {
      throw new TypeError(
        "Cannot open PostgresRegistry: option 'maxConnections' must be a positive integer",
      );
    }
    this.#target = describeTarget(parsed);
    this.#secrets = secretsOf(parsed);
    this.#sql = postgres(url, {
      max,
      connect_timeout: options.connectTimeoutSeconds ?? 10,
      onnotice: () => {},
      // Never let the client print anything (it has the URL).
      debug: false,
    });
  }

  /**
   * Connects and runs the missing migrations (once; again after a failure).
   * Every other method waits for it.
   *
   * @throws {Error} When the database cannot be reached or migrated, or its
   * schema is newer than this code.
   */
  ready(): Promise<void> {
    if (this.#closed) {
      return Promise.reject(
        new Error("Cannot use PostgresRegistry: it is closed"),
      );
    }
    this.#ready ??= this.#migrate().catch((error) => {
      this.#ready = null;
      throw error;
    });
    return this.#ready;
  }

  /**
   * Stores the record and its chunks in one transaction.
   *
   * @throws {Error} When the id is taken (or was deleted) or storing fails.
   */
  async putPod(record: PodRecord, blob: Uint8Array): Promise<void> {
    const action = `store pod '${record.id}'`;
    await this.#ready_(action);
    const taken = new Error(`Cannot ${action}: the id is taken`);
    try {
      await this.#sql.begin(async (tx) => {
        const [dead] = await tx`
          SELECT 1 FROM pod_broker_deleted WHERE id = ${record.id}`;
        if (dead) throw taken;
        await tx`
          INSERT INTO pod_broker_pods (${tx.unsafe(COLUMNS)})
          VALUES (${record.id}, ${record.ownerPubkey}, ${record.blobSize},
            ${record.sha256}, ${record.contentSha256}, ${record.name},
            ${record.createdAt}, ${record.uploadedAt}, ${record.hits})`;
        let inFlight: Promise<unknown>[] = [];
        for (let seq = 0; seq * POSTGRES_CHUNK_BYTES < blob.length; seq++) {
          const start = seq * POSTGRES_CHUNK_BYTES;
          const bytes = blob.subarray(start, start + POSTGRES_CHUNK_BYTES);
          inFlight.push(tx`
            INSERT INTO pod_broker_chunks (pod_id, seq, bytes)
            VALUES (${record.id}, ${seq}, ${bytes})`.execute());
          if (inFlight.length === INSERTS_IN_FLIGHT) {
            await Promise.all(inFlight);
            inFlight = [];
          }
        }
        await Promise.all(inFlight);
      });
    } catch (error) {
      if (error === taken || sqlState(error) === "23505") throw taken;
      throw this.#wrap(action, error);
    }
  }

  /** The record of `id`, or null. */
  async getRecord(id: string): Promise<PodRecord | null> {
    const action = `read pod '${id}'`;
    await this.#ready_(action);
    try {
      const [row] = await this.#sql<PodRow[]>`
        SELECT ${this.#sql.unsafe(COLUMNS)} FROM pod_broker_pods
        WHERE id = ${id}`;
      if (!row) return null;
      const record = toRecord(row);
      record.hits += this.#hits.pending(id);
      return record;
    } catch (error) {
      throw this.#wrap(action, error);
    }
  }

  /** The blob of `id`, read whole, or null. */
  async getBlob(id: string): Promise<Uint8Array | null> {
    const action = `read pod '${id}'`;
    const size = await this.#blobSize(id, action);
    if (size === null) return null;
    let rows;
    try {
      rows = await this.#sql<{ data: string }[]>`
        SELECT encode(bytes, 'base64') AS data FROM pod_broker_chunks
        WHERE pod_id = ${id} ORDER BY seq`;
    } catch (error) {
      throw this.#wrap(action, error);
    }
    const blob = new Uint8Array(size);
    let offset = 0;
    for (const { data } of rows) {
      const bytes = fromBase64(data);
      if (offset + bytes.length > size) return null;
      blob.set(bytes, offset);
      offset += bytes.length;
    }
    // Fewer bytes: deleted between the two queries.
    return offset === size ? blob : null;
  }

  /**
   * The blob of `id` as a stream of its stored chunks (one query each, no
   * connection held in between), or null. If the pod is deleted while the
   * stream is read, the stream ends with an error.
   */
  async getBlobStream(id: string): Promise<ReadableStream<Uint8Array> | null> {
    const action = `read pod '${id}'`;
    const size = await this.#blobSize(id, action);
    if (size === null) return null;
    const sql = this.#sql;
    const wrap = (error: unknown) => this.#wrap(action, error);
    let seq = 0;
    let offset = 0;
    return new ReadableStream<Uint8Array>({
      async pull(controller) {
        if (offset >= size) {
          controller.close();
          return;
        }
        let row;
        try {
          [row] = await sql<{ data: string }[]>`
            SELECT encode(bytes, 'base64') AS data FROM pod_broker_chunks
            WHERE pod_id = ${id} AND seq = ${seq}`;
        } catch (error) {
          throw wrap(error);
        }
        const bytes = row ? fromBase64(row.data) : null;
        if (bytes === null || offset + bytes.length > size) {
          throw new Error(`Cannot ${action}: it was deleted while being read`);
        }
        seq += 1;
        offset += bytes.length;
        controller.enqueue(bytes);
        if (offset >= size) controller.close();
      },
    });
  }

  /**
   * Counts one more hit for `id`. Hits are written together, at most a
   * second after the first one, in one statement (see `HitBatcher`); reads
   * include those not yet written.
   */
  bumpHits(id: string): Promise<void> {
    this.#hits.count(id);
    return Promise.resolve();
  }

  async #writeHits(hits: ReadonlyMap<string, number>): Promise<void> {
    const action = "count hits";
    await this.#ready_(action);
    try {
      await this.#sql`
        UPDATE pod_broker_pods AS p SET hits = p.hits + v.n
        FROM unnest(${[...hits.keys()]}::text[], ${[
        ...hits.values(),
      ]}::bigint[])
          AS v (id, n)
        WHERE p.id = v.id`;
    } catch (error) {
      throw this.#wrap(action, error);
    }
  }

  /**
   * Takes `id` down: in one transaction removes its record and chunks and
   * keeps a tombstone, so its URL answers 410 on every broker. Whether there
   * was a pod.
   */
  async deletePod(id: string): Promise<boolean> {
    const action = `delete pod '${id}'`;
    await this.#ready_(action);
    try {
      return await this.#sql.begin(async (tx) => {
        const deleted = await tx`
          DELETE FROM pod_broker_pods WHERE id = ${id} RETURNING id`;
        if (deleted.length === 0) return false;
        await tx`
          INSERT INTO pod_broker_deleted (id) VALUES (${id})
          ON CONFLICT (id) DO NOTHING`;
        return true;
      });
    } catch (error) {
      throw this.#wrap(action, error);
    }
  }

  /** Whether `id` was taken down by {@linkcode PostgresRegistry.deletePod}. */
  async isDeleted(id: string): Promise<boolean> {
    const action = `read pod '${id}'`;
    await this.#ready_(action);
    try {
      const rows = await this.#sql`
        SELECT 1 FROM pod_broker_deleted WHERE id = ${id}`;
      return rows.length > 0;
    } catch (error) {
      throw this.#wrap(action, error);
    }
  }

  /**
   * The stored records, oldest first, of one owner key or all, fetched a
   * hundred at a time (through a cursor).
   */
  async *listPods(options: { owner?: string } = {}): AsyncIterable<PodRecord> {
    const action = "list pods";
    await this.#ready_(action);
    const sql = this.#sql;
    const query = options.owner === undefined
      ? sql<PodRow[]>`
        SELECT ${sql.unsafe(COLUMNS)} FROM pod_broker_pods
        ORDER BY uploaded_at, stored`
      : sql<PodRow[]>`
        SELECT ${sql.unsafe(COLUMNS)} FROM pod_broker_pods
        WHERE owner_pubkey = ${options.owner} ORDER BY uploaded_at, stored`;
    const batches = query.cursor(LIST_BATCH)[Symbol.asyncIterator]();
    while (true) {
      let next;
      try {
        next = await batches.next();
      } catch (error) {
        throw this.#wrap(action, error);
      }
      if (next.done) return;
      for (const row of next.value) yield toRecord(row);
    }
  }

  /** Writes the counted hits, then closes the pool (waiting up to 5 s for running queries). */
  async close(): Promise<void> {
    if (this.#closed) return;
    await this.#hits.close();
    this.#closed = true;
    await this.#sql.end({ timeout: 5 });
  }

  async #ready_(action: string): Promise<void> {
    if (this.#closed) {
      throw new Error(`Cannot ${action}: the registry is closed`);
    }
    await this.ready();
  }

  async #blobSize(id: string, action: string): Promise<number | null> {
    await this.#ready_(action);
    try {
      const [row] = await this.#sql<{ blob_size: string }[]>`
        SELECT blob_size FROM pod_broker_pods WHERE id = ${id}`;
      return row ? Number(row.blob_size) : null;
    } catch (error) {
      throw this.#wrap(action, error);
    }
  }

  async #migrate(): Promise<void> {
    const action = "open PostgresRegistry";
    try {
      await this.#sql.begin(async (tx) => {
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
            `Cannot ${action}: the schema is at version ${version}, newer than this broker's ${MIGRATIONS.length}`,
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
      throw this.#wrap(action, error);
    }
  }

  /**
   * A plain error for `action`: connection failures name the server, server
   * errors keep their SQLSTATE; the password never appears, nor the
   * query's parameters (the client keeps them on its errors).
   */
  #wrap(action: string, error: unknown): Error {
    const code = (error as { code?: unknown })?.code;
    let reason: string;
    if (typeof code === "string" && UNREACHABLE.has(code)) {
      reason = `PostgreSQL at ${this.#target} is unreachable (${code})`;
    } else if (sqlState(error) !== null) {
      reason = `PostgreSQL at ${this.#target} said: ${
        (error as Error).message
      } (${code})`;
    } else {
      reason = error instanceof Error ? error.message : String(error);
    }
    const wrapped = new Error(`Cannot ${action}: ${this.#scrub(reason)}`);
    if (typeof code === "string") {
      Object.assign(wrapped, { code: this.#scrub(code) });
    }
    // The server is away (or going away): the broker answers 503, not 500.
    if (
      typeof code === "string" &&
      (UNREACHABLE.has(code) || /^(08|57P0)/.test(code))
    ) {
      Object.assign(wrapped, { unavailable: true });
    }
    return wrapped;
  }

  #scrub(text: string): string {
    let clean = text;
    for (const secret of this.#secrets) clean = clean.replaceAll(secret, "***");
    return clean;
  }
}

class SchemaError extends Error {}

/** The SQLSTATE of a server error, or null. */
function sqlState(error: unknown): string | null {
  if ((error as Error)?.name !== "PostgresError") return null;
  const code = (error as { code?: unknown }).code;
  return typeof code === "string" ? code : null;
}

function describeTarget(url: URL): string {
  const host = url.hostname || url.searchParams.get("host") || "localhost";
  const port = url.port || "5432";
  const database = decodeURIComponent(url.pathname.slice(1)) ||
    decodeURIComponent(url.username) || "postgres";
  return `${host}:${port}/${database}`;
}

/** The password as written in the URL and decoded (both are scrubbed). */
function secretsOf(url: URL): string[] {
  const secrets = new Set<string>();
  for (const raw of [url.password, url.searchParams.get("password") ?? ""]) {
    if (raw === "") continue;
    secrets.add(raw);
    try {
      secrets.add(decodeURIComponent(raw));
    } catch {
      // not %-encoded
    }
  }
  return [...secrets].filter((secret) => secret.length > 0)
    .sort((a, b) => b.length - a.length);
}

/**
 * Chunks are read as base64 text (`encode(bytes, 'base64')`, with its line
 * breaks, which the decoder skips): about four times faster to decode than
 * the hex text the client receives for `bytea`.
 */
function fromBase64(text: string): Uint8Array {
  const buffer = Buffer.from(text, "base64");
  return new Uint8Array(buffer.buffer, buffer.byteOffset, buffer.byteLength);
}
