// The signaling protocol (DESIGN section 4) over real WebSockets: the same
// cases run on Deno and on the npm package under Node 22 (see _suite.ts).
import assert from "node:assert/strict";
import { sleep, startServer } from "./_servers.ts";
import { test } from "./_suite.ts";
import {
  joinAll,
  maskedTextFrame,
  parseServerFrames,
  rawHandshake,
  TestClient,
} from "./_wire.ts";

const OFFER = {
  sdp: { type: "offer", sdp: "v=0\r\no=- 1 2 IN IP4 127.0.0.1\r\n" },
};
const ANSWER = {
  sdp: { type: "answer", sdp: "v=0\r\no=- 3 4 IN IP4 127.0.0.1\r\n" },
};
const CANDIDATE = {
  candidate: {
    candidate: "candidate:1 1 udp 2122260223 127.0.0.1 50000 typ host",
    sdpMid: "0",
    sdpMLineIndex: 0,
    usernameFragment: "abcd",
  },
};

async function health(url: string) {
  return await (await fetch(`${url}/health`)).json();
}

/** Proves nothing else is queued for `client`: a bad frame's error comes next. */
async function assertNothingElse(client: TestClient): Promise<void> {
  client.send("{");
  assert.deepEqual((await client.next()).code, "bad_json");
}

test("signaling: two peers join, relay offer, answer and candidates, and leave", async (api) => {
  await using t = await startServer(api);
  const a = new TestClient(t.wsUrl);
  const joinedA = await a.join("room-1");
  assert.equal(joinedA.session, "room-1");
  assert.match(joinedA.peerId, /^[A-Za-z0-9]{16}$/);
  assert.deepEqual(joinedA.peers, []);
  const b = new TestClient(t.wsUrl);
  const joinedB = await b.join("room-1");
  assert.deepEqual(joinedB.peers, [joinedA.peerId]);
  assert.notEqual(joinedB.peerId, joinedA.peerId);
  assert.deepEqual(await a.next(), {
    type: "peer-joined",
    peerId: joinedB.peerId,
  });

  b.send({ type: "signal", to: joinedA.peerId, data: OFFER });
  assert.deepEqual(await a.next(), {
    type: "signal",
    from: joinedB.peerId,
    data: OFFER,
  });
  a.send({ type: "signal", to: joinedB.peerId, data: ANSWER });
  assert.deepEqual(await b.next(), {
    type: "signal",
    from: joinedA.peerId,
    data: ANSWER,
  });
  for (
    const data of [CANDIDATE, { candidate: null }, {
      candidate: { candidate: "" },
    }]
  ) {
    a.send({ type: "signal", to: joinedB.peerId, data });
    assert.deepEqual(await b.next(), {
      type: "signal",
      from: joinedA.peerId,
      data,
    });
  }

  b.send({ type: "leave" });
  assert.deepEqual(await a.next(), {
    type: "peer-left",
    peerId: joinedB.peerId,
  });
  assert.equal((await b.closed).code, 1000);
  await a.close();
});

test("signaling: with three peers a signal reaches its addressee only", async (api) => {
  await using t = await startServer(api);
  const { clients, ids } = await joinAll(t.wsUrl, "trio", 3);
  const [a, b, c] = clients as [TestClient, TestClient, TestClient];
  const [idA, idB, idC] = ids as [string, string, string];
  c.send({ type: "signal", to: idA, data: OFFER });
  assert.deepEqual(await a.next(), { type: "signal", from: idC, data: OFFER });
  a.send({ type: "signal", to: idC, data: ANSWER });
  assert.deepEqual(await c.next(), { type: "signal", from: idA, data: ANSWER });
  await assertNothingElse(b!);

  // `from` is the broker's to stamp: a client's claim is refused outright.
  b.send({ type: "signal", to: idA, from: idC, data: OFFER });
  assert.equal((await b.next()).code, "bad_message");
  await assertNothingElse(a!);

  await c.close();
  assert.deepEqual(await a.next(), { type: "peer-left", peerId: idC });
  assert.deepEqual(await b.next(), { type: "peer-left", peerId: idC });
  await a.close();
  assert.deepEqual(await b.next(), { type: "peer-left", peerId: idA });
  await b.close();
  assert.equal((await health(t.url)).peers, 0, idB);
});

test("signaling: chat-like or malformed frames are refused with bad_message", async (api) => {
  await using t = await startServer(api);
  const { clients, ids: [idA] } = await joinAll(t.wsUrl, "strict", 2);
  const [a, b] = clients as [TestClient, TestClient];
  const refused = [
    { type: "signal", to: idA, data: { text: "hi" } },
    { type: "signal", to: idA, data: { ...OFFER, text: "hi" } },
    {
      type: "signal",
      to: idA,
      data: { sdp: { type: "offer", sdp: "x", text: "hi" } },
    },
    { type: "signal", to: idA, data: { sdp: { type: "chat", sdp: "x" } } },
    { type: "signal", to: idA, data: { sdp: { type: "offer", sdp: 5 } } },
    {
      type: "signal",
      to: idA,
      data: { candidate: { candidate: "x", note: "hi" } },
    },
    { type: "signal", to: idA, data: { candidate: { candidate: 1 } } },
    {
      type: "signal",
      to: idA,
      data: { candidate: { candidate: "x", sdpMLineIndex: "0" } },
    },
    {
      type: "signal",
      to: idA,
      data: { candidate: { candidate: "x", sdpMid: 0 } },
    },
    { type: "signal", to: idA, data: "hi" },
    { type: "signal", to: idA },
    { type: "signal", data: OFFER },
    { type: "chat", text: "hi" },
    { type: "join", session: "x", extra: 1 },
    { type: "leave", reason: "bye" },
    ["join"],
    JSON.stringify("hello"),
  ];
  for (const frame of refused) {
    b.send(frame);
    const answer = await b.next();
    assert.equal(answer.type, "error", JSON.stringify(frame));
    assert.equal(answer.code, "bad_message", JSON.stringify(frame));
    assert.equal(typeof answer.message, "string");
  }
  b.ws.send(new Uint8Array([1, 2, 3]));
  assert.equal((await b.next()).code, "bad_message");
  await assertNothingElse(a!);
  await a.close();
  await b.close();
});

test("signaling: each protocol error code has its trigger", async (api) => {
  await using t = await startServer(api, {
    signaling: { maxPeersPerSession: 2 },
  });
  const a = new TestClient(t.wsUrl);
  await a.opened();
  a.send("{not json");
  assert.equal((await a.next()).code, "bad_json");
  a.send({ type: "signal", to: "AAAAAAAAAAAAAAAA", data: OFFER });
  assert.equal((await a.next()).code, "not_joined");
  for (const session of ["", "x".repeat(129), "has space", "é", 7]) {
    a.send({ type: "join", session });
    assert.equal((await a.next()).code, "bad_session", String(session));
  }
  const joined = await a.join("s_-" + "x".repeat(125));
  a.send({ type: "join", session: "other" });
  assert.equal((await a.next()).code, "already_joined");
  a.send({ type: "signal", to: "AAAAAAAAAAAAAAAA", data: OFFER });
  assert.equal((await a.next()).code, "unknown_peer");
  a.send({ type: "signal", to: joined.peerId, data: OFFER });
  assert.equal((await a.next()).code, "unknown_peer");

  const { clients } = await joinAll(t.wsUrl, "pair", 2);
  const [b, c] = clients as [TestClient, TestClient];
  const d = new TestClient(t.wsUrl);
  await d.opened();
  d.send({ type: "join", session: "pair" });
  assert.equal((await d.next()).code, "session_full");
  // A full session leaves the socket free to join another.
  await d.join("elsewhere");
  // Peers of one session are unknown to another.
  d.send({ type: "signal", to: joined.peerId, data: OFFER });
  assert.equal((await d.next()).code, "unknown_peer");
  for (const client of [a, b, c, d]) await client.close();
});

test("signaling: the token bucket answers rate_limited, then closes a flood with 1008", async (api) => {
  await using t = await startServer(api, {
    signaling: { rateLimitBurst: 5, rateLimitPerSecond: 1 },
  });
  const a = new TestClient(t.wsUrl);
  await a.opened();
  for (let i = 0; i < 5; i++) a.send("{");
  for (let i = 0; i < 5; i++) assert.equal((await a.next()).code, "bad_json");
  a.send("{");
  assert.equal((await a.next()).code, "rate_limited");
  // Flooding on: a further burst (5) of dropped frames closes the socket.
  for (let i = 0; i < 5; i++) a.send("{");
  const closed = await a.closed;
  assert.equal(closed.code, 1008);
  assert.equal(a.pending, 0);
});

test("signaling: a frame of maxFrameBytes passes, one byte more closes with 1009", async (api) => {
  await using t = await startServer(api, {
    signaling: { maxFrameBytes: 1024 },
  });
  const a = new TestClient(t.wsUrl);
  await a.opened();
  const frame = (size: number) => {
    const base = '{"type":"chat","pad":""}';
    return base.replace('""', `"${"é".repeat((size - base.length) / 2)}"`);
  };
  const exact = frame(1024);
  assert.equal(new TextEncoder().encode(exact).length, 1024);
  a.send(exact);
  assert.equal((await a.next()).code, "bad_message");
  a.send(frame(1026));
  assert.equal((await a.closed).code, 1009);
});

test("signaling: a joined peer's frame over the default maxFrameBytes closes it with 1009; its peers get peer-left", async (api) => {
  await using t = await startServer(api);
  const { clients, ids } = await joinAll(t.wsUrl, "big", 2);
  const [a, b] = clients as [TestClient, TestClient];
  b.send("x".repeat(api.DEFAULT_SIGNALING.maxFrameBytes + 1));
  assert.equal((await b.closed).code, 1009);
  assert.deepEqual(await a.next(), { type: "peer-left", peerId: ids[1] });
  await a.close();
});

test("signaling: a socket that never joins is closed after joinTimeoutMs", async (api) => {
  await using t = await startServer(api, { signaling: { joinTimeoutMs: 150 } });
  const idle = new TestClient(t.wsUrl);
  const joined = new TestClient(t.wsUrl);
  await joined.join("on-time");
  const closed = await idle.closed;
  assert.equal(closed.code, 1008);
  assert.equal((await health(t.url)).peers, 1);
  await joined.close();
});

test("signaling: a peer that stops answering pings is dropped and its peers told", async (api) => {
  await using t = await startServer(api, {
    signaling: { pingIntervalMs: 1000 },
  });
  const a = new TestClient(t.wsUrl);
  const joinedA = await a.join("liveness");
  const { status, conn } = await rawHandshake(t.server.port);
  assert.equal(status, 101);
  // Join, then never read again: no pong ever answers the broker's pings.
  await conn.write(maskedTextFrame('{"type":"join","session":"liveness"}'));
  const joined = await a.next();
  assert.equal(joined.type, "peer-joined");
  const left = await a.next(6000);
  assert.deepEqual(left, { type: "peer-left", peerId: joined.peerId });
  assert.equal((await health(t.url)).peers, 1, joinedA.peerId);
  await conn.close();
  await a.close();
});

test("signaling: a peer that stops reading is closed with 1013 past maxBufferedBytes; its peers get peer-left", async (api) => {
  await using t = await startServer(api, {
    signaling: {
      maxBufferedBytes: 64 * 1024,
      rateLimitBurst: 10_000,
      rateLimitPerSecond: 10_000,
    },
  });
  const { clients, ids } = await joinAll(t.wsUrl, "slow", 2);
  const [a, b] = clients as [TestClient, TestClient];
  const { status, head, conn } = await rawHandshake(t.server.port);
  try {
    assert.equal(status, 101);
    await conn.write(maskedTextFrame('{"type":"join","session":"slow"}'));
    const { peerId: slowId } = await a.next();
    assert.deepEqual(await b.next(), { type: "peer-joined", peerId: slowId });
    // The slow peer stops reading; `a` sends it offers of 60 kB until the
    // loopback's kernel buffers (a few MB) are full and the broker's own
    // buffer passes the cap. Bounded at 64 MB.
    conn.pause();
    const offer = JSON.stringify({
      type: "signal",
      to: slowId,
      data: { sdp: { type: "offer", sdp: "x".repeat(60_000) } },
    });
    for (let sent = 0; b.pending === 0 && sent < 1_000; sent++) {
      a.send(offer);
      while (a.ws.bufferedAmount > 1_000_000) await sleep(5);
      if (sent % 16 === 15) await sleep(5);
    }
    assert.deepEqual(await b.next(5_000), {
      type: "peer-left",
      peerId: slowId,
    });
    // The others are not affected: they still relay to each other.
    const answer = { sdp: { type: "answer", sdp: "v=0\r\n" } };
    a.send({ type: "signal", to: ids[1], data: answer });
    assert.deepEqual(await b.next(), {
      type: "signal",
      from: ids[0],
      data: answer,
    });
    assert.equal((await (await fetch(`${t.url}/health`)).json()).peers, 2);
    // Reading again, the slow peer finds the broker's close frame: 1013.
    conn.resume();
    const frames = () => parseServerFrames(conn.bytes().subarray(head.length));
    await conn.readUntil(() => frames().some((f) => f.opcode === 0x8), 10_000);
    const close = frames().find((f) => f.opcode === 0x8);
    assert.ok(close, "no close frame arrived");
    assert.equal((close.payload[0]! << 8) | close.payload[1]!, 1013);
  } finally {
    await conn.close();
  }
  await a.close();
  await b.close();
});

test("signaling: /health reports live sessions, peers and sorted origins, then returns to 0", async (api) => {
  await using t = await startServer(api);
  const clients = [
    new TestClient(t.wsUrl, "https://b.example"),
    new TestClient(t.wsUrl, "null"),
    new TestClient(t.wsUrl, "https://a.example"),
    new TestClient(t.wsUrl, "null"),
  ];
  await clients[0]!.join("one");
  await clients[1]!.join("one");
  await clients[2]!.join("two");
  await clients[3]!.opened();
  const live = await health(t.url);
  assert.equal(live.sessions, 2);
  assert.equal(live.peers, 3);
  assert.deepEqual(live.origins, [
    "https://a.example",
    "https://b.example",
    "null",
  ]);
  for (const client of clients) await client.close();
  await new Promise((resolve) => setTimeout(resolve, 20));
  const after = await health(t.url);
  assert.equal(after.sessions, 0);
  assert.equal(after.peers, 0);
  assert.deepEqual(after.origins, []);
});

test("signaling: allowedOrigins refuses others with 403 before the upgrade; null may be allowed", async (api) => {
  await using t = await startServer(api, {
    signaling: { allowedOrigins: ["null"] },
  });
  const refused = await rawHandshake(t.server.port, {
    Origin: "https://evil.example",
  });
  await refused.conn.close();
  assert.equal(refused.status, 403);
  assert.match(refused.head, /application\/problem\+json/);
  const anonymous = await rawHandshake(t.server.port);
  await anonymous.conn.close();
  assert.equal(anonymous.status, 403);
  const pod = new TestClient(t.wsUrl, "null");
  await pod.join("sandboxed");
  await pod.close();
});

test("signaling: past maxSockets the upgrade is refused with 503", async (api) => {
  await using t = await startServer(api, { signaling: { maxSockets: 2 } });
  const a = new TestClient(t.wsUrl);
  const b = new TestClient(t.wsUrl);
  await a.opened();
  await b.opened();
  const third = await rawHandshake(t.server.port);
  await third.conn.close();
  assert.equal(third.status, 503);
  await a.close();
  await new Promise((resolve) => setTimeout(resolve, 20));
  const fourth = new TestClient(t.wsUrl);
  await fourth.join("room");
  await fourth.close();
  await b.close();
});

test("signaling: close() with no drain window closes open sockets with 1012 at once", async (api) => {
  const t = await startServer(api, { drainSeconds: 0 });
  const { clients } = await joinAll(t.wsUrl, "shutdown", 2);
  const idle = new TestClient(t.wsUrl);
  await idle.opened();
  await t.server.close();
  for (const client of [...clients, idle]) {
    assert.deepEqual(await client.next(), { type: "reconnect" });
    assert.equal((await client.closed).code, 1012);
    // The broker leaves, not the peers: nobody is told of a peer-left.
    assert.equal(client.pending, 0);
  }
  // A second close is harmless.
  await t.server.close();
  await assert.rejects(fetch(`${t.url}/health`), "the server still answers");
});

test("signaling: 300 join/leave cycles over real sockets leave /health at zero", async (api) => {
  await using t = await startServer(api);
  const stay = new TestClient(t.wsUrl, "https://stay.example");
  await stay.join("churn");
  for (let i = 0; i < 300; i++) {
    const client = new TestClient(t.wsUrl, `https://c${i % 7}.example`);
    await client.join(i % 2 ? "churn" : `solo-${i}`);
    if (i % 2) assert.equal((await stay.next()).type, "peer-joined");
    await client.close();
    if (i % 2) assert.equal((await stay.next()).type, "peer-left");
  }
  await stay.close();
  await new Promise((resolve) => setTimeout(resolve, 20));
  const after = await health(t.url);
  assert.deepEqual([after.sessions, after.peers, after.origins], [0, 0, []]);
});
