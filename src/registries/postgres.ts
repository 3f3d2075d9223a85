/**
 * A registry in PostgreSQL, shared by any number of brokers: records in one
 * table, blobs as 256 KiB `bytea` chunks in another, tombstones in a third.
 *
 * - An upload is one transaction: the record and all its chunks, or nothing.
 * - An update is one transaction too (compare and swap on the record's
 *   `sha256`, under a row lock). Chunks are keyed by version, and a reader
 *   reads one version's, so it never mixes two. The previous version's
 *   chunks stay for `keepOldVersionMs` (streams in flight on any broker
 *   finish), then go.
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

import postgres from "postgres";
import type { PodRecord, Registry } from "./types.ts";
import { type PodRow, storedName, toRecord } from "./_row.ts";
import { HitBatcher } from "./hit_batcher.ts";
import {
  PostgresErrors,
  PostgresRegistryError,
  sqlState,
} from "./postgres_errors.ts";

export { PostgresRegistryError };
import {
  fromBase64,
  insertChunks,
  migrate,
  POSTGRES_CHUNK_BYTES,
  POSTGRES_SCHEMA_VERSION,
} from "./postgres_schema.ts";

export { POSTGRES_CHUNK_BYTES, POSTGRES_SCHEMA_VERSION };

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
  /**
   * How long the chunks of a replaced version stay readable after an
   * update, for the streams already reading them. @default {60000}
   */
  keepOldVersionMs?: number;
}

/** Rows fetched at a time by `listPods`. */
const LIST_BATCH = 100;
const COLUMNS =
  "id, owner_pubkey, blob_size, sha256, content_sha256, name, name_json, created_at, uploaded_at, hits, version, updated_at";

type Sql = ReturnType<typeof postgres>;

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
  #errors: PostgresErrors;
  #ready: Promise<void> | null = null;
  #closed = false;
  #keepOldVersionMs: number;
  /** Removals of replaced versions' chunks, waiting for their streams. */
  #sweeps = new Set<ReturnType<typeof setTimeout>>();
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
    this.#keepOldVersionMs = options.keepOldVersionMs ?? 60_000;
    this.#errors = new PostgresErrors(parsed);
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
    this.#ready ??= migrate(
      this.#sql,
      (action, error) => this.#wrap(action, error),
    ).catch((error) => {
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
        const [name, nameJson] = storedName(record.name);
        await tx`
          INSERT INTO pod_broker_pods (${tx.unsafe(COLUMNS)})
          VALUES (${record.id}, ${record.ownerPubkey}, ${record.blobSize},
            ${record.sha256}, ${record.contentSha256}, ${name}, ${nameJson},
            ${record.createdAt}, ${record.uploadedAt}, ${record.hits},
            ${record.version ?? 1}, ${record.updatedAt ?? record.uploadedAt})`;
        await insertChunks(tx, record.id, record.version ?? 1, blob);
      });
    } catch (error) {
      if (error === taken || sqlState(error) === "23505") throw taken;
      throw this.#wrap(action, error);
    }
  }

  /**
   * Replaces the pod if its `sha256` is still `expectedSha256`, in one
   * transaction that locks its row: the new version's chunks, then the
   * record. Chunks of versions before the replaced one go in the same
   * transaction; the replaced one's after `keepOldVersionMs`. Whether it
   * replaced the pod.
   */
  async updatePod(
    record: PodRecord,
    blob: Uint8Array,
    expectedSha256: string,
  ): Promise<boolean> {
    const action = `update pod '${record.id}'`;
    await this.#ready_(action);
    let old: number | null;
    try {
      old = await this.#sql.begin(async (tx) => {
        const [row] = await tx<{ sha256: string; version: number }[]>`
          SELECT sha256, version FROM pod_broker_pods
          WHERE id = ${record.id} FOR UPDATE`;
        if (!row || row.sha256 !== expectedSha256) return null;
        const version = Number(row.version) + 1;
        await tx`
          DELETE FROM pod_broker_chunks
          WHERE pod_id = ${record.id} AND version <> ${row.version}`;
        await insertChunks(tx, record.id, version, blob);
        const [name, nameJson] = storedName(record.name);
        await tx`
          UPDATE pod_broker_pods SET owner_pubkey = ${record.ownerPubkey},
            blob_size = ${record.blobSize}, sha256 = ${record.sha256},
            content_sha256 = ${record.contentSha256}, name = ${name},
            name_json = ${nameJson},
            created_at = ${record.createdAt}, version = ${version},
            updated_at = ${record.updatedAt ?? new Date().toISOString()}
          WHERE id = ${record.id}`;
        return Number(row.version);
      });
    } catch (error) {
      throw this.#wrap(action, error);
    }
    if (old === null) return false;
    this.#sweepLater(record.id, old);
    return true;
  }

  /** Removes the chunks of `version` of `id` after `keepOldVersionMs`. */
  #sweepLater(id: string, version: number): void {
    const timer = setTimeout(() => {
      this.#sweeps.delete(timer);
      if (this.#closed) return;
      this.#sql`
        DELETE FROM pod_broker_chunks
        WHERE pod_id = ${id} AND version = ${version}`
        // Left for the next update of the pod to remove.
        .catch(() => {});
    }, this.#keepOldVersionMs);
    this.#sweeps.add(timer);
    // Never keeps a process alive.
    (timer as { unref?: () => void }).unref?.();
  }

  /** The record of `id`, or null. */
  async getRecord(id: string): Promise<PodRecord | null> {
    const action = `read pod '${id}'`;
    await this.#ready_(action);
    try {
      // Hits written while the row was read would be counted twice.
      const [row] = await this.#hits.read(() =>
        this.#sql<PodRow[]>`
        SELECT ${this.#sql.unsafe(COLUMNS)} FROM pod_broker_pods
        WHERE id = ${id}`
      );
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
    const current = await this.#blobSize(id, action);
    if (current === null) return null;
    const { size, version } = current;
    let rows;
    try {
      rows = await this.#sql<{ data: string }[]>`
        SELECT encode(bytes, 'base64') AS data FROM pod_broker_chunks
        WHERE pod_id = ${id} AND version = ${version} ORDER BY seq`;
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
    // Fewer bytes: deleted (or its version swept) between the two queries.
    return offset === size ? blob : null;
  }

  /**
   * The blob of `id` as a stream of its stored chunks (one query each, no
   * connection held in between), or null. If the pod is deleted while the
   * stream is read, the stream ends with an error.
   */
  async getBlobStream(id: string): Promise<ReadableStream<Uint8Array> | null> {
    const action = `read pod '${id}'`;
    const current = await this.#blobSize(id, action);
    if (current === null) return null;
    const { size, version } = current;
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
            WHERE pod_id = ${id} AND version = ${version} AND seq = ${seq}`;
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
    for (const timer of this.#sweeps) clearTimeout(timer);
    this.#sweeps.clear();
    await this.#sql.end({ timeout: 5 });
  }

  #wrap(action: string, error: unknown): Error {
    return this.#errors.wrap(action, error);
  }

  async #ready_(action: string): Promise<void> {
    if (this.#closed) {
      throw new Error(`Cannot ${action}: the registry is closed`);
    }
    await this.ready();
  }

  /** The size and version of the current blob of `id`, or null. */
  async #blobSize(
    id: string,
    action: string,
  ): Promise<{ size: number; version: number } | null> {
    await this.#ready_(action);
    try {
      const [row] = await this.#sql<{ blob_size: string; version: number }[]>`
        SELECT blob_size, version FROM pod_broker_pods WHERE id = ${id}`;
      return row
        ? { size: Number(row.blob_size), version: Number(row.version) }
        : null;
    } catch (error) {
      throw this.#wrap(action, error);
    }
  }
}
