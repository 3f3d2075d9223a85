// Signaling for apps written for other libraries (DESIGN section 9):
// `/ice`, `/y-webrtc` and `/peerjs` over real sockets, every refusal and
// bound, on every adapter. Runs on Deno and on the npm package under
// Node 22 (see _suite.ts).
import assert from "node:assert/strict";
import { assertHeaders } from "./_pods.ts";
import { sleep, startServer, type TestServer } from "./_servers.ts";
import { test } from "./_suite.ts";
import { within } from "../support/wait.ts";
import {
  expectedTurnCredential,
  type Frame,
  rawRequest,
  TestClient,
} from "./_wire.ts";
import { type RawSocket, rawSocket } from "./_compat_support.ts";
import { twoBrokers } from "./scaleout.ts";
import { labelOf } from "./pod_domain.ts";

const OFFER = { type: "offer", sdp: "v=0\r\no=- 1 2 IN IP4 127.0.0.1\r\n" };
const CANDIDATE = {
  type: "candidate",
  candidate: {
    candidate: "candidate:1 1 udp 2122260223 127.0.0.1 50000 typ host",
    sdpMLineIndex: 0,
    sdpMid: "0",
  },
};

/** A `/y-webrtc` client, open. */
async function yClient(t: TestServer, origin?: string): Promise<TestClient> {
  const client = new TestClient(
    `${t.url.replace("http", "ws")}/y-webrtc`,
    origin,
  );
  await client.opened();
  return client;
}

/**
 * Sends a ping and returns every frame that came before its pong: the
 * broker answers frames in order, so what `client` sent before was handled.
 */
async function settle(client: TestClient): Promise<Frame[]> {
  client.send({ type: "ping" });
  const frames: Frame[] = [];
  for (;;) {
    const frame = await client.next();
    if (frame.type === "pong") return frames;
    frames.push(frame);
  }
}

async function subscribe(client: TestClient, ...topics: string[]) {
  client.send({ type: "subscribe", topics });
  assert.deepEqual(await settle(client), []);
}

function publish(client: TestClient, topic: string, data: unknown) {
  client.send({ type: "publish", topic, data });
}

async function health(t: TestServer): Promise<Frame> {
  return await (await fetch(`${t.url}/health`)).json();
}

/** Waits until a dialect's `/health` figures are `expected` (closes land late). */
async function figuresBecome(
  t: TestServer,
  dialect: string,
  expected: Record<string, number>,
): Promise<void> {
  const end = Date.now() + 3_000;
  for (;;) {
    const figures = (await health(t)).compat?.[dialect];
    if (JSON.stringify(figures) === JSON.stringify(expected)) return;
    if (Date.now() > end) assert.deepEqual(figures, expected, dialect);
    await sleep(20);
  }
}

/** Closes every client and waits for their close events. */
async function closeAll(...clients: TestClient[]): Promise<void> {
  await Promise.all(clients.map((client) => client.close()));
}

/** A PeerJS frame as the broker relays it: `src` stamped by the broker. */
function pjFrame(type: string, src: string, dst: string, payload: unknown) {
  return { type, src, dst, payload };
}

test("compat: /ice answers the ICE servers with fresh TURN credentials, no-store, CORS *", async (api) => {
  const secret = "turn-secret-" + crypto.randomUUID();
  await using t = await startServer(api, {
    iceServers: [{ urls: "stun:stun.example:3478" }],
    turn: { urls: ["turn:127.0.0.1:3478"], secret, ttlSeconds: 120 },
  });
  const before = Math.floor(Date.now() / 1000);
  const first = await fetch(`${t.url}/ice`, {
    headers: { Origin: "null" },
  });
  assert.equal(first.status, 200);
  assert.equal(first.headers.get("Cache-Control"), "no-store");
  assert.equal(first.headers.get("Access-Control-Allow-Origin"), "*");
  assert.equal(first.headers.get("Content-Type"), "application/json");
  const { iceServers } = await first.json();
  assert.deepEqual(iceServers[0], { urls: "stun:stun.example:3478" });
  const turn = iceServers[1];
  assert.deepEqual(turn.urls, ["turn:127.0.0.1:3478"]);
  const [expiry, user] = turn.username.split(":");
  assert.ok(Number(expiry) >= before + 120 && Number(expiry) <= before + 122);
  assert.match(user, /^[A-Za-z0-9]{16}$/);
  assert.equal(
    turn.credential,
    await expectedTurnCredential(secret, turn.username),
  );
  const second = await (await fetch(`${t.url}/ice`)).json();
  assert.notEqual(second.iceServers[1].username, turn.username);
  assert.equal(JSON.stringify(second).includes(secret), false);
  const preflight = await fetch(`${t.url}/ice`, { method: "OPTIONS" });
  await preflight.body?.cancel();
  assert.equal(preflight.status, 204);
  assert.equal(preflight.headers.get("Access-Control-Allow-Origin"), "*");
  const post = await fetch(`${t.url}/ice`, { method: "POST" });
  await post.body?.cancel();
  assert.equal(post.status, 405);
});

/** `GET /ice` with these headers; the answer's status and problem code. */
async function iceAnswer(
  t: TestServer,
  headers: Record<string, string> = {},
): Promise<{ status: number; code?: string; retryAfter: string | null }> {
  const response = await fetch(`${t.url}/ice`, { headers });
  const body = await response.json();
  return {
    status: response.status,
    ...(response.ok ? {} : { code: body.code }),
    retryAfter: response.headers.get("Retry-After"),
  };
}

test("compat: /ice admits the origins the sockets admit (403 origin_not_allowed otherwise)", async (api) => {
  await using t = await startServer(api, {
    signaling: { allowedOrigins: ["https://ok.example", "null"] },
  });
  for (const origin of ["https://evil.example", "https://ok.example.evil"]) {
    assert.deepEqual(await iceAnswer(t, { Origin: origin }), {
      status: 403,
      code: "origin_not_allowed",
      retryAfter: null,
    }, origin);
  }
  // No Origin is refused as a socket without one is.
  assert.equal((await iceAnswer(t)).status, 403);
  for (const origin of ["https://ok.example", "null"]) {
    assert.equal((await iceAnswer(t, { Origin: origin })).status, 200);
  }
  // The same rule on a pod's host.
  await using pods = await startServer(api, {
    podDomain: "localhost",
    signaling: { allowedOrigins: ["https://ok.example"] },
  });
  const host = `${labelOf("podAAAAAAAAA")}.localhost:${pods.server.port}`;
  for (
    const [origin, status] of [["https://evil.example", 403], [
      "https://ok.example",
      200,
    ]] as const
  ) {
    const answer = await rawRequest(
      pods.server.port,
      `GET /ice HTTP/1.1\r\nHost: ${host}\r\nOrigin: ${origin}\r\nConnection: close\r\n\r\n`,
    );
    assert.equal(answer.status, status, origin);
  }
});

test("compat: /ice answers a client address at most iceRequestsPerMinute, then 429 rate_limited", async (api) => {
  await using t = await startServer(api, { iceRequestsPerMinute: 3 });
  for (let i = 0; i < 3; i++) assert.equal((await iceAnswer(t)).status, 200);
  assert.deepEqual(await iceAnswer(t, { Origin: "null" }), {
    status: 429,
    code: "rate_limited",
    retryAfter: "20",
  });
  // Behind a trusted proxy, the address is the last X-Forwarded-For hop.
  await using proxied = await startServer(api, {
    iceRequestsPerMinute: 1,
    trustProxy: true,
  });
  const from = (address: string) => ({
    "X-Forwarded-For": `203.0.113.9, ${address}`,
  });
  assert.equal((await iceAnswer(proxied, from("192.0.2.1"))).status, 200);
  assert.equal((await iceAnswer(proxied, from("192.0.2.1"))).status, 429);
  assert.equal((await iceAnswer(proxied, from("192.0.2.2"))).status, 200);
});

test("compat: y-webrtc subscribe, publish (clients counted, sender included) and ping", async (api) => {
  await using t = await startServer(api);
  const [a, b] = [await yClient(t), await yClient(t)];
  await subscribe(a, "room");
  await subscribe(b, "room", "other");
  publish(a, "room", { type: "announce", from: "peer-a" });
  const announce = {
    type: "publish",
    topic: "room",
    data: { type: "announce", from: "peer-a" },
    clients: 2,
  };
  assert.deepEqual(await a.next(), announce);
  assert.deepEqual(await b.next(), announce);
  // A topic only its subscribers hear.
  publish(b, "other", { type: "announce", from: "peer-b" });
  assert.equal((await b.next()).topic, "other");
  assert.deepEqual(await settle(a), []);
  const figures = (await health(t)).compat["y-webrtc"];
  assert.deepEqual(figures, { sockets: 2, topics: 2 });
  await closeAll(a, b);
});

test("compat: y-webrtc relays a simple-peer signal to its addressee only", async (api) => {
  await using t = await startServer(api);
  const [a, b, c] = [await yClient(t), await yClient(t), await yClient(t)];
  for (const client of [a, b, c]) await subscribe(client, "room");
  for (const [client, from] of [[a, "peer-a"], [c, "peer-c"]] as const) {
    publish(client, "room", { type: "announce", from });
    for (const other of [a, b, c]) {
      assert.equal((await other.next()).type, "publish");
    }
  }
  for (
    const signal of [
      OFFER,
      { type: "answer", sdp: "v=0\r\n" },
      CANDIDATE,
      { type: "renegotiate", renegotiate: true },
      {
        type: "transceiverRequest",
        transceiverRequest: { kind: "audio", init: { direction: "recvonly" } },
      },
    ]
  ) {
    const data = {
      type: "signal",
      from: "peer-a",
      to: "peer-c",
      token: 1.25,
      signal,
    };
    publish(a, "room", data);
    assert.deepEqual(await c.next(), {
      type: "publish",
      topic: "room",
      data,
      clients: 3,
    });
  }
  // Neither the sender nor the third socket hears a signal for another.
  assert.deepEqual(await settle(a), []);
  assert.deepEqual(await settle(b), []);
  await closeAll(a, b, c);
});

test("compat: y-webrtc refuses a forged from, and another socket's from", async (api) => {
  await using t = await startServer(api);
  const [a, b] = [await yClient(t), await yClient(t)];
  await subscribe(a, "room", "second");
  await subscribe(b, "room");
  publish(a, "room", { type: "announce", from: "peer-a" });
  await a.next();
  await b.next();
  // b poses as a: refused, nothing relayed.
  publish(b, "room", { type: "announce", from: "peer-a" });
  publish(b, "room", {
    type: "signal",
    from: "peer-a",
    to: "peer-a",
    signal: OFFER,
  });
  const refused = await settle(b);
  assert.deepEqual(refused.map((f) => f.code), ["forged_from", "forged_from"]);
  assert.equal(refused[0]!.type, "error");
  // a's from in the topic is fixed by its first publish.
  publish(a, "room", { type: "announce", from: "peer-z" });
  assert.deepEqual((await settle(a)).map((f) => f.code), ["forged_from"]);
  // Another topic is another binding.
  publish(a, "second", { type: "announce", from: "peer-z" });
  assert.equal((await a.next()).topic, "second");
  // Once a leaves the topic, its from is free.
  a.send({ type: "unsubscribe", topics: ["room"] });
  await settle(a);
  publish(b, "room", { type: "announce", from: "peer-a" });
  assert.equal((await b.next()).data.from, "peer-a");
  await closeAll(a, b);
});

test("compat: y-webrtc checks data: announce and signal only, password data base64 of at most 16 KiB", async (api) => {
  await using t = await startServer(api);
  const [a, b] = [await yClient(t), await yClient(t)];
  await subscribe(a, "room");
  await subscribe(b, "room");
  const bad: [unknown, string][] = [
    [{ type: "chat", from: "x", text: "hi" }, "bad_message"],
    [{ type: "announce", from: "x", text: "hi" }, "bad_message"],
    [{ type: "announce" }, "bad_message"],
    [
      { type: "signal", from: "x", to: "y", signal: { type: "offer", sdp: 1 } },
      "bad_message",
    ],
    [{
      type: "signal",
      from: "x",
      to: "y",
      signal: { type: "chat", text: "hi" },
    }, "bad_message"],
    [{
      type: "signal",
      from: "x",
      to: "y",
      signal: { ...CANDIDATE, text: "hi" },
    }, "bad_message"],
    [
      { type: "signal", from: "x", to: "y", token: "t", signal: OFFER },
      "bad_message",
    ],
    ["not base64!", "bad_message"],
    [5, "bad_message"],
    ["A".repeat(16_388), "data_too_large"],
  ];
  for (const [data, code] of bad) {
    publish(a, "room", data);
    assert.deepEqual(
      (await settle(a)).map((f) => f.code),
      [code],
      JSON.stringify(data).slice(0, 80),
    );
  }
  a.send("{");
  a.send({ type: "publish", topic: "room", data: "AAAA", extra: 1 });
  a.send({ type: "hello" });
  publish(a, "elsewhere", { type: "announce", from: "x" });
  assert.deepEqual((await settle(a)).map((f) => f.code), [
    "bad_json",
    "bad_message",
    "bad_message",
    "not_subscribed",
  ]);
  // Nothing of it reached b.
  assert.deepEqual(await settle(b), []);
  // Password mode: one base64 string of exactly 16 KiB passes.
  const sealed = "A".repeat(16_384);
  publish(a, "room", sealed);
  assert.equal((await b.next()).data, sealed);
  await closeAll(a, b);
});

test("compat: y-webrtc holds a socket to 16 topics and a topic to maxPeersPerSession", async (api) => {
  await using t = await startServer(api, {
    signaling: { maxPeersPerSession: 2 },
  });
  const a = await yClient(t);
  const topics = Array.from({ length: 16 }, (_, i) => `t${i}`);
  await subscribe(a, ...topics);
  a.send({ type: "subscribe", topics: ["t16"] });
  assert.deepEqual((await settle(a)).map((f) => f.code), ["too_many_topics"]);
  a.send({ type: "subscribe", topics: [...topics, "t16"] });
  assert.deepEqual((await settle(a)).map((f) => f.code), ["too_many_topics"]);
  const [b, c] = [await yClient(t), await yClient(t)];
  await subscribe(b, "t0");
  c.send({ type: "subscribe", topics: ["t0"] });
  assert.deepEqual((await settle(c)).map((f) => f.code), ["topic_full"]);
  publish(c, "t0", { type: "announce", from: "c" });
  assert.deepEqual((await settle(c)).map((f) => f.code), ["not_subscribed"]);
  // A place comes free when a subscriber leaves.
  b.send({ type: "unsubscribe", topics: ["t0"] });
  await settle(b);
  await subscribe(c, "t0");
  await closeAll(a, b, c);
});

test("compat: a y-webrtc publish costs a token for each socket it reaches", async (api) => {
  await using t = await startServer(api, {
    signaling: { rateLimitBurst: 10, rateLimitPerSecond: 1 },
  });
  const clients = [];
  for (let i = 0; i < 5; i++) {
    const client = await yClient(t);
    await subscribe(client, "room");
    clients.push(client);
  }
  const [sender, ...others] = clients as [TestClient, ...TestClient[]];
  // Each announce reaches 5 sockets: the bucket of 10 (less the subscribe
  // and the settling ping) holds one, not ten.
  for (let i = 0; i < 3; i++) {
    publish(sender, "room", { type: "announce", from: "flood" });
  }
  await sleep(200);
  const heard = [];
  while (others[0]!.pending > 0) heard.push(await others[0]!.next());
  assert.equal(heard.length, 1);
  const own = [];
  while (sender.pending > 0) own.push(await sender.next());
  assert.deepEqual(own.map((f) => f.type === "error" ? f.code : f.type), [
    "publish",
    "rate_limited",
  ]);
  await closeAll(...clients);
});

test("compat: y-webrtc forgets a topic with its last subscriber, and a socket that never subscribes", async (api) => {
  await using t = await startServer(api, { signaling: { joinTimeoutMs: 300 } });
  const [a, b] = [await yClient(t), await yClient(t)];
  await subscribe(a, "one", "two");
  await subscribe(b, "two");
  assert.deepEqual((await health(t)).compat["y-webrtc"], {
    sockets: 2,
    topics: 2,
  });
  a.send({ type: "unsubscribe", topics: ["one", "two", "never"] });
  await settle(a);
  assert.deepEqual((await health(t)).compat["y-webrtc"], {
    sockets: 2,
    topics: 1,
  });
  await b.close();
  await figuresBecome(t, "y-webrtc", { sockets: 1, topics: 0 });
  // a subscribed once: its deadline is over. A new socket has 300 ms.
  const idle = await yClient(t);
  assert.equal((await idle.closed).code, 1008);
  assert.equal(a.ws.readyState, WebSocket.OPEN);
  await a.close();
  await figuresBecome(t, "y-webrtc", { sockets: 0, topics: 0 });
});

/** Subscribes a raw socket to `topics`; resolves once the broker did. */
async function rawSubscribe(socket: RawSocket, ...topics: string[]) {
  socket.send({ type: "subscribe", topics });
  socket.send({ type: "ping" });
  assert.deepEqual(await socket.next(), { type: "pong" });
}

test("compat: topics live in a namespace per origin, a pod's on its host its own", async (api) => {
  await using t = await startServer(api, { podDomain: "localhost" });
  const [one, two, three] = [
    await yClient(t, "https://one.example"),
    await yClient(t, "https://two.example"),
    await yClient(t, "https://one.example"),
  ];
  for (const client of [one, two, three]) await subscribe(client, "room");
  publish(one, "room", { type: "announce", from: "x" });
  assert.equal((await three.next()).data.from, "x");
  assert.deepEqual(await settle(two), []);
  // Two pods on their hosts: each pod's topics are its own.
  const port = t.server.port;
  const hostA = `${labelOf("podAAAAAAAAA")}.localhost`;
  const hostB = `${labelOf("podBBBBBBBBB")}.localhost`;
  const [podA, podB, podA2] = await Promise.all([
    rawSocket(port, "/y-webrtc", hostA, `http://${hostA}:${port}`),
    rawSocket(port, "/y-webrtc", hostB, `http://${hostB}:${port}`),
    rawSocket(port, "/y-webrtc", hostA, `http://${hostA}:${port}`),
  ]);
  for (const pod of [podA, podB, podA2]) await rawSubscribe(pod, "room");
  podA.send({
    type: "publish",
    topic: "room",
    data: { type: "announce", from: "p" },
  });
  assert.equal((await podA2.next()).data.from, "p");
  podB.send({ type: "ping" });
  assert.deepEqual(await podB.next(), { type: "pong" });
  assert.deepEqual((await health(t)).compat["y-webrtc"].topics, 4);
  for (const pod of [podA, podB, podA2]) await pod.close();
  await closeAll(one, two, three);
});

test("compat: a page of another origin on a pod's host gets its own origin's rooms and ids, never the pod's", async (api) => {
  await using t = await startServer(api, { podDomain: "localhost" });
  const port = t.server.port;
  const host = `${labelOf("podAAAAAAAAA")}.localhost`;
  const own = `http://${host}:${port}`;
  const evil = "https://evil.example";
  // y-webrtc: the pod's room is not the other site's, on the pod's host
  // or anywhere; the other site's room on the pod's host is its own.
  const pod = await rawSocket(port, "/y-webrtc", host, own);
  const intruder = await rawSocket(port, "/y-webrtc", host, evil);
  const evilHome = await yClient(t, evil);
  await rawSubscribe(pod, "room");
  await rawSubscribe(intruder, "room");
  await subscribe(evilHome, "room");
  pod.send({
    type: "publish",
    topic: "room",
    data: { type: "announce", from: "pod-peer" },
  });
  assert.equal((await pod.next()).clients, 1);
  intruder.send({
    type: "publish",
    topic: "room",
    data: { type: "announce", from: "evil-peer" },
  });
  const heard = await intruder.next();
  assert.deepEqual([heard.data.from, heard.clients], ["evil-peer", 2]);
  assert.equal((await evilHome.next()).data.from, "evil-peer");
  // Nothing of the other site reached the pod, nothing of the pod the site.
  pod.send({ type: "ping" });
  assert.deepEqual(await pod.next(), { type: "pong" });
  assert.deepEqual(await settle(evilHome), []);
  for (const socket of [pod, intruder]) await socket.close();
  await evilHome.close();
  // PeerJS: an id taken first by another site on the pod's host stays the
  // pod's to open.
  const query = (token: string) =>
    `/peerjs?key=peerjs&id=host-1&token=${token}`;
  const squatter = await rawSocket(port, query("t-evil"), host, evil);
  assert.deepEqual(await squatter.next(), { type: "OPEN" });
  const owner = await rawSocket(port, query("t-pod"), host, own);
  assert.deepEqual(await owner.next(), { type: "OPEN" });
  assert.deepEqual((await health(t)).compat.peerjs, { sockets: 2, ids: 2 });
  for (const socket of [squatter, owner]) await socket.close();
});

test("compat: --compat none (or a list without a dialect) answers 404 there, /ice too; allowedOrigins gates the dialects", async (api) => {
  {
    await using t = await startServer(api, { compat: [] });
    for (const path of ["/y-webrtc", "/peerjs", "/peerjs/id", "/ice"]) {
      const plain = await fetch(`${t.url}${path}`);
      await plain.body?.cancel();
      assert.equal(plain.status, 404, path);
      const { status, close } = await rawSocket(t.server.port, path);
      assert.equal(status, 404, `${path} upgrade`);
      await close();
    }
    assert.equal((await health(t)).compat, undefined);
  }
  {
    await using t = await startServer(api, {
      signaling: { allowedOrigins: ["https://ok.example"] },
    });
    const refused = await rawSocket(
      t.server.port,
      "/y-webrtc",
      "127.0.0.1",
      "https://evil.example",
    );
    assert.equal(refused.status, 403);
    await refused.close();
    const allowed = await yClient(t, "https://ok.example");
    await subscribe(allowed, "room");
    await allowed.close();
    const plain = await fetch(`${t.url}/y-webrtc`);
    assert.equal(plain.status, 426);
    assert.equal(plain.headers.get("Upgrade"), "websocket");
    assert.equal((await plain.json()).code, "upgrade_required");
  }
});

test("compat: the metrics count dialect sockets, frames relayed and frames refused by code", async (api) => {
  await using t = await startServer(api, { metrics: { port: 0 } });
  const scrape = async () =>
    await (await fetch(`http://127.0.0.1:${t.server.metricsPort}/metrics`))
      .text();
  const [a, b] = [await yClient(t), await yClient(t)];
  await subscribe(a, "room");
  await subscribe(b, "room");
  publish(a, "room", { type: "announce", from: "a" });
  await b.next();
  await a.next();
  publish(b, "room", { type: "announce", from: "a" });
  await settle(b);
  const text = await scrape();
  assert.match(text, /^pod_broker_compat_sockets\{dialect="y-webrtc"\} 2$/m);
  assert.match(
    text,
    /^pod_broker_compat_frames_relayed_total\{dialect="y-webrtc"\} 2$/m,
  );
  assert.match(
    text,
    /^pod_broker_compat_frames_refused_total\{dialect="y-webrtc",code="forged_from"\} 1$/m,
  );
  assert.match(
    text,
    /^pod_broker_http_requests_total\{route="\/y-webrtc",method="GET",status="101"\} 2$/m,
  );
  await closeAll(a, b);
});

// --- PeerJS -----------------------------------------------------------

/** A `/peerjs` client with `id` and `token`, open; its OPEN (or refusal) queued. */
async function pjClient(
  t: TestServer,
  id: string,
  token = `token-${id}`,
  options: { key?: string; origin?: string | undefined } = {},
): Promise<TestClient> {
  const query = new URLSearchParams({
    key: options.key ?? "peerjs",
    id,
    token,
    version: "1.5.5",
  });
  const client = new TestClient(
    `${t.url.replace("http", "ws")}/peerjs?${query}`,
    options.origin,
  );
  await client.opened();
  return client;
}

/** A `/peerjs` client whose OPEN came. */
async function pjOpen(
  t: TestServer,
  id: string,
  token?: string,
  origin?: string,
): Promise<TestClient> {
  const client = await pjClient(t, id, token, { origin });
  const opened = await client.next().catch((error) => {
    throw new Error(`${id} did not open: ${error.message}`);
  });
  assert.deepEqual(opened, { type: "OPEN" });
  return client;
}

const PJ_OFFER = {
  sdp: { type: "offer", sdp: "v=0\r\no=- 1 2 IN IP4 127.0.0.1\r\n" },
  type: "data",
  connectionId: "dc_abc123",
  label: "dc_abc123",
  reliable: true,
  serialization: "binary",
  metadata: { name: "alice" },
};
const PJ_ANSWER = {
  sdp: { type: "answer", sdp: "v=0\r\n" },
  type: "data",
  connectionId: "dc_abc123",
};
const PJ_CANDIDATE = {
  candidate: { ...CANDIDATE.candidate, usernameFragment: "ufrag" },
  type: "data",
  connectionId: "dc_abc123",
};

/** Expects no frame on `client` for `ms`. */
async function silent(client: TestClient, ms = 300): Promise<void> {
  await sleep(ms);
  assert.equal(client.pending, 0, "no frame expected");
}

test("compat: /peerjs/id gives a fresh id as text/plain, nosniff, CORS *; /peerjs/peers is off", async (api) => {
  await using t = await startServer(api);
  const ids = new Set<string>();
  for (let i = 0; i < 3; i++) {
    const response = await fetch(`${t.url}/peerjs/id?ts=1&version=1.5.5`, {
      headers: { Origin: "null" },
    });
    assert.equal(response.status, 200);
    assertHeaders(response, {
      "Content-Type": "text/plain; charset=utf-8",
      "X-Content-Type-Options": "nosniff",
      "Access-Control-Allow-Origin": "*",
      "Cache-Control": "no-store",
    });
    const id = await response.text();
    assert.match(id, /^[0-9a-f]{8}(-[0-9a-f]{4}){3}-[0-9a-f]{12}$/);
    ids.add(id);
  }
  assert.equal(ids.size, 3);
  const peers = await fetch(`${t.url}/peerjs/peers`);
  await peers.body?.cancel();
  assert.equal(peers.status, 404);
  // A made id opens like a chosen one.
  const client = await pjOpen(t, [...ids][0]!);
  await client.close();
});

test("compat: PeerJS peers exchange OFFER, ANSWER and CANDIDATE with src stamped by the broker", async (api) => {
  await using t = await startServer(api);
  const [alice, bob] = [await pjOpen(t, "alice"), await pjOpen(t, "bob")];
  alice.send({ type: "HEARTBEAT" });
  alice.send({ type: "OFFER", dst: "bob", payload: PJ_OFFER });
  assert.deepEqual(
    await bob.next(),
    pjFrame("OFFER", "alice", "bob", PJ_OFFER),
  );
  bob.send({ type: "ANSWER", dst: "alice", payload: PJ_ANSWER });
  bob.send({ type: "CANDIDATE", dst: "alice", payload: PJ_CANDIDATE });
  assert.deepEqual(
    await alice.next(),
    pjFrame("ANSWER", "bob", "alice", PJ_ANSWER),
  );
  assert.equal((await alice.next()).src, "bob");
  // A client's own src is refused outright, and nothing reaches bob.
  alice.send({ type: "OFFER", src: "carol", dst: "bob", payload: PJ_OFFER });
  const refused = await alice.next();
  assert.equal(refused.type, "ERROR");
  assert.equal(refused.payload.code, "bad_message");
  await silent(bob);
  await closeAll(alice, bob);
});

test("compat: PeerJS checks payloads: its keys only, metadata of at most 1 KiB, a known serialization", async (api) => {
  await using t = await startServer(api);
  const [alice, bob] = [await pjOpen(t, "alice"), await pjOpen(t, "bob")];
  const cases: [unknown, string][] = [
    [{ ...PJ_OFFER, text: "hi" }, "bad_message"],
    [{ ...PJ_OFFER, sdp: { type: "answer", sdp: "x" } }, "bad_message"],
    [{ ...PJ_OFFER, type: "chat" }, "bad_message"],
    [{ ...PJ_OFFER, connectionId: "dc 1" }, "bad_message"],
    [
      { ...PJ_OFFER, metadata: { note: "x".repeat(1_100) } },
      "metadata_too_large",
    ],
    [{ ...PJ_OFFER, serialization: "evil" }, "bad_serialization"],
    [{ ...PJ_OFFER, serialization: "__proto__" }, "bad_serialization"],
    [{ ...PJ_OFFER, serialization: undefined }, "bad_serialization"],
    [{ ...PJ_OFFER, type: "media" }, "bad_message"],
  ];
  for (const [payload, code] of cases) {
    alice.send({ type: "OFFER", dst: "bob", payload });
    const refused = await alice.next();
    assert.equal(refused.type, "ERROR", JSON.stringify(payload).slice(0, 60));
    assert.equal(
      refused.payload.code,
      code,
      JSON.stringify(payload).slice(0, 60),
    );
    assert.equal(typeof refused.payload.msg, "string");
  }
  alice.send({
    type: "ANSWER",
    dst: "bob",
    payload: { ...PJ_ANSWER, label: "x" },
  });
  alice.send({
    type: "CANDIDATE",
    dst: "bob",
    payload: { ...PJ_CANDIDATE, candidate: { candidate: 1 } },
  });
  alice.send({ type: "EXPIRE", dst: "bob" });
  alice.send("{");
  assert.deepEqual(
    [
      await alice.next(),
      await alice.next(),
      await alice.next(),
      await alice.next(),
    ]
      .map((f) => f.payload.code),
    ["bad_message", "bad_message", "bad_message", "bad_json"],
  );
  await silent(bob);
  // Metadata of exactly 1 KiB of JSON, every serialization PeerJS knows,
  // and a media offer pass.
  const metadata = "m".repeat(1_022); // with its quotes: 1,024 bytes
  for (
    const serialization of [
      "raw",
      "json",
      "binary",
      "binary-utf8",
      "default",
      "MsgPack",
    ]
  ) {
    alice.send({
      type: "OFFER",
      dst: "bob",
      payload: { ...PJ_OFFER, serialization, metadata },
    });
    assert.equal((await bob.next()).payload.serialization, serialization);
  }
  const media = {
    sdp: PJ_OFFER.sdp,
    type: "media",
    connectionId: "mc_1",
    metadata: null,
  };
  alice.send({ type: "OFFER", dst: "bob", payload: media });
  assert.deepEqual((await bob.next()).payload, media);
  await closeAll(alice, bob);
});

test("compat: a PeerJS id is its token's: ID-TAKEN for another, the same token takes it back", async (api) => {
  await using t = await startServer(api);
  const first = await pjOpen(t, "alice", "secret-1");
  const thief = await pjClient(t, "alice", "other");
  assert.deepEqual(await thief.next(), {
    type: "ID-TAKEN",
    payload: { msg: "ID is taken" },
  });
  assert.equal((await thief.closed).code, 1008);
  // The same token (a reconnect whose old socket is not yet gone) takes
  // the id over.
  const second = await pjOpen(t, "alice", "secret-1");
  assert.equal((await first.closed).code, 1000);
  const bob = await pjOpen(t, "bob");
  bob.send({ type: "OFFER", dst: "alice", payload: PJ_OFFER });
  assert.equal((await second.next()).src, "bob");
  // Closed, the id stays the token's for a while: a reconnect keeps it.
  await second.close();
  const thief2 = await pjClient(t, "alice", "other");
  assert.equal((await thief2.next()).type, "ID-TAKEN");
  await thief2.closed;
  const third = await pjOpen(t, "alice", "secret-1");
  // Its contact was not told it left.
  await silent(bob, 200);
  await closeAll(third, bob);
});

test("compat: PeerJS refuses a bad key, a bad id and a missing token", async (api) => {
  await using t = await startServer(api);
  for (
    const [id, token, key, code] of [
      ["alice", "t", "other", "invalid_key"],
      ["-alice", "t", "peerjs", "invalid_id"],
      ["a".repeat(65), "t", "peerjs", "invalid_id"],
      ["alice", "t".repeat(65), "peerjs", "invalid_id"],
    ]
  ) {
    const client = await pjClient(t, id!, token!, { key: key! });
    const refused = await client.next();
    assert.equal(refused.type, "ERROR");
    assert.equal(refused.payload.code, code);
    assert.equal((await client.closed).code, 1008);
  }
  const bare = new TestClient(
    `${t.url.replace("http", "ws")}/peerjs?key=peerjs&id=x`,
  );
  assert.equal((await bare.next()).payload.code, "invalid_id");
  await bare.closed;
});

test(
  "compat: PeerJS holds messages to an absent id 5 s: delivered when it opens, else EXPIRE",
  async (api) => {
    await using t = await startServer(api);
    const alice = await pjOpen(t, "alice");
    alice.send({ type: "OFFER", dst: "late", payload: PJ_OFFER });
    alice.send({ type: "CANDIDATE", dst: "late", payload: PJ_CANDIDATE });
    alice.send({ type: "OFFER", dst: "never", payload: PJ_OFFER });
    await sleep(1_000);
    const late = new TestClient(
      `${t.url.replace("http", "ws")}/peerjs?key=peerjs&id=late&token=x`,
    );
    assert.deepEqual(await late.next(), { type: "OPEN" });
    assert.equal((await late.next()).type, "OFFER");
    assert.equal((await late.next()).type, "CANDIDATE");
    const started = Date.now();
    assert.deepEqual(await alice.next(6_000), {
      type: "EXPIRE",
      src: "never",
      dst: "alice",
    });
    const waited = Date.now() - started + 1_000;
    assert.ok(waited >= 4_500 && waited < 6_500, `expired after ${waited} ms`);
    await closeAll(alice, late);
  },
  { timeoutMs: 30_000 },
);

test("compat: PeerJS bounds a socket's waiting messages in count and bytes", async (api) => {
  await using t = await startServer(api);
  const alice = await pjOpen(t, "alice");
  for (let i = 0; i < 33; i++) {
    alice.send({
      type: "CANDIDATE",
      dst: `absent${i % 3}`,
      payload: PJ_CANDIDATE,
    });
  }
  // The 33rd is refused at once.
  assert.deepEqual(await alice.next(), {
    type: "EXPIRE",
    src: "absent2",
    dst: "alice",
  });
  const bob = await pjOpen(t, "bob");
  const big = { ...PJ_OFFER, sdp: { type: "offer", sdp: "s".repeat(30_000) } };
  bob.send({ type: "OFFER", dst: "gone", payload: big });
  bob.send({ type: "OFFER", dst: "gone", payload: big });
  bob.send({ type: "OFFER", dst: "gone", payload: big });
  assert.deepEqual(await bob.next(), {
    type: "EXPIRE",
    src: "gone",
    dst: "bob",
  });
  await silent(bob, 200);
  await closeAll(alice, bob);
});

test(
  "compat: a PeerJS id that does not come back is told to its contacts with LEAVE",
  async (api) => {
    await using t = await startServer(api);
    const [alice, bob, carol] = [
      await pjOpen(t, "alice"),
      await pjOpen(t, "bob"),
      await pjOpen(t, "carol"),
    ];
    alice.send({ type: "OFFER", dst: "bob", payload: PJ_OFFER });
    await bob.next();
    await alice.close();
    assert.deepEqual(await bob.next(7_000), {
      type: "LEAVE",
      src: "alice",
      dst: "bob",
    });
    // carol never spoke with alice.
    await silent(carol, 100);
    // The id is free again.
    const other = await pjOpen(t, "alice", "new-token");
    await closeAll(other, bob, carol);
  },
  { timeoutMs: 30_000 },
);

test("compat: PeerJS ids live in a namespace per origin", async (api) => {
  await using t = await startServer(api);
  const one = await pjOpen(t, "alice", "t1", "https://one.example");
  const two = await pjOpen(t, "alice", "t2", "https://two.example");
  const bob = await pjOpen(t, "bob", "t3", "https://two.example");
  bob.send({ type: "OFFER", dst: "alice", payload: PJ_OFFER });
  assert.equal((await two.next()).src, "bob");
  await silent(one);
  assert.deepEqual((await health(t)).compat.peerjs, { sockets: 3, ids: 3 });
  await closeAll(one, two, bob);
});

// --- Across brokers on Redis -------------------------------------------

test("compat bus: a y-webrtc topic spans two brokers: publishes, signals, from and subscribers held across them", async (api) => {
  await using pair = await twoBrokers(api, { maxPeersPerSession: 3 });
  if (pair === null) return;
  const { a: brokerA, b: brokerB } = pair;
  const [a, b] = [await yClient(brokerA), await yClient(brokerB)];
  await subscribe(a, "room");
  await subscribe(b, "room");
  // The subscriptions reach Redis a moment after the brokers took them.
  await sleep(150);
  publish(a, "room", { type: "announce", from: "peer-a" });
  assert.equal((await b.next()).data.from, "peer-a");
  assert.equal((await a.next()).data.from, "peer-a");
  publish(b, "room", { type: "announce", from: "peer-b" });
  assert.equal((await a.next()).data.from, "peer-b");
  await b.next();
  const signal = {
    type: "signal",
    from: "peer-b",
    to: "peer-a",
    signal: OFFER,
  };
  publish(b, "room", signal);
  assert.deepEqual((await a.next()).data, signal);
  // A socket on A cannot use b's from, held on B.
  const forger = await yClient(brokerA);
  await subscribe(forger, "room");
  await sleep(150);
  publish(forger, "room", { type: "announce", from: "peer-b" });
  assert.deepEqual((await settle(forger)).map((f) => f.code), ["forged_from"]);
  assert.deepEqual(await settle(a), []);
  // Three subscribers across the brokers: the fourth is refused.
  const fourth = await yClient(brokerB);
  fourth.send({ type: "subscribe", topics: ["room"] });
  await sleep(300);
  assert.deepEqual((await settle(fourth)).map((f) => f.code), ["topic_full"]);
  // Once b leaves, its from and its place are free on the other broker.
  await b.close();
  await sleep(200);
  await subscribe(fourth, "room");
  await sleep(200);
  assert.deepEqual(await settle(fourth), []);
  const heir = forger;
  publish(heir, "room", { type: "announce", from: "peer-b" });
  assert.equal((await fourth.next()).data.from, "peer-b");
  await closeAll(a, forger, fourth);
});

test(
  "compat bus: a PeerJS id outlives its broker's restart: its token's bearer takes it over on another broker, unannounced; another token cannot",
  async (api) => {
    // A drain window long enough that broker A is still up (closing its
    // second socket later) while alice comes back on B.
    await using pair = await twoBrokers(api, {}, { drainSeconds: 60 });
    if (pair === null) return;
    const { a: brokerA, b: brokerB } = pair;
    const alice = await pjOpen(brokerA, "alice", "secret");
    const carol = await pjOpen(brokerA, "carol", "hers");
    const bob = await pjOpen(brokerB, "bob");
    bob.send({ type: "OFFER", dst: "alice", payload: PJ_OFFER });
    assert.deepEqual(
      await alice.next(),
      pjFrame("OFFER", "bob", "alice", PJ_OFFER),
    );
    const restarting = brokerA.server.close();
    assert.equal((await alice.closed).code, 1012);
    const thief = await pjClient(brokerB, "alice", "other");
    assert.equal((await thief.next(5_000)).type, "ID-TAKEN");
    await thief.closed;
    const back = await pjOpen(brokerB, "alice", "secret");
    bob.send({ type: "OFFER", dst: "alice", payload: PJ_OFFER });
    assert.deepEqual(
      await back.next(),
      pjFrame("OFFER", "bob", "alice", PJ_OFFER),
    );
    back.send({ type: "ANSWER", dst: "bob", payload: PJ_ANSWER });
    assert.deepEqual(
      await bob.next(),
      pjFrame("ANSWER", "alice", "bob", PJ_ANSWER),
    );
    // Broker A ends; bob never hears that alice left.
    await carol.close();
    await within(restarting, "broker A to finish its drain", 10_000);
    await silent(bob);
    await closeAll(bob, back);
  },
  { timeoutMs: 40_000 },
);

test(
  "compat bus: a PeerJS id is claimed once across brokers, and messages reach it on the other",
  async (api) => {
    await using pair = await twoBrokers(api);
    if (pair === null) return;
    const { a: brokerA, b: brokerB } = pair;
    const alice = await pjOpen(brokerA, "alice", "secret");
    const thief = await pjClient(brokerB, "alice", "other");
    assert.equal((await thief.next()).type, "ID-TAKEN");
    await thief.closed;
    const bob = await pjOpen(brokerB, "bob");
    bob.send({ type: "OFFER", dst: "alice", payload: PJ_OFFER });
    assert.deepEqual(
      await alice.next(),
      pjFrame("OFFER", "bob", "alice", PJ_OFFER),
    );
    alice.send({ type: "ANSWER", dst: "bob", payload: PJ_ANSWER });
    assert.equal((await bob.next()).src, "alice");
    // A message for an id not yet open waits, and finds it on the other broker.
    bob.send({ type: "OFFER", dst: "late", payload: PJ_OFFER });
    await sleep(500);
    const late = await pjOpen(brokerA, "late");
    assert.equal((await late.next(3_000)).src, "bob");
    // Alice does not come back: bob, on the other broker, is told.
    await alice.close();
    assert.deepEqual(await bob.next(8_000), {
      type: "LEAVE",
      src: "alice",
      dst: "bob",
    });
    const again = await pjOpen(brokerB, "alice", "new");
    await closeAll(bob, late, again);
  },
  { timeoutMs: 40_000 },
);
