// Running a public broker (issue 13): HSTS, takedown with 410, and the
// operator's list and delete commands (the runtime's CLI: Deno's, or the npm
// package's `pod-broker` bin on Node 22) against a live broker.
import assert from "node:assert/strict";
import { signedPod, upload } from "./_pods.ts";
import {
  ANY_LOCAL_PORT,
  runCli,
  spawnBroker,
  startServer,
  tempDir,
} from "./_servers.ts";
import { test } from "./_suite.ts";

test("Strict-Transport-Security over https (base URL or trusted proxy), never over plain http", async (api) => {
  const hsts = "max-age=31536000";
  {
    await using t = await startServer(api, { baseUrl: "https://pods.example" });
    for (const path of ["/health", "/nope", "/AAAAAAAAAAAA"]) {
      const response = await fetch(`${t.url}${path}`);
      await response.body?.cancel();
      assert.equal(response.headers.get("Strict-Transport-Security"), hsts);
    }
  }
  {
    await using t = await startServer(api, { trustProxy: true });
    const https = await fetch(`${t.url}/health`, {
      headers: { "X-Forwarded-Proto": "https" },
    });
    await https.body?.cancel();
    assert.equal(https.headers.get("Strict-Transport-Security"), hsts);
    const http = await fetch(`${t.url}/health`);
    await http.body?.cancel();
    assert.equal(http.headers.get("Strict-Transport-Security"), null);
  }
  {
    await using t = await startServer(api);
    const spoofed = await fetch(`${t.url}/health`, {
      headers: { "X-Forwarded-Proto": "https" },
    });
    await spoofed.body?.cancel();
    assert.equal(spoofed.headers.get("Strict-Transport-Security"), null);
  }
});

test("a pod deleted from the memory registry answers 410 pod_deleted on GET, HEAD and /meta", async (api) => {
  const registry = new api.MemoryRegistry();
  await using t = await startServer(api, { registry });
  const created = await (await upload(t.url, await signedPod(api))).json();
  assert.equal(await registry.deletePod(created.id), true);
  assert.equal(await registry.deletePod(created.id), false);
  for (
    const [method, path] of [
      ["GET", created.id],
      ["HEAD", created.id],
      ["GET", `${created.id}/meta`],
    ]
  ) {
    const response = await fetch(`${t.url}/${path}`, { method });
    assert.equal(response.status, 410, `${method} ${path}`);
    if (method === "GET") {
      const body = await response.json();
      assert.equal(body.code, "pod_deleted");
      assert.equal(body.status, 410);
    } else {
      await response.body?.cancel();
    }
  }
  const unknown = await fetch(`${t.url}/AAAAAAAAAAAA`);
  assert.equal(unknown.status, 404);
  await unknown.body?.cancel();
});

test("pod-broker list and delete work on the data dir of a running broker: 410 within a second", async (api) => {
  await using dir = await tempDir();
  const dataDir = dir.path;
  {
    await using broker = await spawnBroker(api, [
      "--registry",
      "sqlite",
      "--data-dir",
      dataDir,
      ...ANY_LOCAL_PORT,
    ]);
    const base = `http://127.0.0.1:${broker.port}`;
    const ids: string[] = [];
    const owners: string[] = [];
    for (let i = 0; i < 3; i++) {
      const created = await (await upload(base, await signedPod(api))).json();
      ids.push(created.id);
      owners.push(created.ownerPubkey);
    }
    const listed = await runCli(api, ["list", "--data-dir", dataDir]);
    assert.equal(listed.code, 0, listed.stderr);
    const records = listed.stdout.trim().split("\n").map((l) => JSON.parse(l));
    assert.deepEqual(records.map((r) => r.id), ids);
    const mine = await runCli(api, [
      "list",
      "--data-dir",
      dataDir,
      "--owner",
      owners[1]!,
    ]);
    assert.equal(mine.code, 0, mine.stderr);
    assert.deepEqual(
      mine.stdout.trim().split("\n").map((l) => JSON.parse(l).id),
      [ids[1]],
    );

    const deleted = await runCli(api, [
      "delete",
      ids[1]!,
      "--data-dir",
      dataDir,
    ]);
    assert.equal(deleted.code, 0, deleted.stderr);
    const started = Date.now();
    let status = 0;
    while (Date.now() - started < 1_000) {
      const response = await fetch(`${base}/${ids[1]}`);
      status = response.status;
      await response.body?.cancel();
      if (status === 410) break;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    assert.equal(status, 410, "410 pod_deleted within one second");
    const meta = await fetch(`${base}/${ids[1]}/meta`);
    assert.equal(meta.status, 410);
    assert.equal((await meta.json()).code, "pod_deleted");
    const others = await fetch(`${base}/${ids[0]}`);
    assert.equal(others.status, 200);
    await others.body?.cancel();

    const again = await runCli(api, ["delete", ids[1]!, "--data-dir", dataDir]);
    assert.equal(again.code, 1);
    assert.match(again.stderr, /already deleted/);
    const bad = await runCli(api, ["delete", "nope", "--data-dir", dataDir]);
    assert.equal(bad.code, 2);
    const after = await runCli(api, ["list", "--data-dir", dataDir]);
    assert.deepEqual(
      after.stdout.trim().split("\n").map((l) => JSON.parse(l).id),
      [ids[0], ids[2]],
    );
    assert.equal(await broker.stop(), 0);
  }
});

test("pod-broker delete refuses the memory registry and a missing data dir with exit 2", async (api) => {
  const memory = await runCli(api, [
    "delete",
    "AAAAAAAAAAAA",
    "--registry",
    "memory",
  ]);
  assert.equal(memory.code, 2);
  assert.match(memory.stderr, /lives inside one broker process/);
  const missing = await runCli(api, ["list"]);
  assert.equal(missing.code, 2);
  assert.match(
    missing.stderr,
    /list needs the broker's registry: --data-dir DIR/,
  );
});
