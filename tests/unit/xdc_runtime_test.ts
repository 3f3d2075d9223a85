// The webxdc runtime (src/client/webxdc_runtime.ts, webxdc_sync.ts,
// webxdc_log.ts) against the statements of the webxdc spec 1.4, with
// runtimes joined by in-memory wires and real Ed25519 (Web Crypto):
// serials in order, gap-free and without duplicates; max_serial; the
// promise of setUpdateListener; the sender hearing itself; the limits;
// a late peer getting the whole history in bounded rounds; a replayed log
// before any peer; instances apart; and hostile peers cut.
import assert from "node:assert/strict";
import {
  type ReceivedUpdate,
  WebxdcRuntime,
} from "../../src/client/webxdc_runtime.ts";
import {
  MAX_LOG_BYTES,
  MAX_LOG_UPDATES,
  MAX_UPDATE_BYTES,
  type SignedUpdate,
} from "../../src/client/webxdc_log.ts";
import { MemoryStore, type Store } from "../../src/client/webxdc_store.ts";
import {
  type Author,
  newAuthor,
  signUpdate,
} from "../../src/client/webxdc_sign.ts";
import { MAX_DUPLICATES, ROUND_UPDATES } from "../../src/client/webxdc_sync.ts";

/** Peers joined by in-memory wires; messages are delivered in order. */
class Net {
  nodes = new Map<string, WebxdcRuntime>();
  inflight = new Set<Promise<void>>();
  /** Every text message sent, with its sender and receiver. */
  sent: { from: string; to: string; text: string }[] = [];
  cuts: { by: string; peer: string; why: string }[] = [];
  #queues = new Map<string, Promise<void>>();

  add(name: string, instance = "room", store: Store = new MemoryStore()) {
    const deliver = (to: string, data: string | ArrayBuffer) => {
      const key = `${name}>${to}`;
      const next = (this.#queues.get(key) ?? Promise.resolve()).then(() =>
        this.nodes.get(to)?.message(name, data)
      );
      this.#queues.set(key, next);
      this.inflight.add(next);
      next.finally(() => this.inflight.delete(next));
    };
    const runtime = new WebxdcRuntime({
      instance,
      selfAddr: `${name}@example`,
      selfName: name,
      store: Promise.resolve(store),
      wire: {
        send: (to, text) => {
          this.sent.push({ from: name, to, text });
          deliver(to, text);
        },
        sendBinary: (to, bytes) => deliver(to, bytes.slice().buffer),
      },
      onCut: (peer, why) => this.cuts.push({ by: name, peer, why }),
    });
    this.nodes.set(name, runtime);
    return runtime;
  }

  /** Opens channels between two peers (both ends learn of the other). */
  connect(a: string, b: string) {
    this.nodes.get(a)!.peerJoined(b);
    this.nodes.get(b)!.peerJoined(a);
  }

  disconnect(a: string, b: string) {
    this.nodes.get(a)?.peerLeft(b);
    this.nodes.get(b)?.peerLeft(a);
  }

  /** Waits until every runtime has sent what it signed and every message is handled. */
  async idle() {
    for (let round = 0; round < 10_000; round++) {
      await Promise.all([...this.nodes.values()].map((n) => n.flushed()));
      if (this.inflight.size === 0) return;
      await Promise.all(this.inflight);
    }
    throw new Error("the net did not settle");
  }
}

/** A listener that records what it gets. */
function recorder() {
  const got: ReceivedUpdate[] = [];
  return { got, listener: (update: ReceivedUpdate) => void got.push(update) };
}

const payloads = (got: ReceivedUpdate[]) =>
  got.map((u) => (u.payload as { v: unknown }).v);

Deno.test("webxdc: serials are 1, 2, 3 in order with max_serial; setUpdateListener resolves once known updates are delivered; the sender hears itself", async () => {
  const net = new Net();
  const a = net.add("a");
  a.sendUpdate({ payload: { v: 1 }, info: "one" });
  a.sendUpdate({ payload: { v: 2 } });
  const { got, listener } = recorder();
  await a.setUpdateListener(listener);
  // Resolved only once the two known updates were delivered.
  assert.deepEqual(got.map((u) => [u.serial, u.max_serial]), [[1, 2], [2, 2]]);
  assert.equal(got[0]!.info, "one");
  a.sendUpdate({ payload: { v: 3 } });
  assert.equal(got.length, 2, "delivered later, not inside sendUpdate");
  await net.idle();
  assert.deepEqual(got.map((u) => [u.serial, u.max_serial]), [
    [1, 2],
    [2, 2],
    [3, 3],
  ]);
  // A listener set with a serial gets only what comes after it.
  const after = recorder();
  await a.setUpdateListener(after.listener, 2);
  assert.deepEqual(payloads(after.got), [3]);
  assert.equal(a.api.selfAddr, "a@example");
  assert.equal(a.api.sendUpdateMaxSize, 128_000);
  assert.deepEqual(payloads(await a.api.getAllUpdates()), [1, 2, 3]);
});

Deno.test("webxdc: a peer's update arrives with the receiver's own serial; a third peer meeting both gets each update once", async () => {
  const net = new Net();
  const [a, b, c] = [net.add("a"), net.add("b"), net.add("c")];
  const heard = { a: recorder(), b: recorder(), c: recorder() };
  await a.setUpdateListener(heard.a.listener);
  await b.setUpdateListener(heard.b.listener);
  b.sendUpdate({ payload: { v: "b1" } });
  await net.idle();
  net.connect("a", "b");
  await net.idle();
  a.sendUpdate({ payload: { v: "a1" } });
  await net.idle();
  assert.deepEqual(payloads(heard.a.got), ["b1", "a1"]);
  assert.deepEqual(payloads(heard.b.got), ["b1", "a1"]);
  assert.deepEqual(heard.a.got.map((u) => u.serial), [1, 2]);
  // c meets both: each sends it everything; it keeps each update once.
  await c.setUpdateListener(heard.c.listener);
  net.connect("c", "a");
  net.connect("c", "b");
  await net.idle();
  assert.deepEqual(heard.c.got.map((u) => u.serial), [1, 2]);
  assert.deepEqual(new Set(payloads(heard.c.got)), new Set(["a1", "b1"]));
  assert.deepEqual(net.cuts, []);
});

Deno.test("webxdc: a peer that comes later gets the whole history in bounded rounds, from whoever is online", async () => {
  const net = new Net();
  const a = net.add("a");
  const total = 3 * ROUND_UPDATES + 5;
  for (let i = 0; i < total; i++) a.sendUpdate({ payload: { v: i } });
  await net.idle();
  const late = net.add("late");
  const { got, listener } = recorder();
  await late.setUpdateListener(listener);
  net.connect("a", "late");
  await net.idle();
  assert.deepEqual(payloads(got), Array.from({ length: total }, (_, i) => i));
  const batches = net.sent.filter((m) => m.from === "a" && m.to === "late")
    .map((m) => JSON.parse(m.text)).filter((m) => m.t === "upd");
  assert.equal(batches.length, 4, "64 updates a round");
  assert.ok(batches.every((m) => m.u.length <= ROUND_UPDATES));
  assert.deepEqual(net.cuts, []);
});

Deno.test("webxdc: honest peers are never taken for liars: rounds bound by bytes, each holding what the others lack, three meeting at once", async () => {
  const net = new Net();
  const [a, b] = [net.add("a"), net.add("b"), net.add("c")];
  const big = "x".repeat(MAX_UPDATE_BYTES - 100);
  for (let i = 0; i < 6; i++) a!.sendUpdate({ payload: big, i });
  for (let i = 0; i < ROUND_UPDATES + 6; i++) b!.sendUpdate({ payload: i });
  await net.idle();
  net.connect("a", "b");
  net.connect("b", "c");
  net.connect("a", "c");
  await net.idle();
  for (const node of net.nodes.values()) {
    assert.equal(node.log.maxSerial, 6 + ROUND_UPDATES + 6);
  }
  const rounds = net.sent.filter((m) => m.from === "a" && m.to === "c")
    .map((m) => JSON.parse(m.text)).filter((m) => m.t === "upd" && m.more);
  assert.ok(rounds.length > 0, "a round stopped by its bytes");
  assert.deepEqual(net.cuts, []);
});

Deno.test("webxdc: a summary claims only signed updates: a peer met while its own update is being signed is not taken for a liar", async () => {
  const net = new Net();
  const [a, b] = [net.add("a"), net.add("b")];
  await Promise.all([a.ready, b.ready]);
  a.sendUpdate({ payload: "signing" });
  net.connect("a", "b"); // before the signature is made
  await net.idle();
  const first = JSON.parse(net.sent.find((m) => m.from === "a")!.text);
  assert.deepEqual(first, { t: "have", h: {} }, "the update is not claimed");
  const got = await b.api.getAllUpdates();
  assert.deepEqual(got.map((u) => u.payload), ["signing"]);
  assert.deepEqual(net.cuts, []);
});

Deno.test("webxdc: the stored log is replayed before any peer, with the same serials; the next update continues the author's sequence", async () => {
  const store = new KeptStore();
  const net = new Net();
  const first = net.add("a", "room", store);
  first.sendUpdate({ payload: { v: "x" } });
  first.sendUpdate({ payload: { v: "y" } });
  await net.idle();
  const reloaded = new Net().add("a", "room", store);
  const { got, listener } = recorder();
  await reloaded.setUpdateListener(listener);
  assert.deepEqual(got.map((u) => [u.serial, (u.payload as { v: string }).v]), [
    [1, "x"],
    [2, "y"],
  ]);
  reloaded.sendUpdate({ payload: { v: "z" } });
  await reloaded.flushed();
  assert.deepEqual(store.rows.map((u) => u.n), [1, 2, 3]);
  assert.equal(new Set(store.rows.map((u) => u.a)).size, 1, "one author");
});

/** A store that keeps its rows and author across "reloads", as IndexedDB does. */
class KeptStore implements Store {
  readonly persistent = true;
  rows: SignedUpdate[] = [];
  #author?: Promise<Author>;
  author() {
    return this.#author ??= newAuthor();
  }
  load() {
    return Promise.resolve(this.rows.map((row) => ({ ...row })));
  }
  save(_instance: string, update: SignedUpdate) {
    this.rows.push({ ...update });
    return Promise.resolve();
  }
}

Deno.test("webxdc: limits: an update over sendUpdateMaxSize throws; past 16 MiB or 10,000 updates sendUpdate throws and nothing is dropped", async () => {
  const net = new Net();
  const a = net.add("a");
  await a.ready;
  assert.throws(
    () => a.sendUpdate({ payload: "x".repeat(MAX_UPDATE_BYTES) }),
    RangeError,
  );
  assert.throws(() => a.sendUpdate("no payload" as unknown), TypeError);
  const big = "x".repeat(MAX_UPDATE_BYTES - 100);
  const fit = Math.floor(MAX_LOG_BYTES / (big.length + 20));
  for (let i = 0; i < fit; i++) a.sendUpdate({ payload: big });
  assert.throws(() => a.sendUpdate({ payload: big }), /limit/);
  assert.equal(a.log.maxSerial, fit, "nothing dropped");
  const small = net.add("small");
  await small.ready;
  for (let i = 0; i < MAX_LOG_UPDATES; i++) small.sendUpdate({ payload: i });
  assert.throws(() => small.sendUpdate({ payload: "one more" }), /10000/);
  assert.equal(small.log.at(1)!.b, '{"payload":0}', "the first is kept");
});

Deno.test("webxdc: two instances never see each other's updates: an update carried into another instance does not verify, and its carrier is cut", async () => {
  const net = new Net();
  const a = net.add("a", "poll-1");
  a.sendUpdate({ payload: { v: 1 } });
  await net.idle();
  const other = net.add("o", "poll-2");
  const { got, listener } = recorder();
  await other.setUpdateListener(listener);
  other.peerJoined("carrier");
  await other.message(
    "carrier",
    JSON.stringify({ t: "upd", u: [a.log.at(1)] }),
  );
  assert.deepEqual(got, []);
  assert.deepEqual(net.cuts.map((c) => c.why), [
    "an update that does not verify",
  ]);
});

/** A runtime with a hostile peer "h" joined to it, and h's own key. */
async function withHostile() {
  const net = new Net();
  const a = net.add("a");
  await a.ready;
  a.peerJoined("h");
  await net.idle();
  const author = await newAuthor();
  const signed = async (n: number, body: string) => {
    const update = { a: author.id, n, b: body, s: "" };
    update.s = await signUpdate("room", author, update);
    return update;
  };
  const from = (message: unknown) =>
    a.message(
      "h",
      typeof message === "string" ? message : JSON.stringify(message),
    );
  return { net, a, signed, from };
}

Deno.test("webxdc: hostile peers are cut: a bad signature, an update over the bound, a batch unasked for, a second summary, a flood of duplicates, not JSON", async () => {
  const cases: [
    string,
    (h: Awaited<ReturnType<typeof withHostile>>) => Promise<void>,
  ][] = [
    ["an update that does not verify", async ({ from, signed }) => {
      const update = await signed(1, '{"payload":1}');
      await from({ t: "upd", u: [{ ...update, b: '{"payload":2}' }] });
    }],
    ["a malformed batch", async ({ from, signed }) => {
      await from({
        t: "upd",
        u: [
          await signed(
            1,
            JSON.stringify({ payload: "x".repeat(MAX_UPDATE_BYTES) }),
          ),
        ],
      });
    }],
    ["a batch unasked for", async ({ from, signed }) => {
      // One answer was asked for (the summary sent on joining); a second is not.
      await from({ t: "upd", u: [], r: true });
      await from({ t: "upd", u: [await signed(1, '{"payload":1}')], r: true });
    }],
    ["a summary unasked for", async ({ from }) => {
      await from({ t: "have", h: {} });
      await from({ t: "have", h: {} });
    }],
    ["a flood of duplicates", async ({ from, signed }) => {
      const update = await signed(1, '{"payload":1}');
      for (let i = 0; i <= MAX_DUPLICATES + 1; i++) {
        await from({ t: "upd", u: [update] });
      }
    }],
    ["not JSON", ({ from }) => from("{")],
    ["a malformed summary", ({ from }) => from({ t: "have", h: { x: -1 } })],
  ];
  for (const [why, act] of cases) {
    const hostile = await withHostile();
    const { got, listener } = recorder();
    await hostile.a.setUpdateListener(listener);
    await act(hostile);
    assert.deepEqual(hostile.net.cuts.map((c) => c.why), [why], why);
    assert.equal(hostile.a.replicator.isCut("h"), true);
    // Nothing more is read from it, even a valid update.
    const before = hostile.a.log.maxSerial;
    await hostile.from({
      t: "upd",
      u: [await hostile.signed(7, '{"payload":7}')],
    });
    assert.equal(hostile.a.log.maxSerial, before, why);
    assert.ok(got.length <= 1, why);
  }
});

Deno.test("webxdc: realtime: a joined peer gets the bytes, not kept; over 128,000 bytes throws, and a peer sending more is cut", async () => {
  const net = new Net();
  const [a, b] = [net.add("a"), net.add("b")];
  net.connect("a", "b");
  await net.idle();
  const channel = a.joinRealtimeChannel();
  const other = b.joinRealtimeChannel();
  const got: number[][] = [];
  other.setListener((data) => got.push([...data]));
  channel.send(new Uint8Array([1, 2, 3]));
  await net.idle();
  assert.deepEqual(got, [[1, 2, 3]]);
  assert.equal(b.log.maxSerial, 0, "realtime data is not an update");
  assert.throws(
    () => channel.send(new Uint8Array(MAX_UPDATE_BYTES + 1)),
    RangeError,
  );
  assert.throws(() => a.joinRealtimeChannel(), /joined already/);
  channel.leave();
  assert.throws(() => channel.send(new Uint8Array(1)), /left/);
  await b.message("a", new ArrayBuffer(MAX_UPDATE_BYTES + 1));
  assert.deepEqual(net.cuts.map((c) => c.why), ["oversized realtime data"]);
});
