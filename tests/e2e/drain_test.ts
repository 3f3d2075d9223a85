// The CLI's drain: SIGTERM with sockets open makes /health say draining,
// tells the sockets to reconnect and closes them with 1012 one at a time
// over --drain-seconds, and the process exits 0 once none is left, within
// the window. A second SIGTERM during the drain does not cut it short, and
// a drained peer keeps its place: the others are not told it left.
import assert from "node:assert/strict";
import process from "node:process";
import { ANY_LOCAL_PORT, MOD, spawnBroker } from "../support/helpers.ts";
import { TestClient } from "../contract/_wire.ts";

const WINDOW_S = 4;

// The Deno.serve entry, and the node:http one (the container's).
const ENTRIES = [
  ["Deno.serve", MOD],
  ["node:http", new URL("../../src/mod_node.ts", import.meta.url).pathname],
];

for (const [adapter, entry] of ENTRIES) {
  Deno.test(`pod-broker serve (${adapter}) drains on SIGTERM and exits 0 within --drain-seconds`, () =>
    drainOnSigterm(entry!));
}

async function drainOnSigterm(entry: string): Promise<void> {
  await using broker = await spawnBroker([
    "run",
    "-A",
    entry,
    "--registry",
    "memory",
    "--drain-seconds",
    String(WINDOW_S),
    "--access-log",
    "off",
    ...ANY_LOCAL_PORT,
  ]);
  const url = `ws://127.0.0.1:${broker.port}/signal`;
  // One after the other: the drain goes in the order they opened.
  const first = new TestClient(url);
  await first.join("drain");
  const second = new TestClient(url);
  await second.join("drain");
  assert.equal((await first.next()).type, "peer-joined");
  const signalled = performance.now();
  process.kill(broker.pid, "SIGTERM");
  // The first socket's turn is at once, the second's half the window later.
  assert.deepEqual(await first.next(), { type: "reconnect" });
  assert.equal((await first.closed).code, 1012);
  const health = await fetch(`http://127.0.0.1:${broker.port}/health`);
  assert.equal(health.status, 503);
  assert.equal((await health.json()).status, "draining");
  process.kill(broker.pid, "SIGTERM");
  // The second is not told its peer left (its place is kept for a resume):
  // its next frame is its own turn.
  assert.deepEqual(await second.next(WINDOW_S * 1000), { type: "reconnect" });
  assert.equal((await second.closed).code, 1012);
  // It ends by itself: a signal now would race its exit.
  assert.equal(await broker.exited(), 0);
  const took = performance.now() - signalled;
  assert.ok(took < WINDOW_S * 1000, `exited ${took.toFixed(0)} ms after`);
}
