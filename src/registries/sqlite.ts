/**
 * A persistent registry: records in a SQLite file (`node:sqlite`, built into
 * Deno 2.2+ and Node 22.13+), blobs as files in `dataDir/blobs/`.
 *
 * A blob is written to a temporary file, synced, and renamed into place
 * before its record is committed, so a crash at any moment leaves no record
 * without its blob. An update writes its blob under a new name
 * (`ID.RANDOM`), commits the record that names it, and then removes the old
 * file: a reader holds the old file or the new one, never a mix. Temporary
 * files and blobs no record names, which only a crash leaves behind, are
 * removed when the registry opens.
 *
 * @module
 */

import { nodeBuiltin } from "../_util/host.ts";
import type { DatabaseSync, StatementSync } from "node:sqlite";
import { randomAlphanumeric } from "../_util/id.ts";
import type { PodRecord, Registry } from "./types.ts";
import { Lru } from "../_util/lru.ts";
import { type PodRow, storedName, toRecord } from "./_row.ts";
import { ADDED_COLUMNS, SCHEMA } from "./sqlite_schema.ts";
import { HitBatcher } from "./hit_batcher.ts";

// The file system, through host.ts: the module loads with the first
// registry, so that importing this file (the package's entry does) loads
// nothing.
const fsSync = () => nodeBuiltin("node:fs");
const fs = () => nodeBuiltin("node:fs/promises");
const join = (...parts: string[]) => nodeBuiltin("node:path").join(...parts);

/**
 * How long a record read is reused. A pod deleted by this registry is
 * forgotten at once; one deleted by another process (`pod-broker delete`)
 * stops being served within this time, well inside the second promised.
 */
const RECORD_REUSE_MS = 250;
/** Most records kept for reuse (oldest dropped first). */
const RECORD_REUSE_MAX = 10_000;

/** Options of {@linkcode SqliteRegistry}. */
export interface SqliteRegistryOptions {
  /** Directory for `pods.sqlite` and `blobs/`; created when missing. */
  dataDir: string;
  /**
   * Remove, on opening, the temporary and blob files that no record names
   * (left by a crash). Pass false from a second process that opens a
   * running broker's folder (`pod-broker list`, `delete`): the broker's
   * upload in flight has such a file until its row is committed.
   * @default {true}
   */
  removeStrays?: boolean;
}

const TEMP_PREFIX = ".tmp-";
const STREAM_CHUNK_BYTES = 256 * 1024;

/** A row as read: the record, and its blob's file name. */
interface Current {
  record: PodRecord;
  file: string;
}

/**
 * Stores pods in `dataDir`, across restarts.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { SqliteRegistry } from "./sqlite.ts";
 *
 * const registry = new SqliteRegistry({ dataDir: await Deno.makeTempDir() });
 * assert.equal(await registry.getRecord("AAAAAAAAAAAA"), null);
 * registry.close();
 * ```
 */
export class SqliteRegistry implements Registry {
  #db: DatabaseSync;
  #blobDir: string;
  #insert: StatementSync;
  #update: StatementSync;
  #select: StatementSync;
  #bump: StatementSync;
  #delete: StatementSync;
  #tombstone: StatementSync;
  #isDeleted: StatementSync;
  #listAll: StatementSync;
  #listOwner: StatementSync;
  /** Hits counted and not yet written. */
  #hits = new HitBatcher((hits) => this.#writeHits(hits));
  /** Records read lately, with when: serving a hot pod reads no row. */
  #recent = new Lru<string, { current: Current; at: number }>({
    maxEntries: RECORD_REUSE_MAX,
  });

  /**
   * Opens (or creates) the registry in `dataDir` and removes what a crash
   * left behind.
   *
   * @param options The data directory.
   * @throws {TypeError} When `dataDir` is missing.
   * @throws {Error} When the directory cannot be created or written.
   */
  constructor(options: SqliteRegistryOptions) {
    if (typeof options?.dataDir !== "string" || options.dataDir === "") {
      throw new TypeError(
        "Cannot open SqliteRegistry: option 'dataDir' is required",
      );
    }
    this.#blobDir = join(options.dataDir, "blobs");
    fsSync().mkdirSync(this.#blobDir, { recursive: true });
    this.#db = new (loadSqlite())(join(options.dataDir, "pods.sqlite"));
    // busy_timeout first: the operator's commands open the database while
    // a broker writes to it, and even setting the journal mode can meet a
    // lock, which fails at once without a timeout.
    this.#db.exec(
      "PRAGMA busy_timeout = 5000; PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL;",
    );
    this.#db.exec(SCHEMA);
    this.#addColumns();
    this.#insert = this.#db.prepare(
      `INSERT INTO pods (id, owner_pubkey, blob_size, sha256, content_sha256, name, name_json,
        created_at, uploaded_at, hits, version, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    );
    this.#update = this.#db.prepare(
      `UPDATE pods SET owner_pubkey = ?, blob_size = ?, sha256 = ?, content_sha256 = ?,
        name = ?, name_json = ?, created_at = ?, version = version + 1, updated_at = ?, blob = ?
        WHERE id = ? AND sha256 = ?`,
    );
    this.#select = this.#db.prepare("SELECT * FROM pods WHERE id = ?");
    this.#bump = this.#db.prepare(
      "UPDATE pods SET hits = hits + ? WHERE id = ?",
    );
    this.#delete = this.#db.prepare("DELETE FROM pods WHERE id = ?");
    this.#tombstone = this.#db.prepare(
      "INSERT OR IGNORE INTO deleted (id, deleted_at) VALUES (?, ?)",
    );
    this.#isDeleted = this.#db.prepare("SELECT 1 FROM deleted WHERE id = ?");
    this.#listAll = this.#db.prepare(
      "SELECT * FROM pods ORDER BY uploaded_at, rowid",
    );
    this.#listOwner = this.#db.prepare(
      "SELECT * FROM pods WHERE owner_pubkey = ? ORDER BY uploaded_at, rowid",
    );
    if (options.removeStrays !== false) this.#removeStrays();
  }

  /** Writes the blob (temp file, sync, rename), then commits the record. */
  async putPod(record: PodRecord, blob: Uint8Array): Promise<void> {
    if (this.#select.get(record.id) || this.#isDeleted.get(record.id)) {
      throw new Error(`Cannot store pod '${record.id}': the id is taken`);
    }
    const path = this.#blobPath(record.id);
    const temp = await this.#writeTemp(record.id, blob);
    try {
      await fs().rename(temp, path);
      this.#insert.run(
        record.id,
        ...versionFields(record),
        record.uploadedAt,
        record.hits,
        record.version ?? 1,
        record.updatedAt ?? record.uploadedAt,
      );
    } catch (error) {
      await fs().rm(temp, { force: true });
      // The rename may have happened: a blob without its record must go too,
      // unless the insert failed because the id was already stored.
      if (!this.#select.get(record.id)) await fs().rm(path, { force: true });
      throw error;
    }
  }

  /**
   * Replaces the pod if its `sha256` is still `expectedSha256`: the new blob
   * is written under a new name (temp file, sync, rename), the record that
   * names it is committed only if the digest still matches, and then the
   * old file is removed (a stream already open on it reads on). Whether it
   * replaced the pod.
   */
  async updatePod(
    record: PodRecord,
    blob: Uint8Array,
    expectedSha256: string,
  ): Promise<boolean> {
    const name = `${record.id}.${randomAlphanumeric(12)}`;
    const path = join(this.#blobDir, name);
    const temp = await this.#writeTemp(record.id, blob);
    let old: string | null = null;
    try {
      await fs().rename(temp, path);
      this.#db.exec("BEGIN IMMEDIATE");
      try {
        const row = this.#select.get(record.id) as PodRow | undefined;
        const changes = Number(
          this.#update.run(
            ...versionFields(record),
            record.updatedAt ?? new Date().toISOString(),
            name,
            record.id,
            expectedSha256,
          ).changes,
        );
        this.#db.exec("COMMIT");
        if (changes > 0) old = fileOf(row!);
      } catch (error) {
        this.#db.exec("ROLLBACK");
        throw error;
      }
    } catch (error) {
      await fs().rm(temp, { force: true });
      await fs().rm(path, { force: true });
      throw error;
    } finally {
      this.#recent.delete(record.id);
    }
    await fs().rm(old === null ? path : join(this.#blobDir, old), {
      force: true,
    });
    return old !== null;
  }

  /** The record of `id`, or null. */
  getRecord(id: string): Promise<PodRecord | null> {
    return Promise.resolve(this.getRecordNow(id));
  }

  /**
   * The record of `id`, read synchronously (node:sqlite is), or null; its
   * `hits` include those not yet written. A record read in the last 250 ms
   * is reused (see `RECORD_REUSE_MS`).
   */
  getRecordNow(id: string): PodRecord | null {
    const current = this.#current(id, false);
    if (current === null) return null;
    return {
      ...current.record,
      hits: current.record.hits + this.#hits.pending(id),
    };
  }

  /**
   * The row of `id`: the one read in the last 250 ms unless `fresh`. The
   * record and the blob of one request come from the same read, so they
   * always belong together.
   */
  #current(id: string, fresh: boolean): Current | null {
    const now = Date.now();
    let recent = this.#recent.get(id);
    if (fresh || recent === undefined || now - recent.at > RECORD_REUSE_MS) {
      const row = this.#select.get(id) as PodRow | undefined;
      this.#recent.delete(id);
      if (row === undefined) return null;
      recent = {
        current: { record: toRecord(row), file: fileOf(row) },
        at: now,
      };
      this.#recent.set(id, recent);
    }
    return recent.current;
  }

  /**
   * Opens the current blob file of `id`, or null. A file removed by an
   * update or a delete since the row was read is looked up again.
   */
  async #openBlob<T>(
    id: string,
    read: (path: string) => Promise<T>,
  ): Promise<T | null> {
    for (let attempt = 0; attempt < 3; attempt++) {
      const current = this.#current(id, attempt > 0);
      if (current === null) return null;
      try {
        return await read(join(this.#blobDir, current.file));
      } catch (error) {
        if (!isNotFound(error)) throw error;
      }
    }
    return null;
  }

  /** The blob of `id`, read whole, or null. */
  async getBlob(id: string): Promise<Uint8Array | null> {
    const bytes = await this.#openBlob(id, (path) => fs().readFile(path));
    return bytes === null ? null : new Uint8Array(bytes);
  }

  /** The blob of `id` as a stream of 256 KiB chunks, or null. */
  async getBlobStream(id: string): Promise<ReadableStream<Uint8Array> | null> {
    const handle = await this.#openBlob(id, (path) => fs().open(path, "r"));
    if (handle === null) return null;
    return new ReadableStream<Uint8Array>({
      async pull(controller) {
        const buffer = new Uint8Array(STREAM_CHUNK_BYTES);
        const { bytesRead } = await handle.read(buffer, 0, buffer.length, null);
        if (bytesRead === 0) {
          await handle.close();
          controller.close();
        } else {
          controller.enqueue(buffer.subarray(0, bytesRead));
        }
      },
      async cancel() {
        await handle.close();
      },
    });
  }

  /**
   * Counts one more hit for `id`. Hits are written together, at most a
   * second after the first one, in one transaction (see `HitBatcher`).
   * Reads include the hits not yet written; a crash loses at most that
   * long of them.
   */
  bumpHits(id: string): Promise<void> {
    this.#hits.count(id);
    return Promise.resolve();
  }

  /** Writes counted hits in one transaction; throws when it failed. */
  #writeHits(hits: ReadonlyMap<string, number>): void {
    if (!this.#db.isOpen) throw new Error("Cannot count hits: closed");
    this.#db.exec("BEGIN IMMEDIATE");
    try {
      for (const [id, count] of hits) this.#bump.run(count, id);
      this.#db.exec("COMMIT");
    } catch (error) {
      this.#db.exec("ROLLBACK");
      throw error;
    }
    // What is kept for reuse now has them written.
    for (const [id, count] of hits) {
      const recent = this.#recent.get(id);
      if (recent !== undefined) recent.current.record.hits += count;
    }
  }

  /**
   * Takes `id` down: in one transaction removes its record and keeps a
   * tombstone (so its URL answers 410), then removes the blob. Safe while a
   * broker runs on the same directory. Whether there was a pod.
   */
  async deletePod(id: string): Promise<boolean> {
    this.#recent.delete(id);
    this.#db.exec("BEGIN IMMEDIATE");
    let changes;
    let file = id;
    try {
      const row = this.#select.get(id) as PodRow | undefined;
      if (row !== undefined) file = fileOf(row);
      changes = Number(this.#delete.run(id).changes);
      if (changes > 0) this.#tombstone.run(id, new Date().toISOString());
      this.#db.exec("COMMIT");
    } catch (error) {
      this.#db.exec("ROLLBACK");
      throw error;
    }
    await fs().rm(join(this.#blobDir, file), { force: true });
    return changes > 0;
  }

  /** Whether `id` was taken down by {@linkcode SqliteRegistry.deletePod}. */
  isDeleted(id: string): Promise<boolean> {
    return Promise.resolve(this.#isDeleted.get(id) !== undefined);
  }

  /** The stored records, oldest first, of one owner key or all. */
  async *listPods(options: { owner?: string } = {}): AsyncIterable<PodRecord> {
    const rows = options.owner === undefined
      ? this.#listAll.iterate()
      : this.#listOwner.iterate(options.owner);
    for (const row of rows) yield toRecord(row as unknown as PodRow);
  }

  /** Closes the database. */
  close(): void {
    void this.#hits.close();
    if (this.#db.isOpen) this.#db.close();
  }

  #blobPath(id: string): string {
    return join(this.#blobDir, id);
  }

  /** Writes `blob` to a new temporary file, synced; its path. */
  async #writeTemp(id: string, blob: Uint8Array): Promise<string> {
    const temp = join(
      this.#blobDir,
      `${TEMP_PREFIX}${id}-${randomAlphanumeric(8)}`,
    );
    try {
      const file = await fs().open(temp, "wx");
      try {
        await file.writeFile(blob);
        await file.sync();
      } finally {
        await file.close();
      }
    } catch (error) {
      await fs().rm(temp, { force: true });
      throw error;
    }
    return temp;
  }

  /** Adds the columns a database made by an older release lacks. */
  #addColumns(): void {
    const has = () =>
      new Set(
        (this.#db.prepare("PRAGMA table_info(pods)").all() as {
          name: string;
        }[]).map((column) => column.name),
      );
    if (ADDED_COLUMNS.every(([name]) => has().has(name))) return;
    // Checked again inside: another process may be adding them too.
    this.#db.exec("BEGIN IMMEDIATE");
    try {
      const present = has();
      for (const [name, definition] of ADDED_COLUMNS) {
        if (!present.has(name)) {
          this.#db.exec(`ALTER TABLE pods ADD COLUMN ${name} ${definition}`);
        }
      }
      this.#db.exec("COMMIT");
    } catch (error) {
      this.#db.exec("ROLLBACK");
      throw error;
    }
  }

  /** Removes temporary files and blob files that no record names. */
  #removeStrays(): void {
    const named = new Set<string>();
    for (const row of this.#db.prepare("SELECT id, blob FROM pods").iterate()) {
      named.add(fileOf(row as unknown as PodRow));
    }
    for (const name of fsSync().readdirSync(this.#blobDir)) {
      if (name.startsWith(TEMP_PREFIX) || !named.has(name)) {
        fsSync().rmSync(join(this.#blobDir, name), {
          force: true,
          recursive: true,
        });
      }
    }
  }
}

/**
 * `node:sqlite`, loaded on first use: on Node, importing it prints an
 * ExperimentalWarning, which `--registry memory` and `--help` should not.
 */
function loadSqlite(): typeof DatabaseSync {
  return nodeBuiltin("node:sqlite").DatabaseSync;
}

/** The columns that describe a version, in the order both statements use. */
function versionFields(
  record: PodRecord,
): [
  string,
  number,
  string,
  string,
  string | null,
  string | null,
  string | null,
] {
  return [
    record.ownerPubkey,
    record.blobSize,
    record.sha256,
    record.contentSha256,
    ...storedName(record.name),
    record.createdAt,
  ];
}

/** The blob file of a row: its own name after an update, else the id. */
function fileOf(row: PodRow & { blob?: string | null }): string {
  return row.blob ?? row.id;
}

function isNotFound(error: unknown): boolean {
  return (error as { code?: string })?.code === "ENOENT";
}
