import assert from "node:assert/strict";
import { createHmac } from "node:crypto";
import {
  createIceServerSource,
  mintTurnCredential,
} from "../../src/signaling/ice.ts";
import { expectedTurnCredential } from "../contract/_wire.ts";

Deno.test("mintTurnCredential() is the TURN REST API scheme (RFC 2104 vector too)", async () => {
  const { username, credential } = mintTurnCredential("key", "peer", 1234);
  assert.equal(username, "1234:peer");
  assert.equal(credential, await expectedTurnCredential("key", "1234:peer"));
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
