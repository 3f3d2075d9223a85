import assert from "node:assert/strict";
import { existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { MemoryRegistry } from "../../src/registries/memory.ts";
import { SqliteRegistry } from "../../src/registries/sqlite.ts";
import type { PodRecord, Registry } from "../../src/registries/types.ts";
import {
  assertSameBytes,
  checkHitBatching,
  checkStreamAcrossUpdate,
  pseudoRandomBytes,
  registryContract,
  sampleRecord,
} from "../support/registry_contract.ts";

/** The smallest custom registry: four methods over a map. */
export function minimalRegistry(): Registry {
  const pods = new Map<string, { record: PodRecord; blob: Uint8Array }>();
  return {
    putPod: (record, blob) => {
      pods.set(record.id, { record: { ...record }, blob });
      return Promise.resolve();
    },
    getRecord: (id) =>
      Promise.resolve(pods.has(id) ? { ...pods.get(id)!.record } : null),
    getBlob: (id) => Promise.resolve(pods.get(id)?.blob ?? null),
    bumpHits: (id) => {
      const pod = pods.get(id);
      if (pod) pod.record.hits += 1;
      return Promise.resolve();
    },
  };
}

registryContract("MemoryRegistry", () => Promise.resolve(new MemoryRegistry()));
registryContract(
  "SqliteRegistry",
  async () => new SqliteRegistry({ dataDir: await Deno.makeTempDir() }),
);
registryContract(
  "minimal custom registry",
  () => Promise.resolve(minimalRegistry()),
  { takedown: false },
);

/** Runs `fn` with an SQLite registry in a fresh folder, closed after. */
async function withSqlite(
  fn: (registry: SqliteRegistry, dataDir: string) => Promise<void>,
): Promise<void> {
  const dataDir = await Deno.makeTempDir();
  const registry = new SqliteRegistry({ dataDir });
  try {
    await fn(registry, dataDir);
  } finally {
    registry.close();
  }
}

/**
 * A fresh folder where an SQLite registry stored pod `id` (`<p>kept</p>`),
 * ran `then`, and was closed.
 */
async function storedAndClosed(
  id: string,
  then: (registry: SqliteRegistry) => Promise<void> = async () => {},
): Promise<{ dataDir: string; blob: Uint8Array }> {
  const dataDir = await Deno.makeTempDir();
  const blob = new TextEncoder().encode("<p>kept</p>");
  const first = new SqliteRegistry({ dataDir });
  await first.putPod(sampleRecord(id, blob), blob);
  await then(first);
  first.close();
  return { dataDir, blob };
}

Deno.test("SqliteRegistry persists records, blobs and hits across reopening", async () => {
  const { dataDir, blob } = await storedAndClosed(
    "persist00001",
    (first) => first.bumpHits("persist00001"),
  );
  const second = new SqliteRegistry({ dataDir });
  try {
    assert.equal((await second.getRecord("persist00001"))?.hits, 1);
    assert.deepEqual(await second.getBlob("persist00001"), blob);
  } finally {
    second.close();
  }
});

Deno.test("SqliteRegistry counts hits at once, writes them together a second later, and close() writes the rest", async () => {
  const dataDir = await Deno.makeTempDir();
  const broker = new SqliteRegistry({ dataDir });
  // Another connection, as `pod-broker list` is: it sees what is written.
  const other = new SqliteRegistry({ dataDir });
  try {
    await checkHitBatching(broker, other);
  } finally {
    broker.close();
    other.close();
  }
});

Deno.test("SqliteRegistry removes stray temporary files and orphan blobs when it opens", async () => {
  const { dataDir, blob } = await storedAndClosed("kept00000001");
  const stray = join(dataDir, "blobs", ".tmp-crash0000001-abcdefgh");
  const orphan = join(dataDir, "blobs", "orphan000001");
  writeFileSync(stray, "half a blob");
  writeFileSync(orphan, "renamed, never committed");
  const second = new SqliteRegistry({ dataDir });
  try {
    assert.equal(existsSync(stray), false);
    assert.equal(existsSync(orphan), false);
    assert.deepEqual(await second.getBlob("kept00000001"), blob);
  } finally {
    second.close();
  }
});

Deno.test("SqliteRegistry.deletePod() removes the record and the blob file", async () => {
  await withSqlite(async (registry, dataDir) => {
    const blob = new TextEncoder().encode("<p>gone</p>");
    await registry.putPod(sampleRecord("delete000001", blob), blob);
    const file = join(dataDir, "blobs", "delete000001");
    assert.equal(existsSync(file), true);
    assert.equal(await registry.deletePod("delete000001"), true);
    assert.equal(existsSync(file), false);
    assert.equal(await registry.getRecord("delete000001"), null);
    assert.equal(await registry.deletePod("delete000001"), false);
  });
});

Deno.test("SqliteRegistry: a stream opened before deletePod() still reads the whole blob", async () => {
  await withSqlite(async (registry) => {
    const blob = pseudoRandomBytes(3 * 256 * 1024 + 11, 4);
    await registry.putPod(sampleRecord("reading00001", blob), blob);
    const stream = await registry.getBlobStream("reading00001");
    assert.equal(await registry.deletePod("reading00001"), true);
    assert.equal(await registry.getBlobStream("reading00001"), null);
    assertSameBytes(
      new Uint8Array(await new Response(stream).arrayBuffer()),
      blob,
      "the stream opened before",
    );
  });
});

Deno.test("SqliteRegistry.putPod() with a taken id fails and keeps the first pod whole", async () => {
  await withSqlite(async (registry) => {
    const first = new TextEncoder().encode("<p>first</p>");
    await registry.putPod(sampleRecord("taken0000001", first), first);
    const second = new TextEncoder().encode("<p>second</p>");
    await assert.rejects(
      registry.putPod(sampleRecord("taken0000001", second), second),
    );
    assert.deepEqual(await registry.getBlob("taken0000001"), first);
  });
});

Deno.test("SqliteRegistry leaves no temporary file after a write", async () => {
  await withSqlite(async (registry, dataDir) => {
    const blob = new TextEncoder().encode("<p>x</p>");
    await registry.putPod(sampleRecord("clean0000001", blob), blob);
    const names = [...Deno.readDirSync(join(dataDir, "blobs"))].map((e) =>
      e.name
    );
    assert.deepEqual(names, ["clean0000001"]);
  });
});

Deno.test("SqliteRegistry requires dataDir", () => {
  assert.throws(
    () => new SqliteRegistry({} as { dataDir: string }),
    { name: "TypeError", message: /dataDir/ },
  );
});

Deno.test("SqliteRegistry.updatePod() keeps one blob file, a stream opened before reads the old version whole, and deletePod() removes it", async () => {
  const dataDir = await Deno.makeTempDir();
  const blobs = join(dataDir, "blobs");
  const files = () => [...Deno.readDirSync(blobs)].map((entry) => entry.name);
  let registry = new SqliteRegistry({ dataDir });
  try {
    const id = "swap00000001";
    await checkStreamAcrossUpdate(registry, id);
    assert.deepEqual(files().length, 1);
    assert.match(files()[0]!, /^swap00000001\.[A-Za-z0-9]{12}$/);
    registry.close();
    registry = new SqliteRegistry({ dataDir });
    assert.equal((await registry.getRecord(id))?.version, 2);
    assert.equal((await registry.getBlob(id))?.length, 1000);
    assert.equal(files().length, 1);
    assert.equal(await registry.deletePod(id), true);
    assert.deepEqual(files(), []);
  } finally {
    registry.close();
  }
});

Deno.test("SqliteRegistry opens a database made before updates existed and updates its pods", async () => {
  const dataDir = await Deno.makeTempDir();
  Deno.mkdirSync(join(dataDir, "blobs"));
  const { DatabaseSync } = await import("node:sqlite");
  const db = new DatabaseSync(join(dataDir, "pods.sqlite"));
  db.exec(`CREATE TABLE pods (id TEXT PRIMARY KEY, owner_pubkey TEXT NOT NULL,
    blob_size INTEGER NOT NULL, sha256 TEXT NOT NULL, content_sha256 TEXT NOT NULL,
    name TEXT, created_at TEXT, uploaded_at TEXT NOT NULL,
    hits INTEGER NOT NULL DEFAULT 0) STRICT`);
  const blob = new TextEncoder().encode("<p>old</p>");
  const record = sampleRecord("legacy000001", blob);
  const columns = Object.values(record).slice(0, 8) as (string | number)[];
  db.prepare("INSERT INTO pods VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)")
    .run(...columns, 7);
  db.close();
  writeFileSync(join(dataDir, "blobs", record.id), blob);
  const registry = new SqliteRegistry({ dataDir });
  try {
    assert.deepEqual(await registry.getRecord(record.id), {
      ...record,
      hits: 7,
    });
    assertSameBytes(await registry.getBlob(record.id), blob, "legacy blob");
    const next = new TextEncoder().encode("<p>new</p>");
    assert.equal(
      await registry.updatePod(
        { ...record, sha256: "N".repeat(43) },
        next,
        record.sha256,
      ),
      true,
    );
    assertSameBytes(await registry.getBlob(record.id), next, "updated");
    assert.equal(existsSync(join(dataDir, "blobs", record.id)), false);
  } finally {
    registry.close();
  }
});
