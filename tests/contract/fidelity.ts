// The broker gives back what it took and counts what it served: a pod's
// signed name comes back from /meta exactly as signed, on the memory
// registry and on SQLite (node:sqlite, on Deno and on Node), also after the
// registry is reopened; and the metrics' pod hits agree with the
// registry's, on pod hosts too.
import assert from "node:assert/strict";
import { newSeed, signedPod, upload } from "./_pods.ts";
import { startServer, tempDir } from "./_servers.ts";
import { type ContractApi, test } from "./_suite.ts";
import { trickyNames } from "./_names.ts";
import { requestAs } from "./pod_domain.ts";

/** Readable in a failure message: every code unit outside ASCII escaped. */
function shown(name: string): string {
  return JSON.stringify(name).replace(
    /[^\x20-\x7e]/g,
    (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`,
  );
}

/** Uploads one pod per name to `url`; the ids with the names signed. */
async function uploadNamed(
  api: ContractApi,
  url: string,
  names: string[],
): Promise<[string, string][]> {
  const seed = await newSeed(api);
  const stored: [string, string][] = [];
  for (const name of names) {
    const pod = await signedPod(api, undefined, {
      name,
      createdAt: "2026-11-21T12:00:00Z",
    }, seed);
    const response = await upload(url, pod);
    assert.equal(response.status, 201, `${shown(name)}: ${response.status}`);
    stored.push([(await response.json()).id, name]);
  }
  return stored;
}

/** Asserts each pod's /meta gives back the name and createdAt signed. */
async function assertMeta(url: string, stored: [string, string][]) {
  for (const [id, name] of stored) {
    const meta = await (await fetch(`${url}/${id}/meta`)).json();
    assert.ok(meta.name === name, `${shown(meta.name)} !== ${shown(name)}`);
    assert.equal(meta.createdAt, "2026-11-21T12:00:00Z");
  }
}

test("signed fields: /meta gives back a name with NUL, control characters, U+2028, lone surrogates and non-BMP characters exactly as signed (memory and SQLite, after reopening too)", async (api) => {
  const names = trickyNames(24, 0x5eed);
  {
    await using t = await startServer(api, {
      registry: new api.MemoryRegistry(),
    });
    await assertMeta(t.url, await uploadNamed(api, t.url, names));
  }
  await using dir = await tempDir();
  let stored: [string, string][];
  {
    const registry = new api.SqliteRegistry({ dataDir: dir.path });
    await using t = await startServer(api, { registry });
    stored = await uploadNamed(api, t.url, names);
    await assertMeta(t.url, stored);
    await t.server.close();
    registry.close();
  }
  const registry = new api.SqliteRegistry({ dataDir: dir.path });
  try {
    await using t = await startServer(api, { registry });
    await assertMeta(t.url, stored);
  } finally {
    registry.close();
  }
});

/** `pod_broker_pod_hits_total` from the metrics listener. */
async function podHitsMetric(metricsPort: number): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`))
    .text();
  const line = text.split("\n").find((line) =>
    line.startsWith("pod_broker_pod_hits_total ")
  );
  assert.ok(line, "pod_broker_pod_hits_total is exposed");
  return Number(line.split(" ")[1]);
}

test("metrics: with podDomain, pod_broker_pod_hits_total counts the 200 GETs on pod hosts, as the registry does", async (api) => {
  await using t = await startServer(api, {
    podDomain: "pods.test",
    metrics: { port: 0 },
  });
  const port = t.server.port;
  const created = await (await upload(t.url, await signedPod(api))).json();
  const host = new URL(created.podUrl).host;
  for (let i = 0; i < 3; i++) {
    assert.equal((await requestAs(port, host, "/")).status, 200);
  }
  // Not hits: a HEAD, a 304, the broker host's redirect to the pod host.
  assert.equal((await requestAs(port, host, "/", "HEAD")).status, 200);
  const meta = await (await fetch(`${t.url}/${created.id}/meta`)).json();
  assert.equal(
    (await requestAs(port, host, "/", "GET", {
      "If-None-Match": `"${meta.sha256}"`,
    })).status,
    304,
  );
  assert.equal(
    (await requestAs(port, `127.0.0.1:${port}`, `/${created.id}`)).status,
    302,
  );
  assert.equal(meta.hits, 3);
  assert.equal(await podHitsMetric(t.server.metricsPort!), 3);
});

test("metrics: without podDomain, pod_broker_pod_hits_total counts the 200 GETs of /:id, as the registry does", async (api) => {
  await using t = await startServer(api, { metrics: { port: 0 } });
  const created = await (await upload(t.url, await signedPod(api))).json();
  for (let i = 0; i < 2; i++) {
    const got = await fetch(`${t.url}/${created.id}`);
    assert.equal(got.status, 200);
    await got.arrayBuffer();
  }
  const head = await fetch(`${t.url}/${created.id}`, { method: "HEAD" });
  assert.equal(head.status, 200);
  const meta = await (await fetch(`${t.url}/${created.id}/meta`)).json();
  assert.equal(meta.hits, 2);
  assert.equal(await podHitsMetric(t.server.metricsPort!), 2);
});
