// The CLI on a real PostgreSQL (tests/support/postgres.ts, one private
// server for this file, a fresh database per test): `serve`, `list` and
// `delete` with --registry postgres, DATABASE_URL from the environment, and
// usage errors; the password never shows.
import assert from "node:assert/strict";
import { ANY_LOCAL_PORT, spawnBroker } from "../support/broker_process.ts";
import {
  cli,
  type CliRun,
  MOD,
  signedPod,
  upload,
} from "../support/helpers.ts";
import { postgresForFile } from "../support/postgres.ts";
import { assertSameBytes } from "../support/registry_contract.ts";

// One server for the file, stopped by the last test.
const { server, pgTest, freshUrl } = await postgresForFile();

type Run = CliRun;

/** A CLI broker; everything it prints is kept (to look for the password). */
async function spawnCliBroker(
  args: string[],
  env: Record<string, string> = {},
): Promise<{ port: number; stop(): Promise<Run> }> {
  const broker = await spawnBroker(Deno.execPath(), [
    "run",
    "-A",
    MOD,
    ...args,
    ...ANY_LOCAL_PORT,
  ], { env, keep: true });
  return {
    port: broker.port,
    stop: async () => ({ code: await broker.stop(), ...broker.output() }),
  };
}

function assertNoPassword(run: Run, password: string) {
  assert.ok(!run.stdout.includes(password), `in stdout: ${run.stdout}`);
  assert.ok(!run.stderr.includes(password), `in stderr: ${run.stderr}`);
}

pgTest(
  "cli: serve, list and delete with --registry postgres --database-url",
  async () => {
    const url = await freshUrl();
    const { password } = server();
    const broker = await spawnCliBroker([
      "--registry",
      "postgres",
      "--database-url",
      url,
    ]);
    let served: Run | null = null;
    try {
      const base = `http://127.0.0.1:${broker.port}`;
      const pod = await signedPod();
      const created = await upload(base, pod);
      assert.equal(created.status, 201, await created.clone().text());
      const { id } = await created.json();
      const got = await fetch(`${base}/${id}`);
      assert.equal(got.status, 200);
      assertSameBytes(new Uint8Array(await got.arrayBuffer()), pod, "served");

      const flags = ["--registry", "postgres", "--database-url", url];
      const listed = await cli(["list", ...flags]);
      assert.equal(listed.code, 0, listed.stderr);
      const records = listed.stdout.trim().split("\n").map((line) =>
        JSON.parse(line)
      );
      assert.deepEqual(records.map((record) => record.id), [id]);
      assert.equal(records[0].blobSize, pod.length);
      assertNoPassword(listed, password);

      const deleted = await cli(["delete", id, ...flags]);
      assert.equal(deleted.code, 0, deleted.stderr);
      assert.equal(deleted.stdout, `deleted ${id}\n`);
      assertNoPassword(deleted, password);
      const gone = await fetch(`${base}/${id}`);
      assert.equal(gone.status, 410);
      assert.equal((await gone.json()).code, "pod_deleted");

      const again = await cli(["delete", id, ...flags]);
      assert.equal(again.code, 1);
      assert.match(again.stderr, /Cannot delete '.+': already deleted/);
      const empty = await cli(["list", ...flags]);
      assert.equal(empty.code, 0, empty.stderr);
      assert.equal(empty.stdout, "");
    } finally {
      served = await broker.stop();
    }
    assert.equal(served.code, 0, served.stderr);
    assertNoPassword(served, password);
  },
);

pgTest(
  "cli: DATABASE_URL from the environment, and usage errors that hide the password",
  async () => {
    const database = await server().createDatabase();
    const url = server().url(database);
    const { password, port } = server();
    const env = { DATABASE_URL: url };
    const broker = await spawnCliBroker(["--registry", "postgres"], env);
    let served: Run;
    try {
      const created = await upload(
        `http://127.0.0.1:${broker.port}`,
        await signedPod(),
      );
      assert.equal(created.status, 201);
      await created.body?.cancel();
      const listed = await cli(["list", "--registry", "postgres"], env);
      assert.equal(listed.code, 0, listed.stderr);
      assert.equal(listed.stdout.trim().split("\n").length, 1);
    } finally {
      served = await broker.stop();
    }
    assertNoPassword(served, password);

    const wrong =
      `postgres://postgres:not-${password}@127.0.0.1:${port}/${database}`;
    const cases: [string[], Record<string, string>, RegExp][] = [
      [
        ["list", "--registry", "postgres", "--database-url", wrong],
        {},
        new RegExp(
          `Cannot use --database-url: PostgreSQL at 127\\.0\\.0\\.1:${port}/${database} said: password authentication failed`,
        ),
      ],
      [
        ["delete", "AAAAAAAAAAAA", "--registry", "postgres"],
        { DATABASE_URL: wrong },
        /Cannot use env DATABASE_URL: PostgreSQL at .* said: password/,
      ],
      [
        ["list", "--registry", "postgres"],
        { DATABASE_URL: "" },
        /--registry postgres needs --database-url URL or env DATABASE_URL/,
      ],
      [
        ["list", "--registry", "postgres", "--database-url", `x${password}`],
        {},
        /Cannot use --database-url: expected postgres:\/\//,
      ],
      [
        ["list", "--registry", "sqlite", "--database-url", url],
        {},
        /--database-url needs --registry postgres/,
      ],
    ];
    for (const [args, caseEnv, reason] of cases) {
      const run = await cli(args, caseEnv);
      assert.equal(run.code, 2, `${args.join(" ")}: ${run.stderr}`);
      assert.match(run.stderr, reason);
      assert.equal(run.stderr.trim().split("\n").length, 1, run.stderr);
      assertNoPassword(run, password);
    }
  },
);

// Last: stops the file's server (the `unload` handler covers a filter).
pgTest("PostgreSQL for this file stops", async () => {
  await server().stop();
});
