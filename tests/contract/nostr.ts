// `/nostr` (DESIGN section 10.3): a Nostr relay for ephemeral events only,
// over real sockets, on every adapter. Events are signed in the test
// (tests/support/nostr_sign.ts, no package), so that the cases run on Deno
// and on the npm package under Node 22 alike.
import assert from "node:assert/strict";
import {
  newAuthor,
  type SignedEvent,
  signEvent,
  type TestAuthor,
} from "../support/nostr_sign.ts";
import { sleep, startServer, type TestServer } from "./_servers.ts";
import { test } from "./_suite.ts";
import { TestClient } from "./_wire.ts";
import { rawSocket } from "./_compat_support.ts";
import { twoBrokers } from "./scaleout.ts";

/** A relay frame: `["OK", id, ok, message]`, `["EVENT", sub, event]`... */
type Reply = [string, ...unknown[]];

const KIND = 20_001;

/** A `/nostr` client, open. */
async function nostrClient(
  t: TestServer,
  origin?: string,
): Promise<TestClient> {
  const client = new TestClient(`${t.url.replace("http", "ws")}/nostr`, origin);
  await client.opened();
  return client;
}

async function next(client: TestClient): Promise<Reply> {
  return (await client.next()) as unknown as Reply;
}

/**
 * Every frame the relay sent `client` before it answered a probe `REQ`:
 * the relay answers frames in order, so what `client` sent before was
 * handled. The probe is closed again.
 */
async function settle(client: TestClient): Promise<Reply[]> {
  client.send(["REQ", "settle", { kinds: [0] }] as never);
  const frames: Reply[] = [];
  for (;;) {
    const frame = await next(client);
    if (frame[0] === "EOSE" && frame[1] === "settle") break;
    frames.push(frame);
  }
  client.send(["CLOSE", "settle"] as never);
  return frames;
}

async function req(client: TestClient, sub: string, ...filters: unknown[]) {
  client.send(["REQ", sub, ...filters] as never);
  assert.deepEqual(await next(client), ["EOSE", sub]);
}

function publish(client: TestClient, event: SignedEvent): void {
  client.send(["EVENT", event] as never);
}

let made = 0;

/** A fresh event of `author` in `room` (each has its own content). */
function event(author: TestAuthor, room = "room", extra = {}): SignedEvent {
  const content = `hi ${made++}`;
  return signEvent(
    { kind: KIND, tags: [["x", room]], content, ...extra },
    author,
  );
}

async function figures(t: TestServer): Promise<unknown> {
  return (await (await fetch(`${t.url}/health`)).json()).compat?.nostr;
}

/** Waits until `/health`'s nostr figures are `expected` (closes land late). */
async function figuresBecome(t: TestServer, expected: unknown): Promise<void> {
  const end = Date.now() + 3_000;
  for (;;) {
    const now = await figures(t);
    if (JSON.stringify(now) === JSON.stringify(expected)) return;
    if (Date.now() > end) assert.deepEqual(now, expected);
    await sleep(20);
  }
}

async function closeAll(...clients: TestClient[]): Promise<void> {
  await Promise.all(clients.map((client) => client.close()));
}

test("nostr: a REQ is answered EOSE at once; an ephemeral event is answered OK and reaches every matching subscription, the sender's own included; CLOSE ends one", async (api) => {
  await using t = await startServer(api);
  const author = newAuthor();
  const [a, b, c] = [
    await nostrClient(t),
    await nostrClient(t),
    await nostrClient(t),
  ];
  await req(a, "mine", { kinds: [KIND], "#x": ["room"] });
  await req(b, "theirs", { kinds: [KIND, 20_002], "#x": ["room", "hall"] });
  await req(c, "elsewhere", { kinds: [KIND], "#x": ["other"] });
  assert.deepEqual(await figures(t), { sockets: 3, subscriptions: 3 });
  const first = event(author);
  publish(a, first);
  assert.deepEqual(await settle(a), [
    ["OK", first.id, true, ""],
    ["EVENT", "mine", first],
  ]);
  assert.deepEqual(await next(b), ["EVENT", "theirs", first]);
  assert.deepEqual(await settle(c), []);
  // After CLOSE, b hears nothing more; a still does.
  b.send(["CLOSE", "theirs"] as never);
  assert.deepEqual(await settle(b), []);
  const second = event(author);
  publish(a, second);
  assert.deepEqual((await settle(a)).map((frame) => frame[0]), ["OK", "EVENT"]);
  assert.deepEqual(await settle(b), []);
  await figuresBecome(t, { sockets: 3, subscriptions: 2 });
  await closeAll(a, b, c);
});

test("nostr: a REQ with a held subscription id replaces its filters; since is inclusive; authors, kinds and tags filter", async (api) => {
  await using t = await startServer(api);
  const [me, other] = [newAuthor(), newAuthor()];
  const [listener, sender] = [await nostrClient(t), await nostrClient(t)];
  await req(listener, "s", { kinds: [KIND] });
  // The same id again: the new filter replaces the old, as Trystero expects.
  await req(listener, "s", { kinds: [20_002], "#x": ["room"] });
  assert.deepEqual(await figures(t), { sockets: 2, subscriptions: 1 });
  const old = event(me);
  const fresh = signEvent({ kind: 20_002, tags: [["x", "room"]] }, me);
  publish(sender, old);
  publish(sender, fresh);
  assert.deepEqual(await next(listener), ["EVENT", "s", fresh]);
  assert.deepEqual(await settle(listener), []);
  // `since` equal to created_at matches; one second later does not.
  const at = Math.floor(Date.now() / 1000);
  await req(listener, "s", { kinds: [KIND], since: at });
  await req(listener, "later", { kinds: [KIND], since: at + 1 });
  await req(listener, "theirs", { kinds: [KIND], authors: [other.pubkey] });
  const now = event(me, "room", { created_at: at });
  publish(sender, now);
  assert.deepEqual(await next(listener), ["EVENT", "s", now]);
  assert.deepEqual(await settle(listener), []);
  const theirs = event(other, "room", { created_at: at + 1 });
  publish(sender, theirs);
  // The sender's answers come once its events were relayed.
  assert.equal((await settle(sender)).length, 4);
  const heard = await settle(listener);
  assert.deepEqual(heard.map((frame) => frame[1]).sort(), [
    "later",
    "s",
    "theirs",
  ]);
  await closeAll(listener, sender);
});

test("nostr: a kind-1 event is blocked, a forged signature or a wrong id is invalid, nothing is stored, a bad frame gets a NOTICE", async (api) => {
  await using t = await startServer(api);
  const author = newAuthor();
  const [client, listener] = [await nostrClient(t), await nostrClient(t)];
  await req(listener, "all", { "#x": ["room"] });
  const note = signEvent({ kind: 1, tags: [["x", "room"]] }, author);
  publish(client, note);
  const [ok, id, accepted, why] = await next(client);
  assert.deepEqual([ok, id, accepted], ["OK", note.id, false]);
  assert.match(String(why), /^blocked: /);
  // Another's signature over this id, and an id that is not the hash.
  const good = event(author);
  const forged = { ...good, sig: event(newAuthor()).sig };
  publish(client, forged);
  assert.deepEqual(await next(client), [
    "OK",
    good.id,
    false,
    "invalid: bad signature",
  ]);
  publish(client, { ...good, content: "changed" });
  assert.deepEqual(await next(client), [
    "OK",
    good.id,
    false,
    "invalid: bad id",
  ]);
  const big = event(author, "room", { content: "x".repeat(17_000) });
  publish(client, big);
  const tooBig = await next(client);
  assert.deepEqual(tooBig.slice(0, 3), ["OK", big.id, false]);
  assert.match(String(tooBig[3]), /^invalid: /);
  assert.deepEqual(await settle(listener), [], "nothing refused was relayed");
  // An accepted event is relayed, then gone: a later REQ gets only EOSE.
  publish(client, good);
  assert.deepEqual(await next(client), ["OK", good.id, true, ""]);
  assert.deepEqual(await next(listener), ["EVENT", "all", good]);
  await req(client, "later", { "#x": ["room"] });
  assert.deepEqual(await settle(client), []);
  // Frames that are no Nostr frame: a NOTICE each, and the socket lives on.
  for (const bad of ["{}", '["PING"]', "not json", '["CLOSE"]']) {
    client.ws.send(bad);
    const [type, message] = await next(client);
    assert.equal(type, "NOTICE", bad);
    assert.match(String(message), /^invalid: /, bad);
  }
  client.send(["REQ", "bad", { kinds: "all" }] as never);
  const closed = await next(client);
  assert.deepEqual(closed.slice(0, 2), ["CLOSED", "bad"]);
  assert.match(String(closed[2]), /^invalid: /);
  await closeAll(client, listener);
});

test("nostr: the same event twice is answered OK duplicate: and relayed once", async (api) => {
  await using t = await startServer(api);
  const author = newAuthor();
  const [client, listener] = [await nostrClient(t), await nostrClient(t)];
  await req(listener, "s", { kinds: [KIND] });
  const once = event(author);
  publish(client, once);
  publish(client, once);
  assert.deepEqual(await next(client), ["OK", once.id, true, ""]);
  const again = await next(client);
  assert.deepEqual(again.slice(0, 3), ["OK", once.id, true]);
  assert.match(String(again[3]), /^duplicate: /);
  assert.deepEqual(await next(listener), ["EVENT", "s", once]);
  assert.deepEqual(await settle(listener), []);
  await closeAll(client, listener);
});

test("nostr: a socket holds at most 16 subscriptions (CLOSED blocked:), a filter field at most 256 values (CLOSED invalid:)", async (api) => {
  await using t = await startServer(api);
  const client = await nostrClient(t);
  for (let i = 0; i < 16; i++) await req(client, `s${i}`, { kinds: [KIND] });
  client.send(["REQ", "s16", { kinds: [KIND] }] as never);
  const full = await next(client);
  assert.deepEqual(full.slice(0, 2), ["CLOSED", "s16"]);
  assert.match(String(full[2]), /^blocked: at most 16 subscriptions/);
  // Replacing a held one is still fine.
  await req(client, "s0", { kinds: [20_002] });
  client.send(["CLOSE", "s15"] as never);
  const values = Array.from({ length: 257 }, (_, i) => `room-${i}`);
  client.send(["REQ", "wide", { "#x": values }] as never);
  const wide = await next(client);
  assert.deepEqual(wide.slice(0, 2), ["CLOSED", "wide"]);
  assert.match(String(wide[2]), /^invalid: '#x' lists up to 256/);
  await req(client, "wide", { "#x": values.slice(0, 256) });
  assert.deepEqual(await figures(t), { sockets: 1, subscriptions: 16 });
  await client.close();
});

test("nostr: events live in a namespace per origin", async (api) => {
  await using t = await startServer(api);
  const author = newAuthor();
  const [one, two, oneAgain, none] = [
    await nostrClient(t, "https://one.example"),
    await nostrClient(t, "https://two.example"),
    await nostrClient(t, "https://one.example"),
    await nostrClient(t),
  ];
  for (const client of [one, two, oneAgain, none]) {
    await req(client, "s", { kinds: [KIND] });
  }
  const sent = event(author);
  publish(one, sent);
  assert.deepEqual(await next(oneAgain), ["EVENT", "s", sent]);
  assert.deepEqual(await settle(two), []);
  assert.deepEqual(await settle(none), []);
  // The same event from another origin is no duplicate there.
  publish(two, sent);
  assert.deepEqual(await next(two), ["OK", sent.id, true, ""]);
  assert.deepEqual(await next(two), ["EVENT", "s", sent]);
  assert.deepEqual(await settle(oneAgain), []);
  await closeAll(one, two, oneAgain, none);
});

test("nostr: events cross brokers on Redis, to the same origin only, once each, and count as duplicates there", async (api) => {
  await using pair = await twoBrokers(api);
  if (pair === null) return;
  const author = newAuthor();
  const origin = "https://one.example";
  const [a, b, elsewhere] = [
    await nostrClient(pair.a, origin),
    await nostrClient(pair.b, origin),
    await nostrClient(pair.b, "https://two.example"),
  ];
  for (const client of [a, b, elsewhere]) {
    await req(client, "s", { kinds: [KIND] });
  }
  // B's subscription reaches Redis a moment after B took it: probe until
  // an event of A's arrives at B (a late probe may still come; skipped).
  for (let tries = 0;; tries++) {
    assert.ok(tries < 100, "no event of broker A reached broker B");
    publish(a, event(author, "probe"));
    if ((await settle(b)).some((frame) => frame[0] === "EVENT")) break;
    await sleep(50);
  }
  const probe = (frame: Reply) =>
    frame[0] === "EVENT" &&
    (frame[2] as SignedEvent).tags.some((tag) => tag[1] === "probe");
  const nextBut = async (client: TestClient) => {
    for (;;) {
      const frame = await next(client);
      if (!probe(frame)) return frame;
    }
  };
  await settle(a);
  const sent = event(author);
  publish(a, sent);
  assert.deepEqual((await settle(a)).filter((frame) => !probe(frame)), [
    ["OK", sent.id, true, ""],
    ["EVENT", "s", sent],
  ]);
  assert.deepEqual(await nextBut(b), ["EVENT", "s", sent]);
  // B saw it come by: sent there too, it is a duplicate, relayed nowhere.
  publish(b, sent);
  assert.deepEqual((await settle(b)).filter((frame) => !probe(frame)), [
    ["OK", sent.id, true, "duplicate: already relayed"],
  ]);
  const back = event(author);
  publish(b, back);
  assert.deepEqual(await nextBut(a), ["EVENT", "s", back]);
  assert.deepEqual((await settle(a)).filter((frame) => !probe(frame)), []);
  const heard = await settle(elsewhere);
  assert.deepEqual(heard.filter((frame) => frame[0] === "EVENT"), []);
  await closeAll(a, b, elsewhere);
});

test("nostr: an event costs a token for each subscription it reaches, and is refused rate-limited: before its signature is checked", async (api) => {
  await using t = await startServer(api, {
    signaling: { rateLimitBurst: 10, rateLimitPerSecond: 1 },
  });
  const author = newAuthor();
  const listeners = [];
  for (let i = 0; i < 4; i++) {
    const client = await nostrClient(t);
    await req(client, "s", { kinds: [KIND] });
    listeners.push(client);
  }
  const sender = await nostrClient(t);
  await req(sender, "s", { kinds: [KIND] });
  // Each event reaches 5 subscriptions: the bucket of 10, less the REQ,
  // holds one.
  const events = [event(author), event(author)];
  for (const item of events) publish(sender, item);
  // A forged event now is refused for the rate, not for its signature:
  // the signature was never checked.
  const forged = { ...event(author), sig: "0".repeat(128) };
  publish(sender, forged);
  // Its own copy of the first, the notice and three answers.
  const frames: Reply[] = [];
  for (let i = 0; i < 5; i++) frames.push(await next(sender));
  const answers = frames.filter((frame) => frame[0] !== "EVENT");
  assert.deepEqual(
    answers.map((frame) => frame.slice(0, 3)),
    [
      ["OK", events[0]!.id, true],
      [
        "NOTICE",
        "rate-limited: Cannot accept the frame: too many messages, slow down",
      ],
      ["OK", events[1]!.id, false],
      ["OK", forged.id, false],
    ].map((frame) => frame.slice(0, 3)),
  );
  for (const answer of answers.slice(2)) {
    assert.match(String(answer[3]), /^rate-limited: /);
  }
  assert.deepEqual(frames.filter((frame) => frame[0] === "EVENT"), [
    ["EVENT", "s", events[0]],
  ]);
  assert.deepEqual(await next(listeners[0]!), ["EVENT", "s", events[0]]);
  assert.deepEqual(await settle(listeners[0]!), []);
  await closeAll(sender, ...listeners);
});

test("nostr: on by default; --compat without nostr answers 404 at /nostr; a socket that asks nothing in time is closed", async (api) => {
  {
    await using t = await startServer(api, { compat: ["y-webrtc"] });
    const { status, close } = await rawSocket(t.server.port, "/nostr");
    assert.equal(status, 404);
    await close();
    assert.equal(await figures(t), undefined);
  }
  {
    await using t = await startServer(api, {
      signaling: { joinTimeoutMs: 200 },
    });
    const idle = await nostrClient(t);
    assert.equal((await idle.closed).code, 1008);
    await figuresBecome(t, { sockets: 0, subscriptions: 0 });
  }
});
