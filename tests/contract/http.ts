// The HTTP API (DESIGN section 3) against a real server: the same cases run
// on Deno and on the npm package under Node 22 (see _suite.ts).
import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import type { PodRecord, Registry } from "../../src/core.ts";
import {
  assertProblem,
  newSeed,
  replaceText,
  sameBytes,
  SAMPLE_HTML,
  SANDBOX_POLICY,
  signedPod,
  upload,
} from "./_pods.ts";
import { runCommand, sleep, startServer, tempDir } from "./_servers.ts";
import { type ContractApi, test } from "./_suite.ts";
import { parseRawResponse, RawConnection } from "./_wire.ts";
import { encoding, numberOf } from "../support/little_endian.ts";

/** A signed pod's text, its manifest's base64 payload, and the manifest. */
function manifestOf(pod: Uint8Array) {
  const text = new TextDecoder().decode(pod);
  const payload = /id="__POD_MANIFEST_B64">([^<]*)</.exec(text)![1]!;
  return { text, payload, manifest: JSON.parse(atob(payload)) };
}

/** A memory registry that records every call. */
function recordingRegistry(
  api: ContractApi,
): InstanceType<ContractApi["MemoryRegistry"]> & { calls: string[] } {
  class RecordingRegistry extends api.MemoryRegistry {
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
  return new RecordingRegistry();
}

/** Base64url without padding. */
function base64Url(bytes: Uint8Array): string {
  return btoa(String.fromCharCode(...bytes)).replace(/\+/g, "-")
    .replace(/\//g, "_").replace(/=+$/, "");
}

test("POST /pods, GET /:id and /meta: round trip with exact bytes and counted hits", async (api) => {
  await using t = await startServer(api);
  const pod = await signedPod(api, SAMPLE_HTML, {
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
    assert.equal(got.statusText, "OK");
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
    "version",
    "updatedAt",
    "scriptPolicy",
    "permissions",
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

test("GET /:id/meta gives null name and createdAt when the manifest has none", async (api) => {
  await using t = await startServer(api);
  const created = await (await upload(t.url, await signedPod(api))).json();
  const meta = await (await fetch(`${created.url}/meta`)).json();
  assert.equal(meta.name, null);
  assert.equal(meta.createdAt, null);
  assert.equal(meta.hits, 0);
});

test("POST /pods stores bytes outside the slot exactly (NUL, BOM, invalid UTF-8)", async (api) => {
  await using t = await startServer(api);
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
  const pod = await signedPod(api, html);
  const created = await (await upload(t.url, pod)).json();
  const got = new Uint8Array(await (await fetch(created.url)).arrayBuffer());
  assert.deepEqual(got, pod);
});

test("POST /pods twice with the same bytes gives two ids", async (api) => {
  await using t = await startServer(api);
  const pod = await signedPod(api);
  const a = await (await upload(t.url, pod)).json();
  const b = await (await upload(t.url, pod)).json();
  assert.notEqual(a.id, b.id);
});

test("POST /pods accepts text/html with parameters and any case", async (api) => {
  await using t = await startServer(api);
  const response = await upload(t.url, await signedPod(api), {
    "Content-Type": "Text/HTML ; charset=UTF-8",
  });
  assert.equal(response.status, 201);
  await response.body?.cancel();
});

test("POST /pods refuses each bad upload with its code, and none reaches putPod", async (api) => {
  const registry = recordingRegistry(api);
  await using t = await startServer(api, { registry, maxBlobBytes: 4096 });
  const pod = await signedPod(api);
  const { text, payload, manifest } = manifestOf(pod);

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

test("POST /pods checks the signature before the content", async (api) => {
  await using t = await startServer(api);
  const pod = await signedPod(api);
  const { payload, manifest } = manifestOf(pod);
  manifest.signature = "A".repeat(86);
  const both = replaceText(
    replaceText(pod, payload, btoa(JSON.stringify(manifest))),
    "hello",
    "HELLO",
  );
  await assertProblem(await upload(t.url, both), 422, "signature_invalid");
});

test("POST /pods refuses an identity-point key with signature_invalid", async (api) => {
  await using t = await startServer(api);
  const pod = await signedPod(api);
  const { payload, manifest } = manifestOf(pod);
  const identity = new Uint8Array(32);
  identity[0] = 1;
  manifest.publicKey = base64Url(identity);
  manifest.signature = base64Url(
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

const FIELD_PRIME = 2n ** 255n - 19n;
const GROUP_ORDER = 2n ** 252n + 27742317777372353535851937790883648493n;
/** The `y` of one point of order 8; the other's is p minus it. */
const ORDER_8_Y = numberOf(Uint8Array.from(
  "26e8958fc2b227b045c3f489f2ef98f0d5dfac05d3c63339b13802886d53fc05"
    .match(/../g)!,
  (byte) => parseInt(byte, 16),
));
/**
 * Every `y` of a point of small order (0, 1, p - 1 and the two of order 8),
 * and the encodings of 0 and 1 at or above p.
 */
const SMALL_ORDER_Y = [
  0n,
  1n,
  FIELD_PRIME - 1n,
  ORDER_8_Y,
  FIELD_PRIME - ORDER_8_Y,
  FIELD_PRIME,
  FIELD_PRIME + 1n,
];

test("verify refuses every key or R of small order, S at or above the group order and a key's y at or above p, as libsodium does", async (api) => {
  const message = new TextEncoder().encode("any message at all");
  const smallOrder = SMALL_ORDER_Y.flatMap((y) => [
    encoding(y),
    encoding(y, true),
  ]);
  // A key and R of small order with S = 0 pass the bare equation for some
  // messages (the identity's key and R for every message).
  const zero = new Uint8Array(32);
  for (const key of smallOrder) {
    for (const r of smallOrder) {
      assert.equal(
        await api.verify(new Uint8Array([...r, ...zero]), message, key),
        false,
        `key ${numberOf(key).toString(16)}, R ${numberOf(r).toString(16)}`,
      );
    }
  }
  const seed = crypto.getRandomValues(new Uint8Array(32));
  const key = await api.publicKeyFromSeed(seed);
  const signature = await api.sign(message, seed);
  assert.equal(await api.verify(signature, message, key), true);
  // The same S plus the group order: the same scalar, not its canonical form.
  const s = numberOf(signature.subarray(32));
  const wide = new Uint8Array([
    ...signature.subarray(0, 32),
    ...encoding(s + GROUP_ORDER),
  ]);
  assert.equal(await api.verify(wide, message, key), false);
  // A key whose y is at or above p: the same point as y - p, named twice.
  for (let y = FIELD_PRIME + 2n; y < 2n ** 255n; y++) {
    assert.equal(await api.verify(signature, message, encoding(y)), false);
  }
});

test("POST /pods answers storage_failed when the registry throws, storing nothing", async (api) => {
  const registry = new api.MemoryRegistry();
  registry.putPod = () => Promise.reject(new Error("disk full"));
  await using t = await startServer(api, { registry });
  await assertProblem(
    await upload(t.url, await signedPod(api)),
    500,
    "storage_failed",
  );
  assert.equal(registry.size, 0);
});

test("POST /pods accepts a blob of exactly the limit and refuses limit + 1", async (api) => {
  await using t = await startServer(api);
  // Without a name the manifest has a fixed length, so signing adds a fixed
  // number of bytes: size the page to land exactly on the limit.
  const seed = await newSeed(api);
  const prefix = new TextEncoder().encode("<!doctype html><p>big</p><!--");
  const overhead = (await signedPod(api, prefix, {}, seed)).length -
    prefix.length;
  const html = new Uint8Array(api.DEFAULT_MAX_BLOB_BYTES - overhead).fill(0x61);
  html.set(prefix);
  html.set(new TextEncoder().encode("-->"), html.length - 3);
  const exact = await signedPod(api, html, {}, seed);
  assert.equal(exact.length, api.DEFAULT_MAX_BLOB_BYTES);
  const accepted = await upload(t.url, exact);
  assert.equal(accepted.status, 201);
  const { url, blobSize } = await accepted.json();
  assert.equal(blobSize, api.DEFAULT_MAX_BLOB_BYTES);
  const served = new Uint8Array(await (await fetch(url)).arrayBuffer());
  assert.ok(sameBytes(served, exact), "the served bytes differ");

  const over = new Uint8Array(api.DEFAULT_MAX_BLOB_BYTES + 1);
  over.set(exact);
  await assertProblem(await upload(t.url, over), 413, "blob_too_large");
});

test("POST /pods cuts off a chunked body that grows past the limit", async (api) => {
  await using t = await startServer(api, { maxBlobBytes: 100_000 });
  let sent = 0;
  const body = new ReadableStream<Uint8Array>({
    pull(controller) {
      // Bounded at 64 MB; once the broker stops reading, backpressure stops the pulls.
      if (sent >= 64_000_000) return controller.close();
      sent += 64_000;
      controller.enqueue(new Uint8Array(64_000).fill(0x61));
    },
  });
  // Node's fetch wants `duplex: "half"` for a stream body; Deno ignores it.
  const init: RequestInit & { duplex: "half" } = {
    method: "POST",
    headers: { "Content-Type": "text/html" },
    body,
    duplex: "half",
  };
  const response = await fetch(`${t.url}/pods`, init);
  await assertProblem(response, 413, "blob_too_large");
  assert.ok(sent < 64_000_000, `the whole body was sent: ${sent} bytes`);
});

test("POST /pods refuses a Content-Length over the limit without reading the body", async (api) => {
  await using t = await startServer(api);
  const conn = await RawConnection.open(t.server.port);
  try {
    // Headers only: a broker that waited for the body would never answer.
    await conn.write(
      `POST /pods HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: text/html\r\n` +
        `Content-Length: ${api.DEFAULT_MAX_BLOB_BYTES + 1}\r\n\r\n`,
    );
    const text = await conn.readUntil((text) =>
      text.includes("blob_too_large")
    );
    assert.match(text, /^HTTP\/1\.1 413 /);
    assert.match(text, /"code":"blob_too_large"/);
  } finally {
    await conn.close();
  }
});

test("GET /:id sends the pod headers; HEAD sends them without a body", async (api) => {
  await using t = await startServer(api);
  const pod = await signedPod(api);
  const created = await (await upload(t.url, pod)).json();
  const etags: (string | null)[] = [];
  for (const method of ["GET", "HEAD"]) {
    const response = await fetch(created.url, { method });
    assert.equal(response.status, 200);
    etags.push(response.headers.get("ETag"));
    const csp = response.headers.get("Content-Security-Policy")!;
    assert.ok(csp.startsWith(SANDBOX_POLICY + ", "), csp);
    assert.ok(
      csp.includes(
        `connect-src 'self' http://127.0.0.1:${t.server.port} ws://127.0.0.1:${t.server.port} data: blob:;`,
      ),
      csp,
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
  assert.match(etags[0] ?? "", /^"[A-Za-z0-9_-]{43}"$/);
  assert.equal(etags[1], etags[0]);
});

test("GET /:id answers 304 to a matching If-None-Match, with the ETag and sandbox", async (api) => {
  await using t = await startServer(api);
  const created = await (await upload(t.url, await signedPod(api))).json();
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

test("one keep-alive connection frames each answer exactly: a HEAD's head alone, then a pod, JSON and a problem with their reason phrases", async (api) => {
  await using t = await startServer(api);
  const created = await (await upload(t.url, await signedPod(api))).json();
  const conn = await RawConnection.open(t.server.port);
  try {
    const ask = async (method: string, path: string) => {
      const seen = conn.text().length;
      await conn.write(`${method} ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`);
      if (method !== "HEAD") {
        return parseRawResponse(await conn.nextResponse(seen));
      }
      const text = await conn.readUntil((all) =>
        all.indexOf("\r\n\r\n", seen) !== -1
      );
      // Anything sent after the head would be read as the next answer.
      await sleep(100);
      assert.equal(conn.text().length, text.indexOf("\r\n\r\n", seen) + 4);
      return parseRawResponse(text.slice(seen));
    };
    for (const method of ["HEAD", "GET"]) {
      const missing = await ask(method, "/AAAAAAAAAAAA");
      assert.match(missing.head, /^HTTP\/1\.1 404 Not Found\r\n/);
      assert.match(missing.head, /\r\ncontent-length: *[1-9]\d*\r\n/i);
      const health = await ask(method, "/health");
      assert.match(health.head, /^HTTP\/1\.1 200 OK\r\n/);
      const pod = await ask(method, `/${created.id}`);
      assert.match(pod.head, /^HTTP\/1\.1 200 OK\r\n/);
      if (method === "GET") {
        assert.equal(JSON.parse(missing.body).code, "pod_not_found");
        assert.equal(JSON.parse(health.body).status, "ok");
        assert.match(pod.body, /__POD_MANIFEST_B64/);
      }
    }
  } finally {
    await conn.close();
  }
});

test("GET /:id answers 404 pod_not_found, not touching the registry for a malformed id", async (api) => {
  const registry = recordingRegistry(api);
  await using t = await startServer(api, { registry });
  const missing = await fetch(`${t.url}/AAAAAAAAAAAA`);
  assert.equal(missing.statusText, "Not Found");
  await assertProblem(missing, 404, "pod_not_found");
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

test("GET /:id still answers 200 when bumpHits fails", async (api) => {
  const registry = new api.MemoryRegistry();
  let bumps = 0;
  registry.bumpHits = () => {
    bumps++;
    return Promise.reject(new Error("read-only"));
  };
  await using t = await startServer(api, { registry });
  const created = await (await upload(t.url, await signedPod(api))).json();
  const response = await fetch(created.url);
  assert.equal(response.status, 200);
  await response.body?.cancel();
  await new Promise((resolve) => setTimeout(resolve, 20));
  assert.equal(bumps, 1);
});

test("Wrong methods get 405 with Allow; unknown paths 404; /signal without upgrade 426", async (api) => {
  await using t = await startServer(api);
  const cases: [string, string, string][] = [
    ["GET", "/pods", "POST, OPTIONS"],
    ["DELETE", "/pods", "POST, OPTIONS"],
    ["POST", "/health", "GET, HEAD, OPTIONS"],
    ["POST", "/AAAAAAAAAAAA", "GET, HEAD, PUT"],
    ["PUT", "/AAAAAAAAAAAA/meta", "GET, HEAD, OPTIONS"],
    ["POST", "/signal", "GET"],
  ];
  for (const [method, path, allow] of cases) {
    const response = await fetch(`${t.url}${path}`, { method });
    assert.equal(response.headers.get("Allow"), allow, `${method} ${path}`);
    await assertProblem(response, 405, "method_not_allowed");
  }
  await assertProblem(await fetch(`${t.url}/a/b/c`), 404, "not_found");
  const signal = await fetch(`${t.url}/signal`);
  assert.equal(signal.headers.get("Upgrade"), "websocket");
  await assertProblem(signal, 426, "upgrade_required");
});

test("CORS: /pods, /meta and /health allow any origin, errors and preflight included", async (api) => {
  await using t = await startServer(api);
  const created = await (await upload(t.url, await signedPod(api))).json();
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

test("GET /health reports status, version, uptime and signaling figures", async (api) => {
  await using t = await startServer(api);
  const response = await fetch(`${t.url}/health`);
  assert.equal(response.status, 200);
  const health = await response.json();
  // deno.json's version, read by the harness (the npm build copies it).
  const version = api.version;
  assert.deepEqual(Object.keys(health), [
    "status",
    "version",
    "uptimeSeconds",
    "sessions",
    "peers",
    "origins",
    "compat",
  ]);
  assert.equal(health.status, "ok");
  assert.equal(health.version, version);
  assert.ok(
    Number.isInteger(health.uptimeSeconds) && health.uptimeSeconds >= 0,
  );
  assert.equal(health.sessions, 0);
  assert.equal(health.peers, 0);
  assert.deepEqual(health.origins, []);
  assert.deepEqual(health.compat, {
    "y-webrtc": { sockets: 0, topics: 0 },
    peerjs: { sockets: 0, ids: 0 },
    nostr: { sockets: 0, subscriptions: 0 },
  });
});

test("URLs use baseUrl when set, and X-Forwarded-* only with trustProxy", async (api) => {
  const pod = await signedPod(api);
  const forwarded = {
    "Content-Type": "text/html",
    "X-Forwarded-Proto": "https",
    "X-Forwarded-Host": "pods.example",
  };
  {
    await using t = await startServer(api);
    const created = await (await upload(t.url, pod, forwarded)).json();
    assert.equal(created.url, `${t.url}/${created.id}`);
  }
  {
    await using t = await startServer(api, { trustProxy: true });
    const response = await upload(t.url, pod, forwarded);
    const created = await response.json();
    assert.equal(created.url, `https://pods.example/${created.id}`);
    const got = await fetch(`${t.url}/${created.id}`, { headers: forwarded });
    assert.match(
      got.headers.get("Content-Security-Policy")!,
      /connect-src 'self' https:\/\/pods\.example wss:\/\/pods\.example data: blob:;/,
    );
    await got.body?.cancel();
  }
  {
    await using t = await startServer(api, {
      baseUrl: "https://short.example/",
      trustProxy: true,
    });
    const created = await (await upload(t.url, pod, forwarded)).json();
    assert.equal(created.url, `https://short.example/${created.id}`);
    const meta = await (await fetch(`${t.url}/${created.id}/meta`)).json();
    assert.equal(meta.url, created.url);
  }
});

test("podHeaderOptions replace the content policy, Permissions-Policy and sandbox tokens", async (api) => {
  await using t = await startServer(api, {
    podHeaderOptions: {
      csp: "default-src 'none'; frame-ancestors https://embed.example",
      permissionsPolicy: "camera=(self)",
      sandbox: "allow-scripts",
    },
  });
  const created = await (await upload(t.url, await signedPod(api))).json();
  const response = await fetch(created.url);
  await response.body?.cancel();
  assert.equal(
    response.headers.get("Content-Security-Policy"),
    "sandbox allow-scripts; object-src 'none'; base-uri 'none', default-src 'none'; frame-ancestors https://embed.example",
  );
  assert.equal(response.headers.get("Permissions-Policy"), "camera=(self)");
});

test("createSignalServer() refuses allow-same-origin and unknown or out-of-range options", (api) => {
  const registry = new api.MemoryRegistry();
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
        api.createSignalServer({
          registry,
          port: 0,
          logger: api.silentLogger,
          ...options,
        }),
      (error: Error) =>
        error instanceof TypeError && message.test(error.message),
      JSON.stringify(options),
    );
  }
  assert.throws(
    () => api.createSignalServer({ registry: {} as Registry, port: 0 }),
    /registry/,
  );
  return Promise.resolve();
});

test("SqliteRegistry: a new server on the same data dir serves what the old one stored", async (api) => {
  await using dir = await tempDir();
  const dataDir = dir.path;
  const pod = await signedPod(api, SAMPLE_HTML, { name: "Kept" });
  let created;
  {
    const registry = new api.SqliteRegistry({ dataDir });
    await using t = await startServer(api, { registry });
    created = await (await upload(t.url, pod)).json();
    await (await fetch(`${t.url}/${created.id}`)).arrayBuffer();
    await t.server.close();
    registry.close();
  }
  const registry = new api.SqliteRegistry({ dataDir });
  try {
    await using t = await startServer(api, { registry });
    const got = await fetch(`${t.url}/${created.id}`);
    assert.equal(got.status, 200);
    assert.deepEqual(new Uint8Array(await got.arrayBuffer()), pod);
    const meta = await (await fetch(`${t.url}/${created.id}/meta`)).json();
    assert.equal(meta.name, "Kept");
    assert.equal(meta.blobSize, pod.length);
    assert.ok(meta.hits >= 1);
    // And the registry itself, without a server.
    await t.server.close();
    assert.equal((await registry.getRecord(created.id))?.blobSize, pod.length);
    assert.deepEqual(await registry.getBlob(created.id), pod);
  } finally {
    registry.close();
  }
});

test("POST /pods accepts a pod signed with a key from openssl genpkey", async (api) => {
  await using dir = await tempDir();
  const keyFile = join(dir.path, "openssl.pem");
  const made = await runCommand("openssl", [
    "genpkey",
    "-algorithm",
    "ed25519",
    "-out",
    keyFile,
  ]);
  assert.equal(made.code, 0, made.stderr);
  const seed = api.decodePrivateKeyPem(await readFile(keyFile, "utf8"));
  await using t = await startServer(api);
  const response = await upload(
    t.url,
    await signedPod(api, SAMPLE_HTML, {}, seed),
  );
  assert.equal(response.status, 201);
  const created = await response.json();
  assert.equal(
    created.ownerPubkey,
    base64Url(await api.publicKeyFromSeed(seed)),
  );
});

test("GET /:id from the ready-response cache: same bytes every time, gone at once when deleted or denied, headers per base URL", async (api) => {
  const registry = new api.MemoryRegistry();
  const denyList = new api.DenyList();
  await using t = await startServer(api, {
    registry,
    denyList,
    trustProxy: true,
  });
  const pods = [await signedPod(api), await signedPod(api)];
  const ids: string[] = [];
  for (const pod of pods) {
    const created = await upload(t.url, pod);
    ids.push((await created.json()).id);
  }
  // Many times over (the later ones from the cache): exact bytes, counted.
  for (let i = 0; i < 5; i++) {
    const got = await fetch(`${t.url}/${ids[0]}`);
    assert.equal(got.status, 200);
    sameBytes(new Uint8Array(await got.arrayBuffer()), pods[0]!);
  }
  const meta = await (await fetch(`${t.url}/${ids[0]}/meta`)).json();
  assert.equal(meta.hits, 5);
  // The content policy names each request's own broker origin.
  for (const host of ["a.example", "b.example", "a.example"]) {
    const got = await fetch(`${t.url}/${ids[0]}`, {
      headers: { "X-Forwarded-Host": host },
    });
    await got.body?.cancel();
    const csp = got.headers.get("Content-Security-Policy") ?? "";
    assert.match(
      csp,
      new RegExp(`ws://${host.replace(".", "\\.")} data: blob:;`),
    );
  }
  // Taken down: 410 at once, cached or not.
  assert.equal(await registry.deletePod(ids[0]!), true);
  await assertProblem(await fetch(`${t.url}/${ids[0]}`), 410, "pod_deleted");
  (await fetch(`${t.url}/${ids[1]}`)).body?.cancel();
  denyList.replace({
    contents: [
      (await (await fetch(`${t.url}/${ids[1]}/meta`)).json()).contentSha256,
    ],
  });
  await assertProblem(await fetch(`${t.url}/${ids[1]}`), 410, "pod_deleted");
});
