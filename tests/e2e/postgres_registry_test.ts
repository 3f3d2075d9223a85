// PostgresRegistry on a real PostgreSQL: one private server for this file
// (tests/support/postgres.ts), a fresh database per test. The shared registry
// contract, then what only Postgres has: concurrent migrations, a broker
// killed mid-upload, the server going down and coming back, passwords kept
// out of every message, hits written in batches. The CLI is in
// postgres_cli_test.ts.
import assert from "node:assert/strict";
import { supportFile } from "../support/paths.ts";
import { Buffer } from "node:buffer";
import postgres from "postgres";
import {
  POSTGRES_CHUNK_BYTES,
  POSTGRES_SCHEMA_VERSION,
  PostgresRegistry,
} from "../../src/registries/postgres.ts";
import { childPod } from "../support/pg_upload_child.ts";
import { openRegistry, postgresForFile } from "../support/postgres.ts";
import { signedPod, startServer, upload } from "../support/helpers.ts";
import {
  assertSameBytes,
  checkHitBatching,
  pseudoRandomBytes,
  registryContract,
  sampleRecord,
} from "../support/registry_contract.ts";
import { trickyNames } from "../contract/_names.ts";

// One server for the file, stopped by the last test.
const { ignore: IGNORE, server, pgTest, freshUrl } = await postgresForFile();

/** A registry on a fresh database. */
async function freshRegistry(
  options: { maxConnections?: number } = {},
): Promise<{ registry: PostgresRegistry; url: string }> {
  const url = await freshUrl();
  return { registry: await PostgresRegistry.open({ url, ...options }), url };
}

/** Every way an error can end up in a log: none may hold `secret`. */
function assertHides(error: unknown, secret: string) {
  const views = [
    String(error),
    (error as Error).stack ?? "",
    JSON.stringify(error),
    Deno.inspect(error, { depth: 10, showHidden: true }),
  ];
  for (const view of views) {
    assert.ok(!view.includes(secret), `the password shows in: ${view}`);
  }
}

registryContract(
  "PostgresRegistry",
  async () => (await freshRegistry()).registry,
  { ignore: IGNORE },
);

pgTest(
  "PostgresRegistry: registries migrating a fresh database at the same moment all succeed",
  async () => {
    const url = await freshUrl();
    const registries = await Promise.all(
      Array.from({ length: 4 }, () => PostgresRegistry.open({ url })),
    );
    try {
      const blob = new Uint8Array([1, 2, 3]);
      await registries[0]!.putPod(sampleRecord("migrate00001", blob), blob);
      for (const registry of registries) {
        assertSameBytes(await registry.getBlob("migrate00001"), blob, "blob");
      }
      const sql = postgres(url, { max: 1, onnotice: () => {} });
      try {
        const rows = await sql`SELECT version FROM pod_broker_schema`;
        assert.deepEqual(
          rows.map((row) => row.version),
          Array.from({ length: POSTGRES_SCHEMA_VERSION }, (_, i) => i + 1),
        );
      } finally {
        await sql.end();
      }
      // Opening again migrates nothing and keeps the data.
      const again = await PostgresRegistry.open({ url });
      try {
        assert.equal((await again.getRecord("migrate00001"))?.blobSize, 3);
      } finally {
        await again.close();
      }
    } finally {
      await Promise.all(registries.map((registry) => registry.close()));
    }
  },
);

pgTest(
  "PostgresRegistry: a schema newer than the code is refused",
  async () => {
    const { registry, url } = await freshRegistry();
    await registry.close();
    const sql = postgres(url, { max: 1, onnotice: () => {} });
    try {
      await sql`INSERT INTO pod_broker_schema (version) VALUES (${
        POSTGRES_SCHEMA_VERSION + 1
      })`;
    } finally {
      await sql.end();
    }
    await assert.rejects(PostgresRegistry.open({ url }), {
      message: new RegExp(
        `^Cannot open PostgresRegistry: the schema is at version ${
          POSTGRES_SCHEMA_VERSION + 1
        }, newer than this broker's ${POSTGRES_SCHEMA_VERSION}$`,
      ),
    });
  },
);

pgTest(
  "PostgresRegistry: blobs are stored as chunks and streams hold no connection between them",
  async () => {
    // Two connections, twelve streams read in turns: a stream that kept its
    // connection would block the third one.
    const url = await freshUrl();
    await using registry = await openRegistry({ url, maxConnections: 2 });
    const blob = pseudoRandomBytes(3 * POSTGRES_CHUNK_BYTES + 5, 9);
    await registry.putPod(sampleRecord("chunked00001", blob), blob);
    const sql = postgres(url, { max: 1, onnotice: () => {} });
    try {
      const rows = await sql`
      SELECT seq, length(bytes) AS size FROM pod_broker_chunks
      WHERE pod_id = 'chunked00001' ORDER BY seq`;
      assert.deepEqual(rows.map((row) => [row.seq, row.size]), [
        [0, POSTGRES_CHUNK_BYTES],
        [1, POSTGRES_CHUNK_BYTES],
        [2, POSTGRES_CHUNK_BYTES],
        [3, 5],
      ]);
    } finally {
      await sql.end();
    }
    const readers = await Promise.all(
      Array.from(
        { length: 12 },
        async () => (await registry.getBlobStream("chunked00001"))!.getReader(),
      ),
    );
    const parts: Uint8Array[][] = readers.map(() => []);
    for (let round = 0; round < 5; round++) {
      for (const [i, reader] of readers.entries()) {
        const { done, value } = await reader.read();
        if (!done) parts[i]!.push(value);
      }
    }
    for (const chunks of parts) {
      assert.equal(chunks.length, 4);
      const bytes = new Uint8Array(Buffer.concat(chunks));
      assertSameBytes(bytes, blob, "streamed");
    }
  },
);

pgTest(
  "PostgresRegistry: a pod deleted while streamed ends the stream with an error",
  async () => {
    await using registry = await openRegistry({ url: await freshUrl() });
    const blob = pseudoRandomBytes(4 * POSTGRES_CHUNK_BYTES, 3);
    await registry.putPod(sampleRecord("midstream001", blob), blob);
    const reader = (await registry.getBlobStream("midstream001"))!
      .getReader();
    const first = await reader.read();
    assert.equal(first.value?.length, POSTGRES_CHUNK_BYTES);
    assert.equal(await registry.deletePod("midstream001"), true);
    await assert.rejects(
      (async () => {
        while (!(await reader.read()).done) {
          // drain what was already fetched
        }
      })(),
      { message: /^Cannot read pod 'midstream001': it was deleted/ },
    );
    assert.equal(await registry.getBlobStream("midstream001"), null);
  },
);

pgTest(
  "PostgresRegistry: every pod acknowledged before a SIGKILL survives byte-exact, no record lacks its blob",
  async () => {
    const url = await freshUrl();
    const child = new Deno.Command(Deno.execPath(), {
      args: [
        "run",
        "-A",
        supportFile("pg_upload_child.ts"),
      ],
      env: { DATABASE_URL: url, NO_COLOR: "1" },
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
    }).spawn();
    const acked: number[] = [];
    const stderr = new Response(child.stderr).text();
    try {
      const lines = child.stdout.pipeThrough(new TextDecoderStream())
        .getReader();
      let text = "";
      while (acked.length < 15) {
        const { done, value } = await lines.read();
        if (done) break;
        text += value;
        const complete = text.split("\n");
        text = complete.pop()!;
        for (const line of complete) acked.push(Number(line.slice(4)));
      }
      child.kill("SIGKILL");
      lines.releaseLock();
      await child.stdout.cancel().catch(() => {});
    } finally {
      try {
        child.kill("SIGKILL");
      } catch {
        // already killed
      }
      await child.status;
    }
    const log = await stderr;
    assert.ok(acked.length >= 15, `the child acknowledged ${acked}: ${log}`);
    await using registry = await openRegistry({ url });
    for (const index of acked) {
      const { record, blob } = childPod(index);
      assert.deepEqual(await registry.getRecord(record.id), record);
      assertSameBytes(await registry.getBlob(record.id), blob, record.id);
    }
    // Every record that made it, acknowledged or not, has its whole blob.
    let stored = 0;
    for await (const record of registry.listPods()) {
      stored += 1;
      const index = Number(record.id.slice(4));
      assert.deepEqual(record, childPod(index).record);
      assertSameBytes(
        await registry.getBlob(record.id),
        childPod(index).blob,
        record.id,
      );
    }
    assert.ok(stored >= acked.length);
  },
);

pgTest(
  "PostgresRegistry: errors never show the password, not even a wrong one",
  async () => {
    const { port } = server();
    const database = await server().createDatabase();
    // A wrong password with characters that need %-encoding.
    const wrong = "wr@ng:secret/Zq9";
    const url = `postgres://postgres:${
      encodeURIComponent(wrong)
    }@127.0.0.1:${port}/${database}`;
    const refused = await PostgresRegistry.open({ url }).then(
      () => assert.fail("a wrong password was accepted"),
      (error) => error,
    );
    assert.match(
      refused.message,
      new RegExp(
        `^Cannot open PostgresRegistry: PostgreSQL at 127\\.0\\.0\\.1:${port}/${database} said: password authentication failed`,
      ),
    );
    assert.equal(refused.code, "28P01");
    assertHides(refused, wrong);
    assertHides(refused, encodeURIComponent(wrong));
    // Nobody listening.
    const closed = (() => {
      const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
      const { port } = listener.addr as Deno.NetAddr;
      listener.close();
      return port;
    })();
    const nowhere = server().url(database).replace(`:${port}/`, `:${closed}/`);
    const unreachable = await PostgresRegistry.open({ url: nowhere }).then(
      () => assert.fail("connected to a closed port"),
      (error) => error,
    );
    assert.equal(
      unreachable.message,
      `Cannot open PostgresRegistry: PostgreSQL at 127.0.0.1:${closed}/${database} is unreachable (ECONNREFUSED)`,
    );
    assertHides(unreachable, server().password);
    // A malformed URL is not echoed either.
    assert.throws(
      () => new PostgresRegistry({ url: `mysql://u:${wrong}@h/d` }),
      (error: Error) => {
        assert.equal(error.name, "TypeError");
        assertHides(error, wrong);
        return true;
      },
    );
  },
);

// Stops and starts the shared server: keep it after the tests that use it
// in parallel with nothing (a file's tests run one at a time).
pgTest(
  "PostgresRegistry: with PostgreSQL down putPod rejects, and it recovers when it is back",
  async () => {
    const url = await freshUrl();
    await using registry = await openRegistry({ url });
    const database = new URL(url).pathname.slice(1);
    const blob = new Uint8Array([7, 7, 7]);
    await registry.putPod(sampleRecord("before000001", blob), blob);
    await server().stopServer();
    let failure: unknown;
    try {
      await assert.rejects(
        registry.putPod(sampleRecord("during000001", blob), blob),
        (error: Error) => {
          failure = error;
          return true;
        },
      );
      await assert.rejects(registry.getRecord("before000001"));
    } finally {
      await server().startServer();
    }
    assert.match(
      (failure as Error).message,
      new RegExp(
        `^Cannot store pod 'during000001': PostgreSQL at 127\\.0\\.0\\.1:${server().port}/${database} is unreachable \\(`,
      ),
    );
    assertHides(failure, server().password);
    // The same registry, without a restart.
    await registry.putPod(sampleRecord("after0000001", blob), blob);
    assertSameBytes(await registry.getBlob("after0000001"), blob, "after");
    assertSameBytes(await registry.getBlob("before000001"), blob, "before");
    assert.equal(await registry.getRecord("during000001"), null);
  },
);

pgTest(
  "broker on PostgresRegistry: while PostgreSQL is down uploads and pods answer 503 storage_failed with Retry-After; then it recovers",
  async () => {
    await using registry = await openRegistry({ url: await freshUrl() });
    await using t = await startServer({ registry });
    const created = await upload(t.url, await signedPod());
    assert.equal(created.status, 201);
    const { id } = await created.json();
    await server().stopServer();
    try {
      for (
        const response of [
          await upload(t.url, await signedPod()),
          await fetch(`${t.url}/${id}`),
          await fetch(`${t.url}/${id}/meta`),
        ]
      ) {
        assert.equal(response.status, 503);
        assert.equal(response.headers.get("Retry-After"), "2");
        const body = await response.json();
        assert.equal(body.code, "storage_failed");
        assert.equal(body.status, 503);
        assert.ok(!JSON.stringify(body).includes(server().password));
      }
      const health = await fetch(`${t.url}/health`);
      assert.equal(health.status, 200);
      await health.body?.cancel();
    } finally {
      await server().startServer();
    }
    // The same broker, without a restart.
    const again = await upload(t.url, await signedPod());
    assert.equal(again.status, 201);
    await again.body?.cancel();
    const got = await fetch(`${t.url}/${id}`);
    assert.equal(got.status, 200);
    await got.body?.cancel();
  },
);

pgTest(
  "PostgresRegistry counts hits at once, writes them together within a second, and close() writes the rest",
  async () => {
    const { registry, url } = await freshRegistry();
    // Another registry on the database, as another broker is.
    const other = await PostgresRegistry.open({ url });
    try {
      await checkHitBatching(registry, other);
    } finally {
      await registry.close();
      await other.close();
    }
  },
);

// Last: stops the file's server (the `unload` handler covers a filter).
pgTest(
  "PostgresRegistry behind a broker: /meta gives back names with NUL, lone surrogates, U+2028 and non-BMP characters exactly as signed, and the readable copy holds no NUL",
  async () => {
    const { registry, url } = await freshRegistry();
    const stored: [string, string][] = [];
    try {
      await using t = await startServer({ registry });
      for (const name of trickyNames(24, 0x9e5)) {
        const pod = await signedPod(undefined, { name });
        const response = await upload(t.url, pod);
        assert.equal(response.status, 201, JSON.stringify(name));
        stored.push([(await response.json()).id, name]);
      }
      for (const [id, name] of stored) {
        const meta = await (await fetch(`${t.url}/${id}/meta`)).json();
        assert.ok(meta.name === name, JSON.stringify([meta.name, name]));
      }
    } finally {
      await registry.close();
    }
    const sql = postgres(url, { max: 1, onnotice: () => {} });
    try {
      const rows = await sql`SELECT name FROM pod_broker_pods`;
      assert.equal(rows.length, stored.length);
      for (const { name } of rows) assert.ok(!name.includes("\u0000"));
    } finally {
      await sql.end();
    }
  },
);

pgTest("PostgreSQL for this file stops", async () => {
  await server().stop();
});
