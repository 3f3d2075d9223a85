// HTTP and signaling checks that run through the public API only, against
// either adapter: on Deno with src/mod.ts, and on Node 22 with the installed
// npm package (npm_test.ts transpiles this file and runs it there). So it
// imports nothing at run time but `node:` built-ins; the API is passed in.
import assert from "node:assert/strict";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type * as PodBroker from "../src/core.ts";
import type { CreateSignalServer } from "../src/cli.ts";

/** What the checks use of the package: `core.ts` plus the runtime's server. */
export type BrokerApi =
  & Pick<
    typeof PodBroker,
    | "SqliteRegistry"
    | "generateKeyPair"
    | "signPod"
    | "silentLogger"
    | "DEFAULT_MAX_BLOB_BYTES"
    | "DEFAULT_SIGNALING"
  >
  & { createSignalServer: CreateSignalServer };

// deno-lint-ignore no-explicit-any
type Frame = Record<string, any>;

const WAIT_MS = 5_000;

/**
 * Starts a server with `SqliteRegistry` on a temp dir and port 0, uploads,
 * serves and signals through it, closes it, and finds the pod again in a
 * reopened registry. Throws on the first failed check.
 */
export async function runAdapterChecks(api: BrokerApi): Promise<void> {
  const dataDir = await mkdtemp(join(tmpdir(), "pod-broker-checks-"));
  try {
    let registry = new api.SqliteRegistry({ dataDir });
    const server = await api.createSignalServer({
      registry,
      port: 0,
      hostname: "127.0.0.1",
      logger: api.silentLogger,
    });
    const base = `http://127.0.0.1:${server.port}`;
    let stored: { id: string; pod: Uint8Array };
    try {
      stored = await checkPodRoundTrip(api, base);
      await checkUploadLimits(api, base);
      await checkErrors(base);
      await checkSignaling(api, base, () => server.close());
    } finally {
      await server.close();
    }
    await assert.rejects(fetch(`${base}/health`), "the server still answers");

    registry.close();
    registry = new api.SqliteRegistry({ dataDir });
    try {
      const record = await registry.getRecord(stored.id);
      assert.equal(record?.blobSize, stored.pod.length);
      assert.deepEqual(await registry.getBlob(stored.id), stored.pod);
    } finally {
      registry.close();
    }
  } finally {
    await rm(dataDir, { recursive: true, force: true });
  }
}

/** Upload, GET, HEAD, 304, /meta and /health. */
async function checkPodRoundTrip(
  api: BrokerApi,
  base: string,
): Promise<{ id: string; pod: Uint8Array }> {
  const { seed } = await api.generateKeyPair();
  const pod = await api.signPod(
    "<!doctype html><title>Checks</title><p>hello</p>",
    seed,
    { name: "Adapter checks" },
  );
  const created = await upload(base, pod);
  assert.equal(created.status, 201);
  const body = await created.json();
  assert.match(body.id, /^[A-Za-z0-9]{12}$/);
  assert.equal(body.url, `${base}/${body.id}`);
  assert.equal(created.headers.get("Location"), body.url);
  assert.equal(body.blobSize, pod.length);

  const got = await fetch(body.url);
  assert.equal(got.status, 200);
  assert.equal(got.statusText, "OK");
  assert.deepEqual(new Uint8Array(await got.arrayBuffer()), pod);
  assert.equal(got.headers.get("Content-Type"), "text/html; charset=utf-8");
  assert.equal(got.headers.get("Content-Length"), String(pod.length));
  const csp = got.headers.get("Content-Security-Policy") ?? "";
  assert.match(csp, /^sandbox allow-scripts /);
  assert.ok(csp.includes(`ws://127.0.0.1:${new URL(base).port}/signal`), csp);
  const etag = got.headers.get("ETag");
  assert.ok(etag);

  const head = await fetch(body.url, { method: "HEAD" });
  assert.equal(head.status, 200);
  assert.equal(head.headers.get("Content-Length"), String(pod.length));
  assert.equal(head.headers.get("ETag"), etag);
  assert.equal((await head.arrayBuffer()).byteLength, 0);

  const cached = await fetch(body.url, { headers: { "If-None-Match": etag } });
  assert.equal(cached.status, 304);
  assert.equal(cached.headers.get("ETag"), etag);
  await cached.body?.cancel();

  const meta = await fetch(`${body.url}/meta`);
  assert.equal(meta.status, 200);
  assert.equal(meta.headers.get("Access-Control-Allow-Origin"), "*");
  const record = await meta.json();
  assert.equal(record.id, body.id);
  assert.equal(record.name, "Adapter checks");
  assert.equal(record.blobSize, pod.length);

  const health = await fetch(`${base}/health`);
  assert.equal(health.status, 200);
  assert.equal((await health.json()).status, "ok");
  return { id: body.id, pod };
}

/** A 50 MiB upload streams through; bodies over the limit get a 413. */
async function checkUploadLimits(api: BrokerApi, base: string): Promise<void> {
  const limit = api.DEFAULT_MAX_BLOB_BYTES;
  const { seed } = await api.generateKeyPair();
  // The manifest adds under 1 KiB to the page.
  const page = new Uint8Array(limit - 1024).fill(0x61);
  page.set(new TextEncoder().encode("<!doctype html><p>big</p><!--"));
  page.set(new TextEncoder().encode("-->"), page.length - 3);
  const big = await api.signPod(page, seed);
  const created = await upload(base, big);
  assert.equal(created.status, 201);
  const { url, blobSize } = await created.json();
  assert.equal(blobSize, big.length);
  const served = new Uint8Array(await (await fetch(url)).arrayBuffer());
  assert.equal(served.length, big.length);
  assert.ok(sameBytes(served, big), "the served bytes differ");

  // Refused from Content-Length, before the body is read.
  await assertProblem(
    await upload(base, new Uint8Array(limit + 1)),
    413,
    "blob_too_large",
  );

  // Chunked: cut off once past the limit, long before the end.
  const chunk = new Uint8Array(1024 * 1024).fill(0x61);
  const total = 4 * limit;
  let sent = 0;
  const stream = new ReadableStream<Uint8Array>({
    pull(controller) {
      if (sent >= total) return controller.close();
      sent += chunk.length;
      controller.enqueue(chunk);
    },
  });
  const init: RequestInit & { duplex: "half" } = {
    method: "POST",
    headers: { "Content-Type": "text/html" },
    body: stream,
    duplex: "half",
  };
  await assertProblem(await fetch(`${base}/pods`, init), 413, "blob_too_large");
  assert.ok(sent < total, `the whole chunked body was sent: ${sent} bytes`);
}

/** Problem responses keep their status, headers and reason phrase. */
async function checkErrors(base: string): Promise<void> {
  const missing = await fetch(`${base}/AAAAAAAAAAAA`);
  assert.equal(missing.statusText, "Not Found");
  await assertProblem(missing, 404, "pod_not_found");

  const noUpgrade = await fetch(`${base}/signal`);
  assert.equal(noUpgrade.headers.get("Upgrade"), "websocket");
  await assertProblem(noUpgrade, 426, "upgrade_required");

  const wrongMethod = await fetch(`${base}/health`, { method: "POST" });
  assert.equal(wrongMethod.headers.get("Allow"), "GET, HEAD, OPTIONS");
  await assertProblem(wrongMethod, 405, "method_not_allowed");

  const wrongType = await upload(base, new Uint8Array(10), "text/plain");
  await assertProblem(wrongType, 415, "unsupported_media_type");
}

/**
 * Two peers join a session and exchange an offer; a binary frame gets
 * `bad_message`, an oversized one closes with 1009; `close` sends 1001.
 */
async function checkSignaling(
  api: BrokerApi,
  base: string,
  close: () => Promise<void>,
): Promise<void> {
  const signalUrl = `${base.replace("http", "ws")}/signal`;
  const alice = await connect(signalUrl);
  alice.send({ type: "join", session: "checks" });
  const aliceJoined = await alice.next();
  assert.equal(aliceJoined.type, "joined");
  assert.deepEqual(aliceJoined.peers, []);

  const bob = await connect(signalUrl);
  bob.send({ type: "join", session: "checks" });
  const bobJoined = await bob.next();
  assert.deepEqual(bobJoined.peers, [aliceJoined.peerId]);
  assert.deepEqual(await alice.next(), {
    type: "peer-joined",
    peerId: bobJoined.peerId,
  });

  const data = { sdp: { type: "offer", sdp: "v=0\r\n" } };
  alice.send({ type: "signal", to: bobJoined.peerId, data });
  assert.deepEqual(await bob.next(), {
    type: "signal",
    from: aliceJoined.peerId,
    data,
  });

  bob.ws.send(new Uint8Array([1, 2, 3]));
  assert.equal((await bob.next()).code, "bad_message");

  const health = await (await fetch(`${base}/health`)).json();
  assert.equal(health.sessions, 1);
  assert.equal(health.peers, 2);

  bob.ws.send("x".repeat(api.DEFAULT_SIGNALING.maxFrameBytes + 1));
  assert.equal((await bob.closed()).code, 1009);
  assert.deepEqual(await alice.next(), {
    type: "peer-left",
    peerId: bobJoined.peerId,
  });

  await close();
  assert.equal((await alice.closed()).code, 1001);
}

/** A WebSocket whose JSON frames queue up for `next()`. */
interface Peer {
  ws: WebSocket;
  send(frame: Frame): void;
  next(): Promise<Frame>;
  closed(): Promise<{ code: number }>;
}

async function connect(url: string): Promise<Peer> {
  const ws = new WebSocket(url);
  const queue: Frame[] = [];
  const waiters: ((frame: Frame) => void)[] = [];
  ws.onmessage = (event) => {
    const frame = JSON.parse(event.data);
    const waiter = waiters.shift();
    if (waiter) waiter(frame);
    else queue.push(frame);
  };
  const closed = new Promise<{ code: number }>((resolve) => {
    ws.onclose = (event) => resolve({ code: event.code });
  });
  await within(
    new Promise<void>((resolve, reject) => {
      ws.onopen = () => resolve();
      ws.onerror = () => reject(new Error(`Cannot open ${url}`));
    }),
    "the WebSocket to open",
  );
  return {
    ws,
    send: (frame) => ws.send(JSON.stringify(frame)),
    next: () => {
      const queued = queue.shift();
      if (queued) return Promise.resolve(queued);
      return within(
        new Promise<Frame>((resolve) => waiters.push(resolve)),
        "a signaling frame",
      );
    },
    closed: () => within(closed, "the WebSocket to close"),
  };
}

async function within<T>(promise: Promise<T>, what: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    return await Promise.race([
      promise,
      new Promise<never>((_, reject) => {
        timer = setTimeout(
          () => reject(new Error(`Timed out waiting for ${what}`)),
          WAIT_MS,
        );
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

function upload(
  base: string,
  body: Uint8Array,
  type = "text/html; charset=utf-8",
): Promise<Response> {
  return fetch(`${base}/pods`, {
    method: "POST",
    headers: { "Content-Type": type },
    body: body as Uint8Array<ArrayBuffer>,
  });
}

async function assertProblem(
  response: Response,
  status: number,
  code: string,
): Promise<void> {
  assert.equal(response.status, status);
  assert.equal(
    response.headers.get("Content-Type"),
    "application/problem+json",
  );
  const problem = await response.json();
  assert.equal(problem.status, status);
  assert.equal(problem.code, code);
}
