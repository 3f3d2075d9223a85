// A hot pod (its 200 kept ready) is answered exactly as a cold one: the
// node:http adapter writes it from the cached parts without a web Request
// or Response, and Deno.serve sends a copy of the ready response; either
// way the status, headers and bytes, the hit counts and the metrics are
// the ones of the first answer. On the broker's host and on a pod's host.
import assert from "node:assert/strict";
import { requestWithHost } from "../support/host_request.ts";
import { signedPod, upload } from "./_pods.ts";
import { startServer } from "./_servers.ts";
import { test } from "./_suite.ts";

/** Headers that differ between two answers by design. */
const PER_ANSWER = new Set(["date", "keep-alive", "connection"]);

interface Answer {
  status: number;
  headers: [string, string][];
  bytes: Uint8Array;
}

/** One answer through node:http, with `host` as its Host header. */
async function ask(
  port: number,
  host: string,
  path: string,
  method: string,
  headers: Record<string, string> = {},
): Promise<Answer> {
  const answer = await requestWithHost(port, host, path, { method, headers });
  const list = Object.entries(answer.headers)
    .filter(([name]) => !PER_ANSWER.has(name))
    .map(([name, value]): [string, string] => [name, String(value)])
    .sort(([a], [b]) => a < b ? -1 : a > b ? 1 : 0);
  return { status: answer.status, headers: list, bytes: answer.bytes };
}

/** `NAME{LABELS} VALUE` from the metrics listener, or 0. */
async function metric(port: number, series: string): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
  const line = text.split("\n").find((line) => line.startsWith(`${series} `));
  return line === undefined ? 0 : Number(line.slice(series.length + 1));
}

/**
 * Asks for a pod three times with GET and twice with HEAD (the first GET
 * makes its answer ready), and checks that every answer has the first one's
 * status and headers, GET its bytes and HEAD none.
 */
async function checkHot(
  port: number,
  host: string,
  path: string,
  pod: Uint8Array,
) {
  const gets = [];
  for (let i = 0; i < 3; i++) gets.push(await ask(port, host, path, "GET"));
  const heads = [];
  for (let i = 0; i < 2; i++) heads.push(await ask(port, host, path, "HEAD"));
  const first = gets[0]!;
  assert.equal(first.status, 200);
  assert.deepEqual(first.bytes, pod);
  const length = new Map(first.headers).get("content-length");
  assert.equal(length, String(pod.length));
  for (const answer of [...gets, ...heads]) {
    assert.equal(answer.status, 200);
    assert.deepEqual(answer.headers, first.headers);
  }
  for (const get of gets) assert.deepEqual(get.bytes, pod);
  for (const head of heads) assert.equal(head.bytes.length, 0);
}

test("a hot pod's GET and HEAD have the first GET's status and headers (HEAD without a body), are counted and logged as it was, and a HEAD is no hit", async (api) => {
  await using t = await startServer(api, { metrics: { port: 0 } });
  const port = t.server.port;
  const pod = await signedPod(api, "<!doctype html><p>hot and cold");
  const { id } = await (await upload(t.url, pod)).json();
  await checkHot(port, `127.0.0.1:${port}`, `/${id}`, pod);
  // A query string names the same pod.
  const query = await ask(port, `127.0.0.1:${port}`, `/${id}?v=2`, "GET");
  assert.deepEqual(query.bytes, pod);
  const meta = await (await fetch(`${t.url}/${id}/meta`)).json();
  assert.equal(meta.hits, 4, "each 200 GET is a hit, no HEAD");
  const metrics = t.server.metricsPort!;
  for (const [method, count] of [["GET", 4], ["HEAD", 2]] as const) {
    assert.equal(
      await metric(
        metrics,
        `pod_broker_http_requests_total{route="/:id",method="${method}",status="200"}`,
      ),
      count,
      method,
    );
  }
  assert.equal(
    await metric(metrics, 'pod_broker_http_sent_bytes_total{route="/:id"}'),
    4 * pod.length,
  );
  // Still answered as a cold pod would be: a matching ETag is 304.
  const etag = `"${meta.sha256}"`;
  const cached = await ask(port, `127.0.0.1:${port}`, `/${id}`, "GET", {
    "If-None-Match": etag,
  });
  assert.equal(cached.status, 304);
  assert.equal(cached.bytes.length, 0);
});

test("a hot pod on its own host: GET and HEAD have the first GET's status and headers, over http and with a trusted X-Forwarded-Proto: https (with HSTS)", async (api) => {
  await using t = await startServer(api, {
    podDomain: "pods.test",
    trustProxy: true,
  });
  const port = t.server.port;
  const pod = await signedPod(api, "<!doctype html><p>on its host");
  const created = await (await upload(t.url, pod)).json();
  const host = new URL(created.podUrl).host;
  await checkHot(port, host, "/", pod);
  const https = { "X-Forwarded-Proto": "https" };
  const answers = [];
  for (let i = 0; i < 3; i++) {
    answers.push(await ask(port, host, "/", i === 2 ? "HEAD" : "GET", https));
  }
  for (const answer of answers) {
    assert.equal(answer.status, 200);
    assert.deepEqual(answer.headers, answers[0]!.headers);
    const hsts = new Map(answer.headers).get("strict-transport-security");
    assert.equal(hsts, "max-age=31536000");
  }
});
