// Signed updates at a stable URL (issue 21): `PUT /:id` replaces a pod when
// the key is the owner's and createdAt is later; every refusal with its
// code; one winner of two concurrent updates; 405 on a registry without
// updatePod; the counters; the CLI's `publish --update`. Runs on Deno and
// on the npm package under Node 22.
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { Registry } from "../../src/core.ts";
import {
  assertProblem,
  newSeed,
  putUpdate,
  signedPod,
  updateHeaders,
  upload,
} from "./_pods.ts";
import { runCli, startServer, tempDir } from "./_servers.ts";
import { type ContractApi, test } from "./_suite.ts";
import { parseRawResponse, RawConnection } from "./_wire.ts";

/** PUTs `body` to /ID as text/html, with `seed`'s Pod-Update-Signature. */
function put(
  api: ContractApi,
  url: string,
  id: string,
  body: Uint8Array<ArrayBuffer>,
  seed: Uint8Array,
  headers: Record<string, string> = {},
): Promise<Response> {
  return putUpdate(api, url, id, body, seed, headers);
}

/** A pod of `seed` with `text` in its body, named and dated. */
function version(
  api: ContractApi,
  seed: Uint8Array,
  text: string,
  createdAt?: string,
): Promise<Uint8Array<ArrayBuffer>> {
  return signedPod(
    api,
    `<!doctype html><html><head><title>t</title></head><body><p>${text}</p></body></html>`,
    { name: text, ...(createdAt === undefined ? {} : { createdAt }) },
    seed,
  );
}

/** Uploads version 1 of a pod; its id and seed. */
async function publish(
  api: ContractApi,
  url: string,
  createdAt: string | null = "2026-01-01T00:00:00Z",
): Promise<{ id: string; seed: Uint8Array }> {
  const seed = await newSeed(api);
  const v1 = await version(api, seed, "v1", createdAt ?? undefined);
  const created = await upload(url, v1);
  assert.equal(created.status, 201);
  return { id: (await created.json()).id, seed };
}

async function getText(url: string): Promise<{ text: string; etag: string }> {
  const response = await fetch(url);
  assert.equal(response.status, 200);
  return { text: await response.text(), etag: response.headers.get("ETag")! };
}

for (const kind of ["memory", "sqlite"] as const) {
  test(`updates (${kind}): PUT /:id replaces the pod at once, with version, new ETag, /meta fields; hits and uploadedAt carry over`, async (api) => {
    await using dir = await tempDir();
    const registry: Registry = kind === "memory"
      ? new api.MemoryRegistry()
      : new api.SqliteRegistry({ dataDir: dir.path });
    await using broker = await startServer(api, { registry });
    const { id, seed } = await publish(api, broker.url);
    const first = await getText(`${broker.url}/${id}`);
    assert.match(first.text, /<p>v1<\/p>/);
    await getText(`${broker.url}/${id}`);
    const before = await (await fetch(`${broker.url}/${id}/meta`)).json();
    assert.equal(before.version, 1);
    assert.equal(before.updatedAt, before.uploadedAt);

    const v2 = await version(api, seed, "v2", "2026-01-02T00:00:00Z");
    const updated = await put(api, broker.url, id, v2, seed);
    assert.equal(updated.status, 200);
    assert.deepEqual(await updated.json(), {
      id,
      url: `${broker.url}/${id}`,
      ownerPubkey: before.ownerPubkey,
      blobSize: v2.length,
      version: 2,
    });
    // At once, on this broker: no old bytes from any cache.
    const second = await getText(`${broker.url}/${id}`);
    assert.match(second.text, /<p>v2<\/p>/);
    assert.notEqual(second.etag, first.etag);
    const revalidated = await fetch(`${broker.url}/${id}`, {
      headers: { "If-None-Match": first.etag },
    });
    assert.equal(revalidated.status, 200);
    assert.match(await revalidated.text(), /<p>v2<\/p>/);
    await new Promise((resolve) => setTimeout(resolve, 20));
    const meta = await (await fetch(`${broker.url}/${id}/meta`)).json();
    assert.equal(meta.version, 2);
    assert.equal(`"${meta.sha256}"`, second.etag);
    assert.equal(meta.name, "v2");
    assert.equal(meta.createdAt, "2026-01-02T00:00:00Z");
    assert.equal(meta.blobSize, v2.length);
    assert.equal(meta.uploadedAt, before.uploadedAt);
    assert.ok(meta.updatedAt >= meta.uploadedAt, meta.updatedAt);
    assert.equal(meta.hits, 4);

    const v3 = await version(api, seed, "v3", "2026-01-03T00:00:00Z");
    const third = await put(api, broker.url, id, v3, seed);
    assert.equal((await third.json()).version, 3);
    assert.match((await getText(`${broker.url}/${id}`)).text, /<p>v3<\/p>/);
  });
}

test("updates: refusals pod_not_found, pod_deleted, owner_mismatch, stale_update; a pod without createdAt counts as earliest", async (api) => {
  await using broker = await startServer(api);
  const registry = broker.registry as InstanceType<typeof api.MemoryRegistry>;
  const { id, seed } = await publish(api, broker.url);
  const later = await version(api, seed, "v2", "2026-01-02T00:00:00Z");
  await assertProblem(
    await put(api, broker.url, "AAAAAAAAAAAA", later, seed),
    404,
    "pod_not_found",
  );
  await assertProblem(
    await put(api, broker.url, "not-an-id", later, seed),
    404,
    "pod_not_found",
  );
  const other = await version(
    api,
    await newSeed(api),
    "other",
    "2026-01-02T00:00:00Z",
  );
  await assertProblem(
    await put(api, broker.url, id, other, seed),
    403,
    "owner_mismatch",
  );
  for (
    const createdAt of [
      "2026-01-01T00:00:00Z",
      "2025-12-31T00:00:00Z",
      undefined,
    ]
  ) {
    await assertProblem(
      await put(
        api,
        broker.url,
        id,
        await version(api, seed, "old", createdAt),
        seed,
      ),
      409,
      "stale_update",
    );
  }
  assert.match((await getText(`${broker.url}/${id}`)).text, /<p>v1<\/p>/);

  const undated = await publish(api, broker.url, null);
  const dated = await version(api, undated.seed, "v2", "2000-01-01T00:00:00Z");
  assert.equal(
    (await put(api, broker.url, undated.id, dated, undated.seed)).status,
    200,
  );

  assert.equal(await registry.deletePod(id), true);
  await assertProblem(
    await put(api, broker.url, id, later, seed),
    410,
    "pod_deleted",
  );
});

test("updates: every upload refusal applies to PUT (media type, size, signature, deny list)", async (api) => {
  const denyList = new api.DenyList();
  await using broker = await startServer(api, {
    denyList,
    maxBlobBytes: 4096,
  });
  const { id, seed } = await publish(api, broker.url);
  const later = await version(api, seed, "v2", "2026-01-02T00:00:00Z");
  await assertProblem(
    await put(api, broker.url, id, later, seed, {
      "Content-Type": "text/plain",
    }),
    415,
    "unsupported_media_type",
  );
  const big = await version(
    api,
    seed,
    "x".repeat(5000),
    "2026-01-02T00:00:00Z",
  );
  await assertProblem(
    await put(api, broker.url, id, big, seed),
    413,
    "blob_too_large",
  );
  const tampered = later.slice();
  tampered[tampered.length - 3]! ^= 1;
  await assertProblem(
    await put(api, broker.url, id, tampered, seed),
    422,
    "content_mismatch",
  );
  const { ownerPubkey } = await (await fetch(`${broker.url}/${id}/meta`))
    .json();
  denyList.replace({ keys: [ownerPubkey] });
  await assertProblem(
    await put(api, broker.url, id, later, seed),
    403,
    "owner_denied",
  );
  denyList.replace({});
  assert.equal((await put(api, broker.url, id, later, seed)).status, 200);
  // Hidden by its content, the pod stays taken down: its owner cannot
  // bring it back at the same URL by changing a byte.
  const { contentSha256 } = await (await fetch(`${broker.url}/${id}/meta`))
    .json();
  denyList.replace({ contents: [contentSha256] });
  const changed = await version(api, seed, "v3", "2026-01-03T00:00:00Z");
  await assertProblem(
    await put(api, broker.url, id, changed, seed),
    410,
    "pod_deleted",
  );
  await assertProblem(await fetch(`${broker.url}/${id}`), 410, "pod_deleted");
  denyList.replace({});
  assert.equal((await put(api, broker.url, id, changed, seed)).status, 200);
});

test("updates: a deny list reloaded while an update's body is in flight holds: 410 pod_deleted, and the pod stays down", async (api) => {
  // Tells the test once the deny list has answered about the stored
  // version: the update's check before its body.
  let answered: ((contentSha256: string) => void) | null = null;
  class WatchedDenyList extends api.DenyList {
    override denies(record: { ownerPubkey: string; contentSha256: string }) {
      const code = super.denies(record);
      answered?.(record.contentSha256);
      return code;
    }
  }
  const denyList = new WatchedDenyList();
  await using broker = await startServer(api, { denyList });
  const { id, seed } = await publish(api, broker.url);
  const { contentSha256 } = await (await fetch(`${broker.url}/${id}/meta`))
    .json();
  const v2 = await version(api, seed, "v2", "2026-01-02T00:00:00Z");
  const headers = await updateHeaders(api, broker.url, id, v2, seed);
  let timer: ReturnType<typeof setTimeout> | undefined;
  const checked = Promise.race([
    new Promise<void>((resolve) => {
      answered = (digest) => digest === contentSha256 && resolve();
    }),
    new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new Error("The update never asked the deny list")),
        10_000,
      );
    }),
  ]);
  const conn = await RawConnection.open(broker.server.port);
  try {
    const half = Math.floor(v2.length / 2);
    await conn.write(
      `PUT /${id} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: text/html\r\n` +
        `Content-Length: ${v2.length}\r\n` +
        Object.entries(headers).map(([k, v]) => `${k}: ${v}\r\n`).join("") +
        "Connection: close\r\n\r\n",
    );
    await conn.write(v2.subarray(0, half));
    await checked.finally(() => clearTimeout(timer));
    // The operator takes v1 down by its content (SIGHUP reloads the file
    // the same way) while the rest of the body is on its way.
    denyList.replace({ contents: [contentSha256] });
    await conn.write(v2.subarray(half));
    const answer = parseRawResponse(
      await conn.readUntil((text) => parseRawResponse(text).complete),
    );
    assert.equal(answer.status, 410, answer.head);
    assert.equal(JSON.parse(answer.body).code, "pod_deleted");
  } finally {
    await conn.close();
  }
  await assertProblem(await fetch(`${broker.url}/${id}`), 410, "pod_deleted");
  // Nothing of v2 was stored: lifting the entry brings back v1.
  denyList.replace({});
  assert.match((await getText(`${broker.url}/${id}`)).text, /<p>v1<\/p>/);
});

test("updates: of two concurrent updates exactly one wins, the other is 409 stale_update", async (api) => {
  await using broker = await startServer(api);
  const { id, seed } = await publish(api, broker.url);
  const at = "2026-01-02T00:00:00Z";
  const bodies = await Promise.all(
    ["a", "b"].map((text) => version(api, seed, text, at)),
  );
  const answers = await Promise.all(
    bodies.map((b) => put(api, broker.url, id, b, seed)),
  );
  const statuses = answers.map((answer) => answer.status).sort();
  assert.deepEqual(statuses, [200, 409]);
  const loser = answers.find((answer) => answer.status === 409)!;
  assert.equal((await loser.json()).code, "stale_update");
  const winner = answers.find((answer) => answer.status === 200)!;
  assert.equal((await winner.json()).blobSize, bodies[0]!.length);
  assert.equal(
    (await (await fetch(`${broker.url}/${id}/meta`)).json()).version,
    2,
  );
});

for (const policy of ["unsafe-inline", "hashes"] as const) {
  test(`updates: a GET that read the record before an update landed answers one version whole (ETag, Content-Length, body and script-src agree; scriptPolicy ${policy})`, async (api) => {
    const registry = new api.MemoryRegistry();
    // The next blob read of the armed id waits until released, then reads.
    let armed: string | null = null;
    let parked!: () => void;
    let release!: () => void;
    const parking = new Promise<void>((resolve) => (parked = resolve));
    const released = new Promise<void>((resolve) => (release = resolve));
    const gated: Registry = {
      putPod: (record, blob) => registry.putPod(record, blob),
      updatePod: (record, blob, expected) =>
        registry.updatePod(record, blob, expected),
      getRecord: (id) => registry.getRecord(id),
      bumpHits: (id) => registry.bumpHits(id),
      getBlob: async (id) => {
        if (id === armed) {
          armed = null;
          parked();
          await released;
        }
        return registry.getBlob(id);
      },
    };
    await using broker = await startServer(api, {
      registry: gated,
      podHeaderOptions: { scriptPolicy: policy },
    });
    const seed = await newSeed(api);
    const page = (text: string) =>
      `<!doctype html><html><head><title>t</title></head><body><p>${text}</p><script>${text}()</script></body></html>`;
    const v1 = await signedPod(api, page("v1"), {
      createdAt: "2026-01-01T00:00:00Z",
    }, seed);
    const created = await upload(broker.url, v1);
    assert.equal(created.status, 201);
    const { id } = await created.json();
    armed = id;
    const reading = fetch(`${broker.url}/${id}`);
    await parking; // its record says v1
    const v2 = await signedPod(api, page("v2"), {
      createdAt: "2026-01-02T00:00:00Z",
    }, seed);
    assert.equal((await put(api, broker.url, id, v2, seed)).status, 200);
    release(); // its blob read finds v2
    const response = await reading;
    assert.equal(response.status, 200);
    const body = new Uint8Array(await response.arrayBuffer());
    assert.match(new TextDecoder().decode(body), /<p>v2<\/p>/);
    assert.equal(
      response.headers.get("ETag"),
      `"${createHash("sha256").update(body).digest("base64url")}"`,
    );
    assert.equal(response.headers.get("Content-Length"), String(body.length));
    const csp = response.headers.get("Content-Security-Policy") ?? "";
    const scripts = await fetch(`${broker.url}/${id}`, { method: "HEAD" });
    await scripts.body?.cancel();
    assert.equal(scripts.headers.get("ETag"), response.headers.get("ETag"));
    assert.equal(
      scripts.headers.get("Content-Security-Policy"),
      csp,
      "the script policy of the version served",
    );
    if (policy === "hashes") {
      const hash = createHash("sha256").update("v2()").digest("base64");
      assert.ok(csp.includes(`'sha256-${hash}'`), csp);
    }
  });
}

test("updates: a registry without updatePod answers PUT with 405 and Allow: GET, HEAD", async (api) => {
  const inner = new api.MemoryRegistry();
  const registry: Registry = {
    putPod: (record, blob) => inner.putPod(record, blob),
    getRecord: (id) => inner.getRecord(id),
    getBlob: (id) => inner.getBlob(id),
    bumpHits: (id) => inner.bumpHits(id),
  };
  await using broker = await startServer(api, { registry });
  const { id, seed } = await publish(api, broker.url);
  const later = await version(api, seed, "v2", "2026-01-02T00:00:00Z");
  const refused = await put(api, broker.url, id, later, seed);
  await assertProblem(refused, 405, "method_not_allowed");
  assert.equal(refused.headers.get("Allow"), "GET, HEAD");
  await using full = await startServer(api);
  const other = await fetch(`${full.url}/${id}`, { method: "DELETE" });
  await assertProblem(other, 405, "method_not_allowed");
  assert.equal(other.headers.get("Allow"), "GET, HEAD, PUT");
});

test("updates: metrics count updates accepted and refused by code", async (api) => {
  await using broker = await startServer(api, { metrics: { port: 0 } });
  const { id, seed } = await publish(api, broker.url);
  const later = await version(api, seed, "v2", "2026-01-02T00:00:00Z");
  assert.equal((await put(api, broker.url, id, later, seed)).status, 200);
  await (await put(api, broker.url, id, later, seed)).body?.cancel();
  await (await put(api, broker.url, "AAAAAAAAAAAA", later, seed)).body
    ?.cancel();
  const text = await (await fetch(
    `http://127.0.0.1:${broker.server.metricsPort}/metrics`,
  )).text();
  assert.match(text, /^pod_broker_updates_accepted_total 1$/m);
  assert.match(
    text,
    /^pod_broker_updates_refused_total\{code="stale_update"\} 1$/m,
  );
  assert.match(
    text,
    /^pod_broker_updates_refused_total\{code="pod_not_found"\} 1$/m,
  );
  assert.match(text, /^pod_broker_uploads_accepted_total 1$/m);
});

test("cli: publish FILE --broker URL --update ID replaces the pod; with --key it re-signs with a fresh createdAt and keeps the name", async (api) => {
  await using broker = await startServer(api);
  await using dir = await tempDir();
  const key = join(dir.path, "author.key");
  const keygen = await runCli(api, ["keygen", "--out", key]);
  assert.equal(keygen.code, 0, keygen.stderr);
  const page = join(dir.path, "page.html");
  await writeFile(page, "<!doctype html><p>first</p>");
  const publishCli = (...flags: string[]) =>
    runCli(api, [
      "publish",
      page,
      "--broker",
      broker.url,
      "--key",
      key,
      ...flags,
    ]);
  const first = await publishCli("--name", "Kept");
  assert.equal(first.code, 0, first.stderr);
  const id = first.stdout.trim().split("/").pop()!;
  await writeFile(page, "<!doctype html><p>second</p>");
  const second = await publishCli("--update", id);
  assert.equal(second.code, 0, second.stderr);
  assert.equal(second.stdout, first.stdout);
  assert.match((await getText(`${broker.url}/${id}`)).text, /second/);
  const meta = await (await fetch(`${broker.url}/${id}/meta`)).json();
  assert.equal(meta.name, "Kept");
  assert.equal(meta.version, 2);
  const stale = await publishCli("--update", "AAAAAAAAAAAA");
  assert.equal(stale.code, 1, stale.stderr);
  assert.match(stale.stderr, /^pod-broker: update refused: pod_not_found/);
  const bad = await runCli(api, ["publish", page, "--update", "x"]);
  assert.equal(bad.code, 2, bad.stderr);
});
