// Private rooms (DESIGN section 10.2) over real WebSockets, on every
// adapter: a keyed session admits only a join that proves its key over the
// Host and a fresh time, a locked joiner learns nothing and no member hears
// of it, and sealed signals travel only in keyed sessions, bounded.
import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { generateKeyPairSync, type KeyObject, sign } from "node:crypto";
import { startServer } from "./_servers.ts";
import { test } from "./_suite.ts";
import { type Frame, TestClient } from "./_wire.ts";
import { twoBrokers } from "./scaleout.ts";

/** A keyed session: its name and a way to prove its key. */
interface Keyed {
  session: string;
  key: KeyObject;
}

function keyedSession(): Keyed {
  const { publicKey, privateKey } = generateKeyPairSync("ed25519");
  const jwk = publicKey.export({ format: "jwk" });
  return { session: `k_${jwk.x}`, key: privateKey };
}

/** A proof by `key` for `session` over `host` at time `t` (Unix seconds). */
function proof(
  key: KeyObject,
  host: string,
  session: string,
  t = Math.floor(Date.now() / 1000),
): { t: number; sig: string } {
  const text = `pod-room-v1\n${host}\n${session}\n${t}`;
  return { t, sig: sign(null, Buffer.from(text), key).toString("base64url") };
}

function hostOf(wsUrl: string): string {
  return new URL(wsUrl).host;
}

/** Joins the keyed session with a valid proof over the socket's Host. */
async function joinKeyed(wsUrl: string, room: Keyed): Promise<{
  client: TestClient;
  joined: Frame;
}> {
  const client = new TestClient(wsUrl);
  await client.opened();
  client.send({
    type: "join",
    session: room.session,
    proof: proof(room.key, hostOf(wsUrl), room.session),
  });
  const joined = await client.next();
  assert.equal(joined.type, "joined", JSON.stringify(joined));
  return { client, joined };
}

/** Proves nothing else is queued for `client`: a bad frame's error comes next. */
async function assertNothingElse(client: TestClient): Promise<void> {
  client.send("{");
  assert.equal((await client.next()).code, "bad_json");
}

/**
 * A join of `room` with `join` extra members is refused with `room_locked`,
 * names no session, and leaves the socket outside: its signal is
 * `not_joined`.
 */
async function assertLocked(
  wsUrl: string,
  room: Keyed,
  extra: Frame,
  what: string,
): Promise<void> {
  const client = new TestClient(wsUrl);
  await client.opened();
  client.send({ type: "join", session: room.session, ...extra });
  const refused = await client.next();
  assert.equal(refused.type, "error", what);
  assert.equal(refused.code, "room_locked", what);
  assert.ok(!refused.message.includes(room.session.slice(2)), what);
  client.send({ type: "signal", to: "x", data: { candidate: null } });
  assert.equal((await client.next()).code, "not_joined", what);
  client.send({ type: "ice" });
  assert.equal((await client.next()).code, "not_joined", what);
  await client.close();
}

test("private rooms: joins with a valid proof over the Host are admitted and relay sealed signals", async (api) => {
  await using t = await startServer(api);
  const room = keyedSession();
  const a = await joinKeyed(t.wsUrl, room);
  assert.equal(a.joined.session, room.session);
  assert.deepEqual(a.joined.peers, []);
  const b = await joinKeyed(t.wsUrl, room);
  assert.deepEqual(b.joined.peers, [a.joined.peerId]);
  assert.deepEqual(await a.client.next(), {
    type: "peer-joined",
    peerId: b.joined.peerId,
  });
  // Unread: whatever base64url the peers sealed, as it was sent.
  const data = { sealed: "A-_z09".repeat(100) };
  b.client.send({ type: "signal", to: a.joined.peerId, data });
  assert.deepEqual(await a.client.next(), {
    type: "signal",
    from: b.joined.peerId,
    data,
  });
  // Plain signaling still works in a keyed session.
  a.client.send({
    type: "signal",
    to: b.joined.peerId,
    data: { candidate: null },
  });
  assert.deepEqual((await b.client.next()).data, { candidate: null });
  await a.client.close();
  await b.client.close();
});

test("private rooms: a join without a proof, over another Host, for another session, or older than 120 s is room_locked and invisible to members", async (api) => {
  await using t = await startServer(api);
  const room = keyedSession();
  const member = await joinKeyed(t.wsUrl, room);
  const host = hostOf(t.wsUrl);
  const now = Math.floor(Date.now() / 1000);
  const other = keyedSession();
  const cases: [Frame, string][] = [
    [{}, "no proof"],
    [{ proof: proof(room.key, "evil.example", room.session) }, "other Host"],
    [{ proof: proof(room.key, host, other.session) }, "other session"],
    [{ proof: proof(other.key, host, room.session) }, "other key"],
    // Past the window by 5 s: the cases before them take time, and a time
    // just past it ahead would come back inside the window meanwhile.
    [{ proof: proof(room.key, host, room.session, now - 125) }, "125 s old"],
    [{ proof: proof(room.key, host, room.session, now + 125) }, "125 s ahead"],
    [{ proof: { t: now, sig: "A".repeat(86) } }, "a wrong signature"],
    [{ proof: { t: now, sig: "not base64url!" } }, "a malformed signature"],
  ];
  for (const [extra, what] of cases) {
    await assertLocked(t.wsUrl, room, extra, what);
  }
  // A proof 100 s old is still fresh.
  const late = new TestClient(t.wsUrl);
  await late.opened();
  late.send({
    type: "join",
    session: room.session,
    proof: proof(room.key, host, room.session, now - 100),
  });
  assert.equal((await late.next()).type, "joined");
  await late.close();
  // The member heard of the one valid joiner only.
  assert.equal((await member.client.next()).type, "peer-joined");
  assert.equal((await member.client.next()).type, "peer-left");
  await assertNothingElse(member.client);
  // Nothing names the session where anyone can read it.
  const health = await (await fetch(`${t.url}/health`)).text();
  assert.ok(!health.includes(room.session.slice(2)), health);
  await member.client.close();
});

test("private rooms: sealed signals are relayed only in keyed sessions, at most 16,384 base64url characters", async (api) => {
  await using t = await startServer(api);
  // An open session: no sealed signals, and no proof.
  const a = new TestClient(t.wsUrl);
  const b = new TestClient(t.wsUrl);
  const joinedA = await a.join("open-room");
  await b.join("open-room");
  await a.next(); // peer-joined
  b.send({ type: "signal", to: joinedA.peerId, data: { sealed: "AAAA" } });
  assert.equal((await b.next()).code, "bad_message");
  await assertNothingElse(a);
  const proofOnOpen = new TestClient(t.wsUrl);
  await proofOnOpen.opened();
  proofOnOpen.send({
    type: "join",
    session: "open-room",
    proof: { t: 1, sig: "AA" },
  });
  assert.equal((await proofOnOpen.next()).code, "bad_message");
  await proofOnOpen.close();
  await a.close();
  await b.close();

  const room = keyedSession();
  const x = await joinKeyed(t.wsUrl, room);
  const y = await joinKeyed(t.wsUrl, room);
  await x.client.next(); // peer-joined
  const to = x.joined.peerId;
  const largest = { sealed: "A".repeat(16_384) };
  y.client.send({ type: "signal", to, data: largest });
  assert.deepEqual((await x.client.next()).data, largest);
  for (
    const sealed of ["A".repeat(16_385), "", "AA==", "A A", 42, ["AA"]]
  ) {
    y.client.send({ type: "signal", to, data: { sealed } });
    assert.equal(
      (await y.client.next()).code,
      "bad_message",
      String(sealed).slice(0, 20),
    );
  }
  y.client.send({ type: "signal", to, data: { sealed: "AA", sdp: null } });
  assert.equal((await y.client.next()).code, "bad_message");
  await assertNothingElse(x.client);
  await x.client.close();
  await y.client.close();
});

test("private rooms: across two brokers on Redis, each checks the proof alone and sealed signals cross", async (api) => {
  await using pair = await twoBrokers(api);
  if (pair === null) return;
  const { a, b } = pair;
  const room = keyedSession();
  const onA = await joinKeyed(a.wsUrl, room);
  // A proof over broker A's Host opens nothing on broker B.
  await assertLocked(
    b.wsUrl,
    room,
    { proof: proof(room.key, hostOf(a.wsUrl), room.session) },
    "A's Host on B",
  );
  await assertLocked(b.wsUrl, room, {}, "no proof on B");
  const onB = await joinKeyed(b.wsUrl, room);
  assert.deepEqual(onB.joined.peers, [onA.joined.peerId]);
  assert.deepEqual(await onA.client.next(), {
    type: "peer-joined",
    peerId: onB.joined.peerId,
  });
  const data = { sealed: "B".repeat(16_384) };
  onB.client.send({ type: "signal", to: onA.joined.peerId, data });
  assert.deepEqual(await onA.client.next(), {
    type: "signal",
    from: onB.joined.peerId,
    data,
  });
  await assertNothingElse(onA.client);
  await onA.client.close();
  await onB.client.close();
});
