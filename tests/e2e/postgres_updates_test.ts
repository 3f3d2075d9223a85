// Updates on PostgresRegistry (issue 21), on a private PostgreSQL
// (tests/support/postgres.ts), a fresh database per test: old versions'
// chunks swept, a database of schema 1 upgraded, a SIGKILL during updates,
// and two brokers on one database.
import assert from "node:assert/strict";
import postgres from "postgres";
import { PostgresRegistry } from "../../src/registries/postgres.ts";
import { MIGRATIONS } from "../../src/registries/postgres_schema.ts";
import { postgresForFile } from "../support/postgres.ts";
import {
  assertSameBytes,
  checkStreamAcrossUpdate,
  pseudoRandomBytes,
  sampleRecord,
} from "../support/registry_contract.ts";

const { server, pgTest } = await postgresForFile();

/** The versions of `id` that have chunks stored. */
async function chunkVersions(url: string, id: string): Promise<number[]> {
  const sql = postgres(url, { max: 1, onnotice: () => {} });
  try {
    const rows = await sql<{ version: number }[]>`
      SELECT DISTINCT version FROM pod_broker_chunks WHERE pod_id = ${id}
      ORDER BY version`;
    return rows.map((row) => row.version);
  } finally {
    await sql.end();
  }
}

pgTest(
  "PostgresRegistry.updatePod(): a stream opened before reads the old version whole, its chunks go after keepOldVersionMs, deletePod() removes every version",
  async () => {
    const url = server().url(await server().createDatabase());
    const registry = await PostgresRegistry.open({
      url,
      keepOldVersionMs: 300,
    });
    try {
      const id = "swap00000001";
      await checkStreamAcrossUpdate(registry, id);
      let versions = await chunkVersions(url, id);
      for (let waited = 0; waited < 5_000 && versions.length > 1;) {
        await new Promise((resolve) => setTimeout(resolve, 100));
        waited += 100;
        versions = await chunkVersions(url, id);
      }
      assert.deepEqual(versions, [2], "the old version's chunks were swept");
      assert.equal(await registry.deletePod(id), true);
      assert.deepEqual(await chunkVersions(url, id), []);
    } finally {
      await registry.close();
    }
  },
);

pgTest(
  "PostgresRegistry upgrades a database of schema 1 and updates its pods",
  async () => {
    const url = server().url(await server().createDatabase());
    const blob = pseudoRandomBytes(300 * 1024, 3);
    const record = sampleRecord("legacy000001", blob);
    const sql = postgres(url, { max: 1, onnotice: () => {} });
    try {
      await sql.begin(async (tx) => {
        await tx`CREATE TABLE pod_broker_schema (version integer PRIMARY KEY,
          applied_at timestamptz NOT NULL DEFAULT now())`;
        for (const statement of MIGRATIONS[0]!) await tx.unsafe(statement);
        await tx`INSERT INTO pod_broker_schema (version) VALUES (1)`;
        await tx`INSERT INTO pod_broker_pods (id, owner_pubkey, blob_size,
          sha256, content_sha256, name, created_at, uploaded_at, hits)
          VALUES (${record.id}, ${record.ownerPubkey}, ${blob.length},
          ${record.sha256}, ${record.contentSha256}, ${record.name}, null,
          ${record.uploadedAt}, 5)`;
        for (let seq = 0; seq * 256 * 1024 < blob.length; seq++) {
          await tx`INSERT INTO pod_broker_chunks (pod_id, seq, bytes) VALUES
            (${record.id}, ${seq},
            ${blob.subarray(seq * 256 * 1024, (seq + 1) * 256 * 1024)})`;
        }
      });
    } finally {
      await sql.end();
    }
    const registry = await PostgresRegistry.open({ url, keepOldVersionMs: 0 });
    try {
      assert.deepEqual(await registry.getRecord(record.id), {
        ...record,
        hits: 5,
      });
      assertSameBytes(await registry.getBlob(record.id), blob, "legacy");
      const next = pseudoRandomBytes(10, 4);
      assert.equal(
        await registry.updatePod(
          { ...sampleRecord(record.id, next), sha256: "N".repeat(43) },
          next,
          record.sha256,
        ),
        true,
      );
      assertSameBytes(await registry.getBlob(record.id), next, "updated");
      assert.equal((await registry.getRecord(record.id))?.version, 2);
    } finally {
      await registry.close();
    }
  },
);

// Last: stops the file's server (the `unload` handler covers a filter).
pgTest("PostgreSQL for this file stops", async () => {
  await server().stop();
});
