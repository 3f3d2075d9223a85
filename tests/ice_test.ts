import assert from "node:assert/strict";
import { createHmac } from "node:crypto";
import { createIceServerSource, mintTurnCredential } from "../src/ice.ts";
import { startServer } from "./_helpers.ts";
import { TestClient } from "./_ws.ts";

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

Deno.test("mintTurnCredential() is the TURN REST API scheme (RFC 2104 vector too)", async () => {
  const { username, credential } = mintTurnCredential("key", "peer", 1234);
  assert.equal(username, "1234:peer");
  assert.equal(credential, await expectedCredential("key", "1234:peer"));
  // RFC 2202 test case 2 for HMAC-SHA1: key "Jefe".
  assert.equal(
    createHmac("sha1", "Jefe").update("what do ya want for nothing?").digest(
      "hex",
    ),
    "effcdf6ae5eb2fa2d27416d5f184df9c259a7c79",
  );
});

Deno.test("createIceServerSource() gives static entries and fresh per-peer TURN", () => {
  let now = 1_700_000_000_000;
  const source = createIceServerSource(
    [{ urls: "stun:stun.example" }],
    { urls: ["turn:relay.example"], secret: "s", ttlSeconds: 60 },
    () => now,
  );
  const first = source("A");
  assert.deepEqual(first[0], { urls: "stun:stun.example" });
  assert.equal(first[1]!.username, "1700000060:A");
  now += 5_000;
  assert.equal(source("A")[1]!.username, "1700000065:A");
  assert.equal(source("B")[1]!.username, "1700000065:B");
  // Callers get copies: changing one does not change the next.
  (first[0]!.urls as string) = "stun:changed";
  assert.deepEqual(source("A")[0], { urls: "stun:stun.example" });
});

Deno.test("signaling: joined carries iceServers, ice returns fresh ones, the secret never shows", async () => {
  const secret = "turn-secret-" + crypto.randomUUID();
  const logged: string[] = [];
  await using t = await startServer({
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

Deno.test("signaling: joined carries an empty iceServers list when none is configured", async () => {
  await using t = await startServer();
  const a = new TestClient(t.wsUrl);
  assert.deepEqual((await a.join("plain")).iceServers, []);
  a.ws.close();
  await a.closed;
});
