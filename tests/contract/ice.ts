// ICE servers in the signaling protocol (DESIGN section 7): `joined` carries
// them, an `ice` frame refreshes them, the TURN secret never shows. Runs on
// Deno and on the npm package under Node 22 (see _support.ts).
import assert from "node:assert/strict";
import { collect, startServer, TestClient } from "./_support.ts";

const { cases, test } = collect();

/** The ICE cases. */
export const ICE_CASES = cases;

/** HMAC-SHA1 the long way round: WebCrypto, independent of src/ice.ts. */
async function expectedCredential(secret: string, username: string) {
  const key = await crypto.subtle.importKey(
    "raw",
    new TextEncoder().encode(secret),
    { name: "HMAC", hash: "SHA-1" },
    false,
    ["sign"],
  );
  const mac = await crypto.subtle.sign(
    "HMAC",
    key,
    new TextEncoder().encode(username),
  );
  return btoa(String.fromCharCode(...new Uint8Array(mac)));
}

test("signaling: joined carries iceServers, ice returns fresh ones, the secret never shows", async (api) => {
  const secret = "turn-secret-" + crypto.randomUUID();
  const logged: string[] = [];
  await using t = await startServer(api, {
    iceServers: [{ urls: "stun:stun.example:3478" }],
    turn: { urls: ["turn:127.0.0.1:3478"], secret, ttlSeconds: 120 },
    logger: (...args) => logged.push(JSON.stringify(args)),
  });
  const a = new TestClient(t.wsUrl);
  const before = Math.floor(Date.now() / 1000);
  const joined = await a.join("ice-room");
  const after = Math.floor(Date.now() / 1000);
  assert.equal(joined.iceServers.length, 2);
  assert.deepEqual(joined.iceServers[0], { urls: "stun:stun.example:3478" });
  const turn = joined.iceServers[1];
  assert.deepEqual(turn.urls, ["turn:127.0.0.1:3478"]);
  const [expiry, peerId] = turn.username.split(":");
  assert.equal(peerId, joined.peerId);
  assert.ok(Number(expiry) >= before + 120 && Number(expiry) <= after + 120);
  assert.equal(
    turn.credential,
    await expectedCredential(secret, turn.username),
  );

  await new Promise((resolve) => setTimeout(resolve, 1_100));
  a.send({ type: "ice" });
  const fresh = await a.next();
  assert.equal(fresh.type, "ice");
  const again = fresh.iceServers[1];
  assert.ok(Number(again.username.split(":")[0]) > Number(expiry));
  assert.equal(
    again.credential,
    await expectedCredential(secret, again.username),
  );

  const b = new TestClient(t.wsUrl);
  await b.opened();
  b.send({ type: "ice" });
  assert.equal((await b.next()).code, "not_joined");
  b.send({ type: "ice", extra: true });
  assert.equal((await b.next()).code, "bad_message");

  const health = await (await fetch(`${t.url}/health`)).text();
  for (const text of [health, ...logged]) {
    assert.ok(!text.includes(secret), "the secret leaked");
  }
  a.ws.close();
  b.ws.close();
  await Promise.all([a.closed, b.closed]);
});

test("signaling: joined carries an empty iceServers list when none is configured", async (api) => {
  await using t = await startServer(api);
  const a = new TestClient(t.wsUrl);
  assert.deepEqual((await a.join("plain")).iceServers, []);
  a.ws.close();
  await a.closed;
});
