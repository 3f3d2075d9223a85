// Updates on PostgresRegistry (issue 21), on a private PostgreSQL
// (tests/support/postgres.ts), a fresh database per test: old versions'
// chunks swept, a database of schema 1 upgraded, a SIGKILL during updates,
// and two brokers on one database.
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import postgres from "postgres";
import { PostgresRegistry } from "../../src/registries/postgres.ts";
import { MIGRATIONS } from "../../src/registries/postgres_schema.ts";
import { updateHeaders } from "../contract/_pods.ts";
import {
  DENO_API,
  newSeed,
  putUpdate,
  signedPod,
  startServer,
  upload,
} from "../support/helpers.ts";
import { openRegistry, postgresForFile } from "../support/postgres.ts";
import { runUpdateCrashLoop } from "../support/update_crash.ts";
import {
  assertSameBytes,
  checkStreamAcrossUpdate,
  pseudoRandomBytes,
  sampleRecord,
} from "../support/registry_contract.ts";

const { server, pgTest, freshUrl } = await postgresForFile();

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
    const url = await freshUrl();
    await using registry = await openRegistry({
      url,
      keepOldVersionMs: 300,
    });
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
  },
);

pgTest(
  "PostgresRegistry upgrades a database of schema 1 and updates its pods",
  async () => {
    const url = await freshUrl();
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
    await using registry = await openRegistry({ url, keepOldVersionMs: 0 });
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
  },
);

pgTest(
  "PostgresRegistry: SIGKILLs during concurrent updates lose no acknowledged version and leave no torn pod",
  async () => {
    const url = await freshUrl();
    const report = await runUpdateCrashLoop({
      flags: ["--registry", "postgres"],
      env: { DATABASE_URL: url },
      kills: 3,
      // Right after each kill: each record's version has all its chunks.
      afterKill: async () => {
        const sql = postgres(url, { max: 1, onnotice: () => {} });
        try {
          const rows = await sql<{ id: string; sha256: string }[]>`
            SELECT id, sha256 FROM pod_broker_pods`;
          assert.ok(rows.length > 0);
          for (const { id, sha256 } of rows) {
            const chunks = await sql<{ bytes: Uint8Array }[]>`
              SELECT c.bytes FROM pod_broker_chunks c
              JOIN pod_broker_pods p ON p.id = c.pod_id AND p.version = c.version
              WHERE c.pod_id = ${id} ORDER BY c.seq`;
            const hash = createHash("sha256");
            for (const { bytes } of chunks) hash.update(bytes);
            assert.equal(hash.digest("base64url"), sha256, `pod ${id}`);
          }
        } finally {
          await sql.end();
        }
      },
    });
    assert.ok(report.acknowledged > 0, "no update was acknowledged");
  },
);

pgTest(
  "two brokers on one PostgreSQL: an update through A is served by B within a second",
  async () => {
    const url = await freshUrl();
    const registries = await Promise.all(
      [0, 1].map(() => PostgresRegistry.open({ url })),
    );
    try {
      await using a = await startServer({ registry: registries[0]! });
      await using b = await startServer({ registry: registries[1]! });
      const seed = await newSeed();
      const v1 = await signedPod("<p>one</p>", {
        createdAt: "2026-01-01T00:00:00Z",
      }, seed);
      const created = await upload(a.url, v1);
      assert.equal(created.status, 201);
      const { id } = await created.json();
      // B has v1 ready (its response cache).
      for (let i = 0; i < 2; i++) {
        assert.equal(
          await (await fetch(`${b.url}/${id}`)).text(),
          new TextDecoder().decode(v1),
        );
      }
      const v2 = await signedPod("<p>two</p>", {
        createdAt: "2026-01-02T00:00:00Z",
      }, seed);
      const updated = await putUpdate(a.url, id, v2, seed);
      assert.equal(updated.status, 200, await updated.clone().text());
      const deadline = Date.now() + 1_000;
      let served = "";
      do {
        served = await (await fetch(`${b.url}/${id}`)).text();
      } while (
        served !== new TextDecoder().decode(v2) && Date.now() < deadline
      );
      assert.equal(
        served,
        new TextDecoder().decode(v2),
        "B serves v2 within a second",
      );
      const meta = await (await fetch(`${b.url}/${id}/meta`)).json();
      assert.equal(meta.version, 2);
    } finally {
      await Promise.all(registries.map((registry) => registry.close()));
    }
  },
);

pgTest(
  "update bound to its pod (postgres): a keyless PUT of the owner's other pod is 403 update_unauthorized; a statement naming a version no longer stored is 409 stale_update",
  async () => {
    const url = await freshUrl();
    await using registry = await openRegistry({ url });
    await using broker = await startServer({ registry });
    const seed = await newSeed();
    const pod = (text: string, day: string) =>
      signedPod(`<p>${text}</p>`, {
        createdAt: `2026-01-${day}T00:00:00Z`,
      }, seed);
    const a = await pod("A", "01");
    const b = await pod("B", "02");
    const [idA] = await Promise.all([a, b].map(async (blob) => {
      const created = await upload(broker.url, blob);
      assert.equal(created.status, 201);
      return (await created.json()).id as string;
    }));
    const keyless = await fetch(`${broker.url}/${idA}`, {
      method: "PUT",
      headers: { "Content-Type": "text/html" },
      body: b,
    });
    assert.equal(keyless.status, 403);
    assert.equal((await keyless.json()).code, "update_unauthorized");
    // Two updates signed for v1: the first lands, the second is stale.
    const v2 = await pod("A2", "03");
    const v3 = await pod("A3", "04");
    const forV2 = await updateHeaders(DENO_API, broker.url, idA!, v2, seed);
    const forV3 = await updateHeaders(DENO_API, broker.url, idA!, v3, seed);
    const put = (body: Uint8Array<ArrayBuffer>, headers: object) =>
      fetch(`${broker.url}/${idA}`, {
        method: "PUT",
        headers: { "Content-Type": "text/html", ...headers },
        body,
      });
    assert.equal((await put(v2, forV2)).status, 200);
    const stale = await put(v3, forV3);
    assert.equal(stale.status, 409);
    assert.equal((await stale.json()).code, "stale_update");
    const meta = await (await fetch(`${broker.url}/${idA}/meta`)).json();
    assert.equal(meta.version, 2);
    assert.equal(
      await (await fetch(`${broker.url}/${idA}`)).text(),
      new TextDecoder().decode(v2),
    );
  },
);

// Last: stops the file's server (the `unload` handler covers a filter).
pgTest("PostgreSQL for this file stops", async () => {
  await server().stop();
});
