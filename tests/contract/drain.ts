// Draining on close() (DESIGN section 10.4): /health says draining, new
// sockets are refused, open ones are told to reconnect and closed with 1012,
// one at a time over the window; close() resolves once none is left.
// Runs on Deno and on the npm package under Node 22 (see _suite.ts).
import assert from "node:assert/strict";
import { startServer, type TestServer } from "./_servers.ts";
import { test } from "./_suite.ts";
import { rawHandshake, TestClient } from "./_wire.ts";
import { within } from "../support/wait.ts";

/** `n` open `/signal` sockets, in the order they opened. */
async function openSockets(t: TestServer, n: number): Promise<TestClient[]> {
  const clients: TestClient[] = [];
  for (let i = 0; i < n; i++) {
    const client = new TestClient(t.wsUrl);
    await client.opened();
    clients.push(client);
  }
  return clients;
}

/** Its next frame is `reconnect`, then it closes with 1012. */
async function restarted(client: TestClient): Promise<void> {
  assert.deepEqual(await client.next(), { type: "reconnect" });
  assert.equal((await client.closed).code, 1012);
}

test("drain: /health is 503 draining, upgrades get 503 with Retry-After, HTTP is served, close() resolves once empty", async (api) => {
  // Two sockets over 120 s: the second one's turn is a minute away.
  const t = await startServer(api, { drainSeconds: 120 });
  const [first, second] = await openSockets(t, 2);
  const closing = t.server.close();
  const health = await fetch(`${t.url}/health`);
  assert.equal(health.status, 503);
  assert.equal((await health.json()).status, "draining");
  assert.equal(health.headers.get("Cache-Control"), "no-store");
  const upgrade = await rawHandshake(t.server.port);
  const refusal = await upgrade.conn.nextResponse(0);
  await upgrade.conn.close();
  assert.equal(upgrade.status, 503);
  assert.match(upgrade.head, /\r\nretry-after: \d+\r\n/i);
  assert.match(refusal, /"code":"shutting_down"/);
  // Plain HTTP goes on during the window.
  assert.equal((await fetch(`${t.url}/`)).status, 200);
  // The first socket's turn is at once; the second waits for its own.
  await restarted(first!);
  assert.equal(second!.ws.readyState, WebSocket.OPEN);
  // Once the last one leaves by itself, close() is done, long before the
  // window's end.
  second!.ws.close();
  await within(closing, "close() once no socket is left", 10_000);
  await assert.rejects(fetch(`${t.url}/health`), "the server still answers");
});

test("drain: the closes are spread over at least half the window", async (api) => {
  const windowMs = 2_000;
  const t = await startServer(api, { drainSeconds: windowMs / 1000 });
  const clients = await openSockets(t, 8);
  const closedAt: number[] = [];
  const restarts = clients.map(async (client) => {
    await restarted(client);
    closedAt.push(performance.now());
  });
  await t.server.close();
  await Promise.all(restarts);
  const spread = Math.max(...closedAt) - Math.min(...closedAt);
  assert.ok(
    spread >= windowMs / 2,
    `8 closes over ${windowMs} ms came within ${spread.toFixed(0)} ms`,
  );
});

test("drain: dialect sockets are closed with 1012", async (api) => {
  const t = await startServer(api, { drainSeconds: 1 });
  const ws = t.url.replace("http", "ws");
  const dialects = [
    new TestClient(`${ws}/y-webrtc`),
    new TestClient(`${ws}/peerjs?key=peerjs&id=drained&token=t`),
  ];
  for (const client of dialects) await client.opened();
  // PeerJS says OPEN first.
  assert.equal((await dialects[1]!.next()).type, "OPEN");
  await t.server.close();
  for (const client of dialects) {
    assert.equal((await client.closed).code, 1012);
  }
});
