// Resume (DESIGN section 10.4): `joined` carries a token; a join with it
// after the socket went away (a lost connection, or a drain's 1012) keeps
// the peer's id and place, nobody sees it leave or join, and the signals
// sent to it meanwhile come once, in order, within their bounds, past which
// it is told to restart ICE. On one broker, and across two on Redis.
// Runs on Deno and on the npm package under Node 22 (see _suite.ts).
import assert from "node:assert/strict";
import { startServer, until } from "./_servers.ts";
import { test } from "./_suite.ts";
import {
  type Frame,
  maskedTextFrame,
  parseServerFrames,
  rawHandshake,
  TestClient,
} from "./_wire.ts";
import { twoBrokers } from "./scaleout.ts";

const TOKEN = /^[A-Za-z0-9]{32}$/;

/** A peer joined over raw TCP, whose connection can be cut (no close frame). */
async function joinDroppable(
  port: number,
  session: string,
): Promise<{ joined: Frame; drop: () => Promise<void> }> {
  const { status, head, conn } = await rawHandshake(port);
  assert.equal(status, 101);
  await conn.write(maskedTextFrame(JSON.stringify({ type: "join", session })));
  const frameOf = (text: string) =>
    parseServerFrames(new TextEncoder().encode(text.slice(head.length)));
  await conn.readUntil((text) => frameOf(text).length > 0);
  const [first] = parseServerFrames(conn.bytes().subarray(head.length));
  assert.ok(first, "no joined frame");
  const joined = JSON.parse(new TextDecoder().decode(first.payload));
  assert.equal(joined.type, "joined", JSON.stringify(joined));
  return { joined, drop: () => conn.close() };
}

/** Its next frame is the answer to a bad one: nothing else was queued. */
async function assertNothingElse(client: TestClient): Promise<void> {
  client.send("{");
  assert.equal((await client.next()).code, "bad_json");
}

/** Waits until the broker at `url` counts `peers` joined sockets. */
async function peersAre(url: string, peers: number): Promise<void> {
  await until(async () => {
    const health = await (await fetch(`${url}/health`)).json();
    return health.peers === peers;
  }, `${peers} peers on ${url}`);
}

const candidate = (n: number) => ({ candidate: { candidate: `c${n}` } });

/** `other` sends the away peer `to` three candidates, and hears nothing back. */
async function sendWhileAway(other: TestClient, to: string): Promise<void> {
  for (let n = 0; n < 3; n++) {
    other.send({ type: "signal", to, data: candidate(n) });
  }
  await assertNothingElse(other);
}

/**
 * A new socket at `wsUrl` joins `session` with `token`: it gets `peerId`
 * back beside `otherId`, then the three candidates sent meanwhile, in
 * order, and nothing more.
 *
 * @returns The socket and its `joined`.
 */
async function resumeAt(
  wsUrl: string,
  session: string,
  joined: Frame,
  otherId: string,
): Promise<{ back: TestClient; resumed: Frame }> {
  const back = new TestClient(wsUrl);
  await back.opened();
  back.send({ type: "join", session, resume: joined.resume });
  const resumed = await back.next();
  assert.equal(resumed.type, "joined", JSON.stringify(resumed));
  assert.equal(resumed.peerId, joined.peerId);
  assert.deepEqual(resumed.peers, [otherId]);
  for (let n = 0; n < 3; n++) {
    assert.deepEqual(await back.next(), {
      type: "signal",
      from: otherId,
      data: candidate(n),
    });
  }
  await assertNothingElse(back);
  return { back, resumed };
}

test("resume: joined carries a token; after a lost connection a join with it keeps the id and place, and gets what was sent meanwhile, in order", async (api) => {
  await using t = await startServer(api);
  const other = new TestClient(t.wsUrl);
  const { peerId: otherId } = await other.join("resume-one");
  const { joined, drop } = await joinDroppable(t.server.port, "resume-one");
  assert.match(joined.resume, TOKEN);
  assert.deepEqual(await other.next(), {
    type: "peer-joined",
    peerId: joined.peerId,
  });
  await drop();
  await peersAre(t.url, 1);
  await sendWhileAway(other, joined.peerId);
  const { back, resumed } = await resumeAt(
    t.wsUrl,
    "resume-one",
    joined,
    otherId,
  );
  assert.match(resumed.resume, TOKEN);
  assert.notEqual(resumed.resume, joined.resume, "a fresh token each time");
  // The others saw nobody leave or join.
  await assertNothingElse(other);
  // Signals flow both ways again.
  back.send({ type: "signal", to: otherId, data: candidate(9) });
  assert.deepEqual(await other.next(), {
    type: "signal",
    from: joined.peerId,
    data: candidate(9),
  });
  // The old token is spent: it joins as new.
  const again = new TestClient(t.wsUrl);
  await again.opened();
  again.send({ type: "join", session: "resume-one", resume: joined.resume });
  const fresh = await again.next();
  assert.equal(fresh.type, "joined");
  assert.notEqual(fresh.peerId, joined.peerId);
  assert.equal((await other.next()).type, "peer-joined");
  for (const client of [other, back, again]) await client.close();
});

test("resume: a join with the token of a socket still open takes its place: the old socket is closed, the id kept, nobody told", async (api) => {
  await using t = await startServer(api);
  const other = new TestClient(t.wsUrl);
  const { peerId: otherId } = await other.join("resume-live");
  const old = new TestClient(t.wsUrl);
  const joined = await old.join("resume-live");
  assert.deepEqual(await other.next(), {
    type: "peer-joined",
    peerId: joined.peerId,
  });
  // The client is back on a new connection before the broker saw the old
  // one die.
  const back = new TestClient(t.wsUrl);
  await back.opened();
  back.send({ type: "join", session: "resume-live", resume: joined.resume });
  const resumed = await back.next();
  assert.equal(resumed.type, "joined", JSON.stringify(resumed));
  assert.equal(resumed.peerId, joined.peerId);
  assert.deepEqual(resumed.peers, [otherId]);
  assert.equal((await old.closed).code, 1000);
  await peersAre(t.url, 2);
  other.send({ type: "signal", to: joined.peerId, data: candidate(1) });
  assert.deepEqual(await back.next(), {
    type: "signal",
    from: otherId,
    data: candidate(1),
  });
  await assertNothingElse(other);
  await Promise.all([other.close(), back.close()]);
});

test("resume: a malformed token is bad_message; an unknown one, or one of another session, joins as new; leave keeps no place", async (api) => {
  await using t = await startServer(api);
  const client = new TestClient(t.wsUrl);
  await client.opened();
  for (const resume of ["short", 42, "x".repeat(33), "é".repeat(32)]) {
    client.send({ type: "join", session: "resume-bad", resume });
    const refused = await client.next();
    assert.equal(refused.type, "error", JSON.stringify(resume));
    assert.equal(refused.code, "bad_message");
  }
  const { joined, drop } = await joinDroppable(t.server.port, "resume-a");
  await drop();
  await peersAre(t.url, 0);
  // Another session: a new peer there; the parked one keeps its place.
  client.send({ type: "join", session: "resume-b", resume: joined.resume });
  const elsewhere = await client.next();
  assert.equal(elsewhere.type, "joined");
  assert.notEqual(elsewhere.peerId, joined.peerId);
  const unknown = new TestClient(t.wsUrl);
  await unknown.opened();
  unknown.send({ type: "join", session: "resume-a", resume: "Z".repeat(32) });
  const fresh = await unknown.next();
  assert.equal(fresh.type, "joined");
  assert.deepEqual(fresh.peers, [joined.peerId], "the parked peer is a member");
  // A peer that leaves keeps no place: its token joins as new.
  unknown.send({ type: "leave" });
  assert.equal((await unknown.closed).code, 1000);
  const after = new TestClient(t.wsUrl);
  await after.opened();
  after.send({ type: "join", session: "resume-a", resume: fresh.resume });
  const renewed = await after.next();
  assert.notEqual(renewed.peerId, fresh.peerId);
  for (const each of [client, after]) await each.close();
});

test("resume: at most 64 signals and 256 KiB are held; past them the oldest go and the peer is told to restart ICE with their senders", async (api) => {
  await using t = await startServer(api);
  const other = new TestClient(t.wsUrl);
  const { peerId: otherId } = await other.join("resume-bounds");
  const counted = await joinDroppable(t.server.port, "resume-bounds");
  const sized = await joinDroppable(t.server.port, "resume-bounds");
  await other.next();
  await other.next();
  await counted.drop();
  await sized.drop();
  await peersAre(t.url, 1);
  for (let n = 0; n < 70; n++) {
    other.send({
      type: "signal",
      to: counted.joined.peerId,
      data: candidate(n),
    });
  }
  // Five signals of 60,000 bytes: the oldest goes past 256 KiB.
  const big = (n: number) => ({
    candidate: { candidate: `${n}${"x".repeat(59_999)}` },
  });
  for (let n = 0; n < 5; n++) {
    other.send({ type: "signal", to: sized.joined.peerId, data: big(n) });
  }
  await assertNothingElse(other);
  const resume = async (token: string) => {
    const client = new TestClient(t.wsUrl);
    await client.opened();
    client.send({ type: "join", session: "resume-bounds", resume: token });
    assert.equal((await client.next()).type, "joined");
    return client;
  };
  const first = await resume(counted.joined.resume);
  for (let n = 6; n < 70; n++) {
    assert.deepEqual((await first.next()).data, candidate(n));
  }
  assert.deepEqual(await first.next(), {
    type: "restart-ice",
    peers: [otherId],
  });
  await assertNothingElse(first);
  const second = await resume(sized.joined.resume);
  for (let n = 1; n < 5; n++) {
    assert.deepEqual((await second.next()).data, big(n));
  }
  assert.deepEqual(await second.next(), {
    type: "restart-ice",
    peers: [otherId],
  });
  await assertNothingElse(second);
  for (const client of [other, first, second]) await client.close();
});

test("resume: maxHeldBytes bounds what a broker holds for all its away peers together: past it the oldest held signal of the peer goes, and it is told", async (api) => {
  await using t = await startServer(api, {
    signaling: { maxHeldBytes: 20_000 },
  });
  const other = new TestClient(t.wsUrl);
  const { peerId: otherId } = await other.join("resume-budget");
  const one = await joinDroppable(t.server.port, "resume-budget");
  const two = await joinDroppable(t.server.port, "resume-budget");
  await other.next();
  await other.next();
  await one.drop();
  await two.drop();
  await peersAre(t.url, 1);
  const sized = (n: number) => ({
    candidate: { candidate: `${n}${"x".repeat(7_999)}` },
  });
  // 8 KB to one, then 8 KB twice to two: the third passes 20,000 bytes
  // together, and two's own oldest goes (one keeps what it holds).
  other.send({ type: "signal", to: one.joined.peerId, data: sized(1) });
  other.send({ type: "signal", to: two.joined.peerId, data: sized(2) });
  other.send({ type: "signal", to: two.joined.peerId, data: sized(3) });
  await assertNothingElse(other);
  const resume = async (token: string) => {
    const client = new TestClient(t.wsUrl);
    await client.opened();
    client.send({ type: "join", session: "resume-budget", resume: token });
    assert.equal((await client.next()).type, "joined");
    return client;
  };
  const first = await resume(one.joined.resume);
  assert.deepEqual((await first.next()).data, sized(1));
  await assertNothingElse(first);
  const second = await resume(two.joined.resume);
  assert.deepEqual((await second.next()).data, sized(3));
  assert.deepEqual(await second.next(), {
    type: "restart-ice",
    peers: [otherId],
  });
  await assertNothingElse(second);
  for (const client of [other, first, second]) await client.close();
});

test("resume: a peer drained off one broker resumes on another through Redis, keeping its id and what was sent meanwhile", async (api) => {
  // A window for broker A's drain (B's is never used: its sockets close
  // first).
  await using pair = await twoBrokers(api, {}, { drainSeconds: 1 });
  if (pair === null) return;
  const { a, b } = pair;
  const other = new TestClient(b.wsUrl);
  const { peerId: otherId } = await other.join("resume-across");
  const mover = new TestClient(a.wsUrl);
  const joined = await mover.join("resume-across");
  assert.equal((await other.next()).type, "peer-joined");
  const closing = a.server.close();
  assert.deepEqual(await mover.next(), { type: "reconnect" });
  assert.equal((await mover.closed).code, 1012);
  await sendWhileAway(other, joined.peerId);
  const { back } = await resumeAt(b.wsUrl, "resume-across", joined, otherId);
  await assertNothingElse(other);
  other.send({ type: "signal", to: joined.peerId, data: candidate(7) });
  assert.deepEqual((await back.next()).data, candidate(7));
  await closing;
  for (const client of [other, back]) await client.close();
});
