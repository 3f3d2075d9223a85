import assert from "node:assert/strict";
import { MemoryRegistry } from "../src/registries/memory.ts";
import { SqliteRegistry } from "../src/registries/sqlite.ts";
import { decodePrivateKeyPem } from "../src/pod/keys.ts";
import { publicKeyFromSeed } from "../src/pod/ed25519.ts";
import { encodeBase64Url } from "../src/_encoding.ts";
import { createSignalServer } from "../src/adapters/deno.ts";
import { DEFAULT_MAX_BLOB_BYTES } from "../src/create_pod.ts";
import { silentLogger } from "../src/log.ts";
import type { PodRecord, Registry } from "../src/types.ts";
import {
  newSeed,
  replaceText,
  SAMPLE_HTML,
  signedPod,
  startServer,
  upload,
} from "./_helpers.ts";

const SANDBOX_POLICY =
  "sandbox allow-scripts allow-forms allow-modals allow-downloads; object-src 'none'; base-uri 'none'";

/** A memory registry that records every call. */
class RecordingRegistry extends MemoryRegistry {
  calls: string[] = [];
  override putPod(record: PodRecord, blob: Uint8Array): Promise<void> {
    this.calls.push(`putPod ${record.id}`);
    return super.putPod(record, blob);
  }
  override getRecord(id: string): Promise<PodRecord | null> {
    this.calls.push(`getRecord ${id}`);
    return super.getRecord(id);
  }
}

async function problemOf(response: Response): Promise<Record<string, unknown>> {
  assert.equal(
    response.headers.get("Content-Type"),
    "application/problem+json",
  );
  const body = await response.json();
  assert.equal(body.status, response.status);
  assert.equal(body.type, "about:blank");
  assert.equal(typeof body.title, "string");
  assert.equal(typeof body.detail, "string");
  return body;
}

async function assertProblem(
  response: Response,
  status: number,
  code: string,
): Promise<void> {
  assert.equal(response.status, status, `expected ${status} ${code}`);
  assert.equal((await problemOf(response)).code, code);
}

Deno.test("POST /pods, GET /:id and /meta: round trip with exact bytes and counted hits", async () => {
  await using t = await startServer();
  const pod = await signedPod(SAMPLE_HTML, {
    name: "Round trip",
    createdAt: "2026-11-21T12:00:00Z",
  });
  const before = Date.now();
  const response = await upload(t.url, pod);
  assert.equal(response.status, 201);
  const created = await response.json();
  assert.match(created.id, /^[A-Za-z0-9]{12}$/);
  assert.equal(created.url, `${t.url}/${created.id}`);
  assert.equal(response.headers.get("Location"), created.url);
  assert.equal(created.blobSize, pod.length);
  assert.deepEqual(Object.keys(created), [
    "id",
    "url",
    "ownerPubkey",
    "blobSize",
  ]);

  for (let i = 0; i < 2; i++) {
    const got = await fetch(created.url);
    assert.equal(got.status, 200);
    assert.equal(got.headers.get("Content-Type"), "text/html; charset=utf-8");
    assert.equal(got.headers.get("Content-Length"), String(pod.length));
    assert.deepEqual(new Uint8Array(await got.arrayBuffer()), pod);
  }
  // Hits are counted without waiting on the response; give them a moment.
  await new Promise((resolve) => setTimeout(resolve, 20));
  const meta = await (await fetch(`${created.url}/meta`)).json();
  assert.deepEqual(Object.keys(meta), [
    "id",
    "url",
    "ownerPubkey",
    "blobSize",
    "sha256",
    "contentSha256",
    "name",
    "createdAt",
    "uploadedAt",
    "hits",
  ]);
  assert.equal(meta.id, created.id);
  assert.equal(meta.url, created.url);
  assert.equal(meta.ownerPubkey, created.ownerPubkey);
  assert.equal(meta.name, "Round trip");
  assert.equal(meta.createdAt, "2026-11-21T12:00:00Z");
  assert.equal(meta.hits, 2);
  assert.match(meta.sha256, /^[A-Za-z0-9_-]{43}$/);
  assert.match(meta.contentSha256, /^[A-Za-z0-9_-]{43}$/);
  assert.match(meta.uploadedAt, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
  assert.ok(Date.parse(meta.uploadedAt) >= before - 1000);
});

Deno.test("GET /:id/meta gives null name and createdAt when the manifest has none", async () => {
  await using t = await startServer();
  const created = await (await upload(t.url, await signedPod())).json();
  const meta = await (await fetch(`${created.url}/meta`)).json();
  assert.equal(meta.name, null);
  assert.equal(meta.createdAt, null);
  assert.equal(meta.hits, 0);
});

Deno.test("POST /pods stores bytes outside the slot exactly (NUL, BOM, invalid UTF-8)", async () => {
  await using t = await startServer();
  const html = new Uint8Array([
    0xef,
    0xbb,
    0xbf,
    ...new TextEncoder().encode("<html><head></head><body>"),
    0x00,
    0xff,
    0xfe,
    0xc3,
    0x28,
    0x80,
    ...new TextEncoder().encode("</body></html>"),
  ]);
  const pod = await signedPod(html);
  const created = await (await upload(t.url, pod)).json();
  const got = new Uint8Array(await (await fetch(created.url)).arrayBuffer());
  assert.deepEqual(got, pod);
});

Deno.test("POST /pods twice with the same bytes gives two ids", async () => {
  await using t = await startServer();
  const pod = await signedPod();
  const a = await (await upload(t.url, pod)).json();
  const b = await (await upload(t.url, pod)).json();
  assert.notEqual(a.id, b.id);
});

Deno.test("POST /pods accepts text/html with parameters and any case", async () => {
  await using t = await startServer();
  const response = await upload(t.url, await signedPod(), {
    "Content-Type": "Text/HTML ; charset=UTF-8",
  });
  assert.equal(response.status, 201);
  await response.body?.cancel();
});

Deno.test("POST /pods refuses each bad upload with its code, and none reaches putPod", async () => {
  const registry = new RecordingRegistry();
  await using t = await startServer({ registry, maxBlobBytes: 4096 });
  const pod = await signedPod();
  const text = new TextDecoder().decode(pod);
  const payload = /id="__POD_MANIFEST_B64">([^<]*)</.exec(text)![1]!;
  const manifest = JSON.parse(atob(payload));

  await assertProblem(
    await upload(t.url, new Uint8Array(4097)),
    413,
    "blob_too_large",
  );
  await assertProblem(
    await upload(t.url, pod, { "Content-Type": "text/plain" }),
    415,
    "unsupported_media_type",
  );
  await assertProblem(
    await upload(t.url, pod, {}),
    415,
    "unsupported_media_type",
  );
  await assertProblem(
    await upload(t.url, SAMPLE_HTML),
    400,
    "manifest_missing",
  );
  const slot =
    `<script type="application/pod-manifest" id="__POD_MANIFEST_B64">${payload}</script>`;
  await assertProblem(
    await upload(t.url, text.replace("</body>", `${slot}</body>`)),
    400,
    "manifest_malformed",
  );
  await assertProblem(
    await upload(t.url, replaceText(pod, payload, "not base64!")),
    400,
    "manifest_malformed",
  );
  const badSignature = {
    ...manifest,
    signature: manifest.publicKey + manifest.publicKey,
  };
  await assertProblem(
    await upload(
      t.url,
      replaceText(
        pod,
        payload,
        btoa(
          JSON.stringify(badSignature).replace(
            /"signature":"[^"]*"/,
            `"signature":"${"A".repeat(86)}"`,
          ),
        ),
      ),
    ),
    422,
    "signature_invalid",
  );
  await assertProblem(
    await upload(t.url, replaceText(pod, "hello", "HELLO")),
    422,
    "content_mismatch",
  );
  assert.deepEqual(
    registry.calls.filter((call) => call.startsWith("putPod")),
    [],
  );
  assert.equal(registry.size, 0);
});

Deno.test("POST /pods checks the signature before the content", async () => {
  await using t = await startServer();
  const pod = await signedPod();
  const text = new TextDecoder().decode(pod);
  const payload = /id="__POD_MANIFEST_B64">([^<]*)</.exec(text)![1]!;
  const manifest = JSON.parse(atob(payload));
  manifest.signature = "A".repeat(86);
  const both = replaceText(
    replaceText(pod, payload, btoa(JSON.stringify(manifest))),
    "hello",
    "HELLO",
  );
  await assertProblem(await upload(t.url, both), 422, "signature_invalid");
});

Deno.test("POST /pods refuses an identity-point key with signature_invalid", async () => {
  await using t = await startServer();
  const pod = await signedPod();
  const text = new TextDecoder().decode(pod);
  const payload = /id="__POD_MANIFEST_B64">([^<]*)</.exec(text)![1]!;
  const manifest = JSON.parse(atob(payload));
  const identity = new Uint8Array(32);
  identity[0] = 1;
  const b64url = (bytes: Uint8Array) =>
    btoa(String.fromCharCode(...bytes)).replace(/\+/g, "-").replace(/\//g, "_")
      .replace(/=+$/, "");
  manifest.publicKey = b64url(identity);
  manifest.signature = b64url(
    new Uint8Array([...identity, ...new Uint8Array(32)]),
  );
  await assertProblem(
    await upload(
      t.url,
      replaceText(pod, payload, btoa(JSON.stringify(manifest))),
    ),
    422,
    "signature_invalid",
  );
});

Deno.test("POST /pods answers storage_failed when the registry throws, storing nothing", async () => {
  const registry = new MemoryRegistry();
  registry.putPod = () => Promise.reject(new Error("disk full"));
  await using t = await startServer({ registry });
  await assertProblem(
    await upload(t.url, await signedPod()),
    500,
    "storage_failed",
  );
  assert.equal(registry.size, 0);
});

Deno.test("POST /pods accepts a blob of exactly the limit and refuses limit + 1", async () => {
  await using t = await startServer();
  // Without a name the manifest has a fixed length, so signing adds a fixed
  // number of bytes: size the page to land exactly on the limit.
  const seed = await newSeed();
  const prefix = new TextEncoder().encode("<!doctype html><p>big</p><!--");
  const overhead = (await signedPod(prefix, {}, seed)).length - prefix.length;
  const html = new Uint8Array(DEFAULT_MAX_BLOB_BYTES - overhead).fill(0x61);
  html.set(prefix);
  html.set(new TextEncoder().encode("-->"), html.length - 3);
  const exact = await signedPod(html, {}, seed);
  assert.equal(exact.length, DEFAULT_MAX_BLOB_BYTES);
  const accepted = await upload(t.url, exact);
  assert.equal(accepted.status, 201);
  assert.equal((await accepted.json()).blobSize, DEFAULT_MAX_BLOB_BYTES);

  const over = new Uint8Array(DEFAULT_MAX_BLOB_BYTES + 1);
  over.set(exact);
  await assertProblem(await upload(t.url, over), 413, "blob_too_large");
});

Deno.test("POST /pods cuts off a chunked body that grows past the limit", async () => {
  await using t = await startServer({ maxBlobBytes: 100_000 });
  let sent = 0;
  const body = new ReadableStream<Uint8Array>({
    pull(controller) {
      // Bounded at 64 MB; once the broker stops reading, backpressure stops the pulls.
      if (sent >= 64_000_000) return controller.close();
      sent += 64_000;
      controller.enqueue(new Uint8Array(64_000).fill(0x61));
    },
  });
  const response = await fetch(`${t.url}/pods`, {
    method: "POST",
    headers: { "Content-Type": "text/html" },
    body,
  });
  await assertProblem(response, 413, "blob_too_large");
  assert.ok(sent < 64_000_000, `the whole body was sent: ${sent} bytes`);
});

Deno.test("POST /pods refuses a Content-Length over the limit without reading the body", async () => {
  await using t = await startServer();
  const conn = await Deno.connect({
    hostname: "127.0.0.1",
    port: t.server.port,
  });
  try {
    // Headers only: a broker that waited for the body would never answer.
    await conn.write(new TextEncoder().encode(
      `POST /pods HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: text/html\r\n` +
        `Content-Length: ${DEFAULT_MAX_BLOB_BYTES + 1}\r\n\r\n`,
    ));
    const buffer = new Uint8Array(4096);
    let text = "";
    const deadline = setTimeout(() => conn.close(), 5000);
    try {
      while (!text.includes("blob_too_large")) {
        const n = await conn.read(buffer);
        if (n === null) break;
        text += new TextDecoder().decode(buffer.subarray(0, n));
      }
    } finally {
      clearTimeout(deadline);
    }
    assert.match(text, /^HTTP\/1\.1 413 /);
    assert.match(text, /"code":"blob_too_large"/);
  } finally {
    try {
      conn.close();
    } catch { /* closed by the deadline */ }
  }
});

Deno.test("GET /:id sends the pod headers; HEAD sends them without a body", async () => {
  await using t = await startServer();
  const pod = await signedPod();
  const created = await (await upload(t.url, pod)).json();
  for (const method of ["GET", "HEAD"]) {
    const response = await fetch(created.url, { method });
    assert.equal(response.status, 200);
    const csp = response.headers.get("Content-Security-Policy")!;
    assert.ok(csp.startsWith(SANDBOX_POLICY + ", "), csp);
    assert.ok(
      csp.includes(`connect-src 'self' ws://127.0.0.1:${t.server.port}/signal`),
    );
    assert.ok(csp.includes("default-src 'none'"));
    assert.ok(csp.includes("frame-ancestors 'none'"));
    assert.ok(!csp.includes("allow-same-origin"));
    assert.match(
      response.headers.get("Permissions-Policy")!,
      /camera=\(\).*microphone=\(\)/,
    );
    assert.match(
      response.headers.get("Permissions-Policy")!,
      /geolocation=\(\).*payment=\(\).*usb=\(\)/,
    );
    assert.equal(response.headers.get("X-Content-Type-Options"), "nosniff");
    assert.equal(response.headers.get("Referrer-Policy"), "no-referrer");
    assert.equal(
      response.headers.get("Cross-Origin-Resource-Policy"),
      "same-origin",
    );
    assert.equal(response.headers.get("X-Frame-Options"), "DENY");
    assert.equal(response.headers.get("X-Robots-Tag"), "noindex, nofollow");
    assert.equal(response.headers.get("Cross-Origin-Opener-Policy"), null);
    assert.equal(response.headers.get("Cache-Control"), "public, max-age=300");
    assert.equal(response.headers.get("Content-Length"), String(pod.length));
    const body = new Uint8Array(await response.arrayBuffer());
    assert.equal(body.length, method === "HEAD" ? 0 : pod.length);
  }
});

Deno.test("GET /:id answers 304 to a matching If-None-Match, with the ETag and sandbox", async () => {
  await using t = await startServer();
  const created = await (await upload(t.url, await signedPod())).json();
  const first = await fetch(created.url);
  await first.body?.cancel();
  const etag = first.headers.get("ETag")!;
  const meta = await (await fetch(`${created.url}/meta`)).json();
  assert.equal(etag, `"${meta.sha256}"`);
  for (const ifNoneMatch of [etag, `"other", ${etag}`, `W/${etag}`, "*"]) {
    const response = await fetch(created.url, {
      headers: { "If-None-Match": ifNoneMatch },
    });
    assert.equal(response.status, 304, ifNoneMatch);
    assert.equal(response.headers.get("ETag"), etag);
    assert.ok(
      response.headers.get("Content-Security-Policy")!.startsWith(
        SANDBOX_POLICY,
      ),
    );
    await response.body?.cancel();
  }
  const miss = await fetch(created.url, {
    headers: { "If-None-Match": '"other"' },
  });
  assert.equal(miss.status, 200);
  await miss.body?.cancel();
});

Deno.test("GET /:id answers 404 pod_not_found, not touching the registry for a malformed id", async () => {
  const registry = new RecordingRegistry();
  await using t = await startServer({ registry });
  await assertProblem(
    await fetch(`${t.url}/AAAAAAAAAAAA`),
    404,
    "pod_not_found",
  );
  await assertProblem(
    await fetch(`${t.url}/AAAAAAAAAAAA/meta`),
    404,
    "pod_not_found",
  );
  assert.deepEqual(registry.calls, [
    "getRecord AAAAAAAAAAAA",
    "getRecord AAAAAAAAAAAA",
  ]);
  for (
    const id of ["short", "AAAAAAAAAAAAA", "AAAAAAAAAAA-", "%41AAAAAAAAAAA"]
  ) {
    await assertProblem(await fetch(`${t.url}/${id}`), 404, "pod_not_found");
    await assertProblem(
      await fetch(`${t.url}/${id}/meta`),
      404,
      "pod_not_found",
    );
  }
  assert.equal(registry.calls.length, 2);
});

Deno.test("GET /:id still answers 200 when bumpHits fails", async () => {
  const registry = new MemoryRegistry();
  let bumps = 0;
  registry.bumpHits = () => {
    bumps++;
    return Promise.reject(new Error("read-only"));
  };
  await using t = await startServer({ registry });
  const created = await (await upload(t.url, await signedPod())).json();
  const response = await fetch(created.url);
  assert.equal(response.status, 200);
  await response.body?.cancel();
  await new Promise((resolve) => setTimeout(resolve, 20));
  assert.equal(bumps, 1);
});

Deno.test("Wrong methods get 405 with Allow; unknown paths 404; /signal without upgrade 426", async () => {
  await using t = await startServer();
  const cases: [string, string, string][] = [
    ["GET", "/pods", "POST, OPTIONS"],
    ["DELETE", "/pods", "POST, OPTIONS"],
    ["POST", "/health", "GET, HEAD, OPTIONS"],
    ["POST", "/AAAAAAAAAAAA", "GET, HEAD"],
    ["PUT", "/AAAAAAAAAAAA/meta", "GET, HEAD, OPTIONS"],
    ["POST", "/signal", "GET"],
  ];
  for (const [method, path, allow] of cases) {
    const response = await fetch(`${t.url}${path}`, { method });
    assert.equal(response.headers.get("Allow"), allow, `${method} ${path}`);
    await assertProblem(response, 405, "method_not_allowed");
  }
  await assertProblem(await fetch(`${t.url}/`), 404, "not_found");
  await assertProblem(await fetch(`${t.url}/a/b/c`), 404, "not_found");
  const signal = await fetch(`${t.url}/signal`);
  assert.equal(signal.headers.get("Upgrade"), "websocket");
  await assertProblem(signal, 426, "upgrade_required");
});

Deno.test("CORS: /pods, /meta and /health allow any origin, errors and preflight included", async () => {
  await using t = await startServer();
  const created = await (await upload(t.url, await signedPod())).json();
  const origin = { Origin: "https://tool.example" };
  for (const path of ["/health", `/${created.id}/meta`, "/AAAAAAAAAAAA/meta"]) {
    const response = await fetch(`${t.url}${path}`, { headers: origin });
    assert.equal(
      response.headers.get("Access-Control-Allow-Origin"),
      "*",
      path,
    );
    assert.equal(
      response.headers.get("Access-Control-Allow-Credentials"),
      null,
    );
    await response.body?.cancel();
  }
  const refused = await upload(t.url, "<p>no manifest</p>", {
    "Content-Type": "text/html",
    ...origin,
  });
  assert.equal(refused.headers.get("Access-Control-Allow-Origin"), "*");
  await assertProblem(refused, 400, "manifest_missing");
  const preflight = await fetch(`${t.url}/pods`, {
    method: "OPTIONS",
    headers: {
      ...origin,
      "Access-Control-Request-Method": "POST",
      "Access-Control-Request-Headers": "content-type",
    },
  });
  assert.equal(preflight.status, 204);
  assert.equal(preflight.headers.get("Access-Control-Allow-Origin"), "*");
  assert.match(preflight.headers.get("Access-Control-Allow-Methods")!, /POST/);
  assert.match(
    preflight.headers.get("Access-Control-Allow-Headers")!,
    /content-type/i,
  );
  await preflight.body?.cancel();
  const pod = await fetch(created.url, { headers: origin });
  assert.equal(pod.headers.get("Access-Control-Allow-Origin"), null);
  await pod.body?.cancel();
});

Deno.test("GET /health reports status, version, uptime and signaling figures", async () => {
  await using t = await startServer();
  const response = await fetch(`${t.url}/health`);
  assert.equal(response.status, 200);
  const health = await response.json();
  const { version } = JSON.parse(
    await Deno.readTextFile(new URL("../deno.json", import.meta.url)),
  );
  assert.deepEqual(Object.keys(health), [
    "status",
    "version",
    "uptimeSeconds",
    "sessions",
    "peers",
    "origins",
  ]);
  assert.equal(health.status, "ok");
  assert.equal(health.version, version);
  assert.ok(
    Number.isInteger(health.uptimeSeconds) && health.uptimeSeconds >= 0,
  );
  assert.equal(health.sessions, 0);
  assert.equal(health.peers, 0);
  assert.deepEqual(health.origins, []);
});

Deno.test("URLs use baseUrl when set, and X-Forwarded-* only with trustProxy", async () => {
  const pod = await signedPod();
  const forwarded = {
    "Content-Type": "text/html",
    "X-Forwarded-Proto": "https",
    "X-Forwarded-Host": "pods.example",
  };
  {
    await using t = await startServer();
    const created = await (await upload(t.url, pod, forwarded)).json();
    assert.equal(created.url, `${t.url}/${created.id}`);
  }
  {
    await using t = await startServer({ trustProxy: true });
    const response = await upload(t.url, pod, forwarded);
    const created = await response.json();
    assert.equal(created.url, `https://pods.example/${created.id}`);
    const got = await fetch(`${t.url}/${created.id}`, { headers: forwarded });
    assert.match(
      got.headers.get("Content-Security-Policy")!,
      /connect-src 'self' wss:\/\/pods\.example\/signal/,
    );
    await got.body?.cancel();
  }
  {
    await using t = await startServer({
      baseUrl: "https://short.example/",
      trustProxy: true,
    });
    const created = await (await upload(t.url, pod, forwarded)).json();
    assert.equal(created.url, `https://short.example/${created.id}`);
    const meta = await (await fetch(`${t.url}/${created.id}/meta`)).json();
    assert.equal(meta.url, created.url);
  }
});

Deno.test("podHeaderOptions replace the content policy, Permissions-Policy and sandbox tokens", async () => {
  await using t = await startServer({
    podHeaderOptions: {
      csp: "default-src 'none'; frame-ancestors https://embed.example",
      permissionsPolicy: "camera=(self)",
      sandbox: "allow-scripts",
    },
  });
  const created = await (await upload(t.url, await signedPod())).json();
  const response = await fetch(created.url);
  await response.body?.cancel();
  assert.equal(
    response.headers.get("Content-Security-Policy"),
    "sandbox allow-scripts; object-src 'none'; base-uri 'none', default-src 'none'; frame-ancestors https://embed.example",
  );
  assert.equal(response.headers.get("Permissions-Policy"), "camera=(self)");
});

Deno.test("createSignalServer() refuses allow-same-origin and unknown or out-of-range options", () => {
  const registry = new MemoryRegistry();
  const cases: [Record<string, unknown>, RegExp][] = [
    [
      { podHeaderOptions: { sandbox: "allow-scripts allow-same-origin" } },
      /allow-same-origin/,
    ],
    [{ maxBlobBytes: 0 }, /maxBlobBytes/],
    [{ maxBlobByte: 10 }, /unknown option 'maxBlobByte'/],
    [{ port: 70000 }, /port/],
    [{ signaling: { maxPeers: 3 } }, /unknown option 'signaling.maxPeers'/],
    [{ signaling: { joinTimeoutMs: -1 } }, /signaling.joinTimeoutMs/],
    [{ signaling: { allowedOrigins: "null" } }, /allowedOrigins/],
    [{ podHeaderOptions: { cps: "x" } }, /podHeaderOptions.cps/],
    [{ baseUrl: "ftp://x" }, /baseUrl/],
    [{ trustProxy: "yes" }, /trustProxy/],
  ];
  for (const [options, message] of cases) {
    assert.throws(
      () =>
        createSignalServer({
          registry,
          port: 0,
          logger: silentLogger,
          ...options,
        }),
      (error: Error) =>
        error instanceof TypeError && message.test(error.message),
      JSON.stringify(options),
    );
  }
  assert.throws(
    () => createSignalServer({ registry: {} as Registry, port: 0 }),
    /registry/,
  );
});

Deno.test("SqliteRegistry: a new server on the same data dir serves what the old one stored", async () => {
  const dataDir = await Deno.makeTempDir();
  const pod = await signedPod(SAMPLE_HTML, { name: "Kept" });
  let created;
  {
    const registry = new SqliteRegistry({ dataDir });
    await using t = await startServer({ registry });
    created = await (await upload(t.url, pod)).json();
    await (await fetch(`${t.url}/${created.id}`)).arrayBuffer();
    await t.server.close();
    registry.close();
  }
  const registry = new SqliteRegistry({ dataDir });
  try {
    await using t = await startServer({ registry });
    const got = await fetch(`${t.url}/${created.id}`);
    assert.equal(got.status, 200);
    assert.deepEqual(new Uint8Array(await got.arrayBuffer()), pod);
    const meta = await (await fetch(`${t.url}/${created.id}/meta`)).json();
    assert.equal(meta.name, "Kept");
    assert.equal(meta.blobSize, pod.length);
    assert.ok(meta.hits >= 1);
  } finally {
    registry.close();
  }
});

Deno.test("POST /pods accepts a pod signed with a key from openssl genpkey", async () => {
  const dir = await Deno.makeTempDir();
  const keyFile = `${dir}/openssl.pem`;
  const made = await new Deno.Command("openssl", {
    args: ["genpkey", "-algorithm", "ed25519", "-out", keyFile],
    stdout: "null",
    stderr: "piped",
  }).output();
  assert.equal(made.code, 0, new TextDecoder().decode(made.stderr));
  const seed = decodePrivateKeyPem(await Deno.readTextFile(keyFile));
  await using t = await startServer();
  const response = await upload(t.url, await signedPod(SAMPLE_HTML, {}, seed));
  assert.equal(response.status, 201);
  const created = await response.json();
  assert.equal(
    created.ownerPubkey,
    encodeBase64Url(await publicKeyFromSeed(seed)),
  );
});
