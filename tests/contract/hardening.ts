// The HTTP items of the security review (issue 19): trickled uploads, Host
// and X-Forwarded-* values, /health's size, aborted uploads; and the access
// log's `bytes` (issue 20). Each case is named after its item. Runs on Deno
// and on the npm package under Node 22 (see _suite.ts); requests that
// fetch will not send (a bad Host) go over raw TCP.
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import {
  assertProblem,
  newSeed,
  signedPod,
  updateHeaders,
  upload,
} from "./_pods.ts";
import {
  ANY_LOCAL_PORT,
  sleep,
  spawnBroker,
  startServer,
  until,
} from "./_servers.ts";
import { test } from "./_suite.ts";
import {
  announce,
  parseRawResponse,
  type RawConnection,
  rawRequest,
  TestClient,
} from "./_wire.ts";

/** The value of one sample of the metrics listener's exposition. */
async function sample(metricsPort: number, series: string): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`))
    .text();
  const line = text.split("\n").find((line) => line.startsWith(`${series} `));
  return line === undefined ? 0 : Number(line.slice(series.length + 1));
}

test("security 5: while six connections trickle announced uploads that fill the budget, a 1 KiB upload gets 201", async (api) => {
  const maxBlobBytes = 1_000_000;
  const budget = 6_000_000;
  await using t = await startServer(api, {
    maxBlobBytes,
    maxUploadBytesInFlight: budget,
    // Long enough that neither the pause nor the rate rule cuts them here.
    uploadTimeoutMs: 30_000,
  });
  // Five announce the limit, the sixth the rest of the budget (the
  // review's 5 x 50 MiB + 6 MiB, scaled down), and each trickles.
  const announced = [1, 2, 3, 4, 5].map(() => maxBlobBytes);
  announced.push(budget - 5 * maxBlobBytes);
  const tricklers: RawConnection[] = [];
  try {
    for (const length of announced) {
      tricklers.push(await announce(t.server.port, length, "<"));
    }
    const honest = await signedPod(
      api,
      `<!doctype html><p>${"x".repeat(800)}`,
    );
    assert.ok(honest.length >= 1024 && honest.length < 2048);
    for (let round = 0; round < 3; round++) {
      await sleep(100);
      for (const conn of tricklers) await conn.write("!");
    }
    // Three rounds in: every trickler has long been admitted.
    const response = await upload(t.url, honest);
    const said = await response.text();
    assert.equal(response.status, 201, said);
    // They are still trickling, unanswered.
    for (const conn of tricklers) {
      await conn.write("!");
      assert.equal(conn.text(), "");
    }
  } finally {
    await Promise.all(tricklers.map((conn) => conn.close()));
  }
});

test("security 5: an upload that trickles below the minimum rate gets 408 upload_timeout", async (api) => {
  await using t = await startServer(api, { uploadTimeoutMs: 500 });
  // Over the size read whole, so that it streams; a byte every 100 ms never
  // pauses for 500 ms, but falls far below the minimum rate.
  const conn = await announce(t.server.port, 200_000, "<");
  let answered = false;
  for (let i = 0; i < 100 && !answered; i++) {
    await sleep(100);
    answered = parseRawResponse(conn.text()).complete;
    if (!answered) await conn.write("!").catch(() => {});
  }
  await conn.close();
  const response = parseRawResponse(conn.text());
  assert.equal(response.status, 408, conn.text().slice(0, 300));
  assert.match(response.body, /"code":"upload_timeout"/);
});

test("security 6: a Host that is not host[:port] gets 400 host_invalid, counted as a request", async (api) => {
  const lines: string[] = [];
  await using t = await startServer(api, {
    metrics: { port: 0 },
    logger: (level, message) => lines.push(`${level} ${message}`),
  });
  const pod = await signedPod(api);
  // Deno builds the URL from Host verbatim: this one moved the path to
  // /pods and stored the pod.
  const moved = await rawRequest(
    t.server.port,
    `POST /static/logo.png HTTP/1.1\r\nHost: h/pods?\r\nContent-Type: text/html\r\nContent-Length: ${pod.length}\r\nConnection: close\r\n\r\n`,
    pod,
  );
  assert.equal(moved.status, 400, moved.head + moved.body);
  assert.equal(JSON.parse(moved.body).code, "host_invalid");
  for (const host of ["a:99999", "x@y", "a b", "h#x", ""]) {
    const response = await rawRequest(
      t.server.port,
      `GET /health HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`,
    );
    assert.equal(response.status, 400, `Host '${host}': ${response.head}`);
    assert.match(response.head, /content-type: application\/problem\+json/i);
    assert.equal(JSON.parse(response.body).code, "host_invalid");
  }
  // Good ones still pass.
  for (const host of ["127.0.0.1", "broker.example:8080", "[::1]:80"]) {
    const response = await rawRequest(
      t.server.port,
      `GET /health HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`,
    );
    assert.equal(response.status, 200, `Host '${host}': ${response.head}`);
  }
  // Each went through the one place that logs and counts requests.
  assert.equal(
    await sample(
      t.server.metricsPort!,
      'pod_broker_http_requests_total{route="unmatched",method="GET",status="400"}',
    ),
    5,
  );
  assert.deepEqual(lines.filter((line) => line.startsWith("error")), []);
  let stored = 0;
  for await (const _ of t.registry.listPods!()) stored++;
  assert.equal(stored, 0);
});

test("security 6: with trustProxy, an X-Forwarded-Host that is not host[:port] gets 400 host_invalid", async (api) => {
  await using t = await startServer(api, { trustProxy: true });
  const pod = await signedPod(api);
  for (const host of ["h/pods?", "a:99999", "user@evil.example", "a b"]) {
    await assertProblem(
      await upload(t.url, pod, {
        "Content-Type": "text/html",
        "X-Forwarded-Host": host,
      }),
      400,
      "host_invalid",
    );
  }
});

test("security 7: /health lists at most 100 origins of at most 256 characters, and counts the rest", async (api) => {
  await using t = await startServer(api);
  const origins = Array.from(
    { length: 102 },
    (_, i) => `https://o${String(i).padStart(3, "0")}.example`,
  );
  const long = `https://${"l".repeat(300)}.example`;
  const clients = [...origins, long].map((origin) =>
    new TestClient(t.wsUrl, origin)
  );
  try {
    await Promise.all(clients.map((client) => client.opened()));
    const response = await fetch(`${t.url}/health`);
    const text = await response.text();
    const health = JSON.parse(text);
    assert.equal(health.origins.length, 100);
    assert.deepEqual(health.origins, origins.slice(0, 100));
    assert.equal(health.originsOmitted, 3);
    assert.ok(text.length < 100 * 256 + 1024, `${text.length} bytes`);
  } finally {
    await Promise.all(clients.map((client) => client.close()));
  }
});

test("security 11: with trustProxy, X-Forwarded-Host and -Proto use the last value of each list", async (api) => {
  await using t = await startServer(api, { trustProxy: true });
  const response = await upload(t.url, await signedPod(api), {
    "Content-Type": "text/html",
    "X-Forwarded-Host": "evil.example, broker.example",
    "X-Forwarded-Proto": "http, https",
  });
  assert.equal(response.status, 201);
  const created = await response.json();
  assert.equal(
    response.headers.get("Location"),
    `https://broker.example/${created.id}`,
  );
  assert.equal(created.url, `https://broker.example/${created.id}`);
});

test("security also: an aborted upload is logged at debug level, never as an error", async (api) => {
  const lines: { level: string; message: string; code?: unknown }[] = [];
  await using t = await startServer(api, {
    logger: (level, message, fields) =>
      lines.push({ level, message, code: fields?.code }),
  });
  // One read whole, one streamed: each sends part of its body and goes.
  for (const length of [10_000, 200_000]) {
    const conn = await announce(t.server.port, length, "<!doctype html>");
    await sleep(50);
    await conn.close();
  }
  await until(() =>
    lines.filter((line) =>
      /aborted|ended|BadResource|Unexpected/i.test(
        `${line.message} ${String(line.code)}`,
      )
    ).length >= 2
  );
  assert.deepEqual(lines.filter((line) => line.level === "error"), []);
  assert.deepEqual(
    lines.map((line) => [line.level, line.code]),
    [["debug", "upload_aborted"], ["debug", "upload_aborted"]],
  );
});

test("access log: bytes is the body size of /health, uploads, updates and problems; an update is logged as PUT /:id", async (api) => {
  await using broker = await spawnBroker(api, [
    ...ANY_LOCAL_PORT,
    "--access-log",
    "on",
  ], { keep: true });
  const stdout = () => broker.output().stdout;
  const url = `http://127.0.0.1:${broker.port}`;
  const seed = await newSeed(api);
  const version = (day: string) =>
    signedPod(
      api,
      `<p>${day}</p>`,
      { createdAt: `2026-01-${day}T00:00:00Z` },
      seed,
    );
  const sizes: number[] = [];
  const v1 = await version("01");
  const created = await upload(url, v1);
  const { id } = JSON.parse(new TextDecoder().decode(
    new Uint8Array(await created.clone().arrayBuffer()),
  ));
  const v2 = await version("02");
  // The version replaced is v1's digest: no /meta request in the log.
  const replaces = createHash("sha256").update(v1).digest("base64url");
  for (
    const response of [
      await fetch(`${url}/health`),
      created,
      await fetch(`${url}/${id}`, {
        method: "PUT",
        headers: {
          "Content-Type": "text/html",
          ...await updateHeaders(api, url, id, v2, seed, replaces),
        },
        body: v2,
      }),
      await fetch(`${url}/no/such/path`),
    ]
  ) {
    sizes.push((await response.arrayBuffer()).byteLength);
  }
  await until(() => stdout().split("\n").length > 4);
  const logged = stdout().trim().split("\n").map((line) => JSON.parse(line));
  assert.deepEqual(
    logged.map((line) => [line.method, line.route, line.status, line.bytes]),
    [
      ["POST", "/pods", 201, sizes[1]],
      ["GET", "/health", 200, sizes[0]],
      ["PUT", "/:id", 200, sizes[2]],
      ["GET", null, 404, sizes[3]],
    ],
  );
});
