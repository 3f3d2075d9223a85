// The signaling bus's contract (src/signaling/bus/mod.ts and compat.ts),
// asserted the same way on both engines: the in-process LocalBus and
// RedisBus on a private redis-server. The hubs rely on nothing else: an
// engine that keeps these cases keeps the cluster layer working.
import assert from "node:assert/strict";
import {
  type Bus,
  type BusDelivery,
  type BusEvent,
  LocalBus,
} from "../../src/signaling/bus/mod.ts";
import { createRedisBus } from "../../src/signaling/bus/redis.ts";
import { until } from "../support/ports.ts";
import { haveRedis, startRedis } from "../support/redis.ts";

/** One engine's nodes, made as the cases need them. */
interface Engine extends AsyncDisposable {
  node(): Promise<Node>;
}

/** A node with what it was told, in order. */
interface Node {
  bus: Bus;
  events: BusEvent[];
  deliveries: BusDelivery[];
  topics: [string, string][];
  directs: [string, string][];
}

function watch(bus: Bus): Node {
  const node: Node = {
    bus,
    events: [],
    deliveries: [],
    topics: [],
    directs: [],
  };
  bus.attach({
    event: (event) => node.events.push(event),
    deliver: (delivery) => node.deliveries.push(delivery),
    state: () => {},
  });
  bus.compat.attach({
    topic: (key, message) => node.topics.push([key, message]),
    direct: (key, message) => node.directs.push([key, message]),
  });
  return node;
}

const ENGINES: [string, () => Promise<Engine | null>][] = [
  ["LocalBus", () => {
    const local = new LocalBus();
    const made: Bus[] = [];
    return Promise.resolve({
      node: () => Promise.resolve(watch(made[made.push(local.connect()) - 1]!)),
      async [Symbol.asyncDispose]() {
        for (const bus of made) await bus.close();
      },
    });
  }],
  ["RedisBus", async () => {
    if (!haveRedis()) return null;
    const redis = await startRedis();
    const made: Bus[] = [];
    return {
      node: async () => {
        const bus = await createRedisBus({ url: redis.url });
        made.push(bus);
        return watch(bus);
      },
      async [Symbol.asyncDispose]() {
        for (const bus of made) await bus.close();
        await redis[Symbol.asyncDispose]();
      },
    };
  }],
];

function busCase(name: string, fn: (engine: Engine) => Promise<void>): void {
  for (const [engineName, make] of ENGINES) {
    Deno.test({
      name: `bus contract (${engineName}): ${name}`,
      ignore: engineName === "RedisBus" && !haveRedis() && !Deno.env.get("CI"),
      async fn() {
        await using engine = await make();
        assert.ok(engine, `${engineName} is not available`);
        await fn(engine);
      },
    });
  }
}

const settled = (what: string, check: () => boolean) =>
  until(check, what, 10_000);

busCase(
  "joins are numbered in one order and published to every holder of the session, the joiner's node included",
  async (engine) => {
    const [a, b, outsider] = [
      await engine.node(),
      await engine.node(),
      await engine.node(),
    ];
    const first = await a.bus.join("s", "p1", 4);
    assert.ok(first.ok);
    assert.deepEqual([...first.snapshot.members], [["p1", a.bus.node]]);
    const second = await b.bus.join("s", "p2", 4);
    assert.ok(second.ok);
    assert.ok(second.snapshot.seq > first.snapshot.seq);
    assert.deepEqual(
      new Map(second.snapshot.members),
      new Map([["p1", a.bus.node], ["p2", b.bus.node]]),
    );
    await settled("a's two events", () => a.events.length === 2);
    await settled("b's event", () => b.events.length >= 1);
    assert.deepEqual(a.events.map((e) => [e.kind, e.peerId]), [
      ["joined", "p1"],
      ["joined", "p2"],
    ]);
    assert.ok(a.events[0]!.seq < a.events[1]!.seq);
    assert.deepEqual(b.events.at(-1), a.events[1]);
    // A node that holds no member of the session hears nothing of it.
    await outsider.bus.join("other", "p3", 4);
    await settled(
      "the outsider's own event",
      () => outsider.events.length === 1,
    );
    assert.deepEqual(outsider.events.map((e) => e.session), ["other"]);
  },
);

busCase(
  "a join is refused when the session is full or the peer id is held anywhere",
  async (engine) => {
    const [a, b] = [await engine.node(), await engine.node()];
    assert.ok((await a.bus.join("s", "p1", 2)).ok);
    assert.deepEqual(await b.bus.join("t", "p1", 2), {
      ok: false,
      reason: "taken",
    });
    assert.ok((await b.bus.join("s", "p2", 2)).ok);
    assert.deepEqual(await b.bus.join("s", "p3", 2), {
      ok: false,
      reason: "full",
    });
    assert.deepEqual(
      [...(await a.bus.snapshot("s")).members.keys()].sort(),
      ["p1", "p2"],
    );
  },
);

busCase(
  "concurrent joins from two nodes never pass the session's bound",
  async (engine) => {
    const [a, b] = [await engine.node(), await engine.node()];
    const answers = await Promise.all(
      Array.from(
        { length: 12 },
        (_, i) => (i % 2 ? a : b).bus.join("race", `p${i}`, 5),
      ),
    );
    assert.equal(
      answers.filter((answer) => answer.ok).length,
      5,
    );
    assert.equal((await a.bus.snapshot("race")).members.size, 5);
  },
);

busCase(
  "a leave is published, and a delivery reaches only the node it is addressed to",
  async (engine) => {
    const [a, b, c] = [
      await engine.node(),
      await engine.node(),
      await engine.node(),
    ];
    await a.bus.join("s", "p1", 4);
    await b.bus.join("s", "p2", 4);
    await c.bus.join("s", "p3", 4);
    const delivery = { session: "s", to: "p2", from: "p1", data: '{"x":1}' };
    await a.bus.deliver(b.bus.node, delivery);
    await settled("b's delivery", () => b.deliveries.length === 1);
    assert.deepEqual(b.deliveries, [delivery]);
    await b.bus.leave("s", "p2");
    await settled(
      "a hears p2 leave",
      () => a.events.some((e) => e.kind === "left" && e.peerId === "p2"),
    );
    assert.deepEqual(a.deliveries, []);
    assert.deepEqual(c.deliveries, []);
    assert.deepEqual([...(await c.bus.snapshot("s")).members.keys()].sort(), [
      "p1",
      "p3",
    ]);
  },
);

busCase(
  "a node that closes takes its peers along, and the others hear them leave",
  async (engine) => {
    const [a, b] = [await engine.node(), await engine.node()];
    await a.bus.join("s", "p1", 4);
    await b.bus.join("s", "p2", 4);
    await b.bus.close();
    await settled(
      "a hears p2 leave",
      () => a.events.some((e) => e.kind === "left" && e.peerId === "p2"),
    );
    assert.deepEqual([...(await a.bus.snapshot("s")).members.keys()], ["p1"]);
    // The id is free again.
    assert.ok((await a.bus.join("s", "p2", 4)).ok);
  },
);

busCase(
  "compat: a topic counts subscribers across nodes and refuses one past its bound",
  async (engine) => {
    const [a, b] = [await engine.node(), await engine.node()];
    assert.deepEqual(await a.bus.compat.subscribe("t", 3), {
      ok: true,
      remote: 0,
    });
    assert.deepEqual(await a.bus.compat.subscribe("t", 3), {
      ok: true,
      remote: 0,
    });
    assert.deepEqual(await b.bus.compat.subscribe("t", 3), {
      ok: true,
      remote: 2,
    });
    assert.deepEqual(await b.bus.compat.subscribe("t", 3), {
      ok: false,
      remote: 2,
    });
    await a.bus.compat.unsubscribe("t");
    assert.deepEqual(await b.bus.compat.subscribe("t", 3), {
      ok: true,
      remote: 1,
    });
  },
);

busCase(
  "compat: a publish reaches every other node with a subscriber, and no one else",
  async (engine) => {
    const [a, b, c] = [
      await engine.node(),
      await engine.node(),
      await engine.node(),
    ];
    await a.bus.compat.subscribe("t", 10);
    await b.bus.compat.subscribe("t", 10);
    await b.bus.compat.subscribe("t", 10);
    await c.bus.compat.subscribe("elsewhere", 10);
    assert.equal(await a.bus.compat.publish("t", "hello"), 2);
    await settled("b's publish", () => b.topics.length === 1);
    assert.deepEqual(b.topics, [["t", "hello"]]);
    // After b leaves the topic, its node hears nothing more of it.
    await b.bus.compat.unsubscribe("t");
    await b.bus.compat.unsubscribe("t");
    assert.equal(await a.bus.compat.publish("t", "again"), 0);
    assert.equal(await c.bus.compat.publish("elsewhere", "own"), 0);
    await a.bus.compat.publish("elsewhere", "to c");
    await settled("c's publish", () => c.topics.length === 1);
    assert.deepEqual(a.topics, []);
    assert.deepEqual(b.topics, [["t", "hello"]]);
    assert.deepEqual(c.topics, [["elsewhere", "to c"]]);
  },
);

busCase(
  "compat: a claim has one holder at a time, and a direct message reaches only it",
  async (engine) => {
    const [a, b] = [await engine.node(), await engine.node()];
    const claims = await Promise.all([
      a.bus.compat.claim("id"),
      b.bus.compat.claim("id"),
    ]);
    assert.deepEqual(claims.filter(Boolean).length, 1);
    const [holder, other] = claims[0] ? [a, b] : [b, a];
    assert.equal(await holder.bus.compat.claim("id"), true, "again: still its");
    assert.equal(await other.bus.compat.send("id", "for the holder"), true);
    assert.equal(await other.bus.compat.send("nobody", "lost"), false);
    await settled("the direct message", () => holder.directs.length === 1);
    assert.deepEqual(holder.directs, [["id", "for the holder"]]);
    assert.deepEqual(other.directs, []);
    // A release by the other node changes nothing; the holder's frees it.
    await other.bus.compat.release("id");
    assert.equal(await other.bus.compat.claim("id"), false);
    await holder.bus.compat.release("id");
    assert.equal(await other.bus.compat.claim("id"), true);
  },
);

busCase(
  "compat: a node that closes frees its claims and subscriptions",
  async (engine) => {
    const [a, b] = [await engine.node(), await engine.node()];
    await b.bus.compat.claim("id");
    await b.bus.compat.subscribe("t", 1);
    await b.bus.close();
    assert.equal(await a.bus.compat.claim("id"), true);
    assert.deepEqual(await a.bus.compat.subscribe("t", 1), {
      ok: true,
      remote: 0,
    });
    assert.equal(await a.bus.compat.publish("t", "anyone?"), 0);
  },
);

busCase(
  "park: a parked peer stays a member held by no node, and a resume on another node moves it there with what was held, once, in order",
  async (engine) => {
    const [a, b, c] = [
      await engine.node(),
      await engine.node(),
      await engine.node(),
    ];
    await a.bus.join("s", "p1", 4);
    await b.bus.join("s", "p2", 4);
    const token = "T".repeat(32);
    await a.bus.park("s", "p1", token);
    await settled(
      "b hears p1 parked",
      () => b.events.some((e) => e.kind === "moved" && e.node === ""),
    );
    assert.ok(!b.events.some((e) => e.kind === "left"), "no one left");
    assert.equal((await b.bus.snapshot("s")).members.get("p1"), "");
    // A parked peer's place is kept when the node that parked it goes.
    await a.bus.close();
    for (let i = 0; i < 3; i++) {
      const sent = await b.bus.send({
        session: "s",
        to: "p1",
        from: "p2",
        data: `{"n":${i}}`,
      });
      assert.equal(sent, true);
    }
    assert.equal(
      await b.bus.send({ session: "s", to: "nobody", from: "p2", data: "{}" }),
      false,
    );
    assert.equal(await c.bus.resume("other", token), null, "another session");
    const moved = await c.bus.resume("s", token);
    assert.ok(moved);
    assert.equal(moved.peerId, "p1");
    assert.equal(moved.snapshot.members.get("p1"), c.bus.node);
    assert.deepEqual(moved.held, {
      signals: [0, 1, 2].map((n) => ({ from: "p2", data: `{"n":${n}}` })),
      dropped: [],
    });
    assert.equal(await b.bus.resume("s", token), null, "the token is spent");
    await settled(
      "b hears p1 moved to c",
      () => b.events.some((e) => e.kind === "moved" && e.node === c.bus.node),
    );
    // From now on a signal to it reaches c, and nothing more is held.
    await b.bus.send({ session: "s", to: "p1", from: "p2", data: "{}" });
    await settled("c's delivery", () => c.deliveries.length === 1);
    assert.deepEqual(c.deliveries[0], {
      session: "s",
      to: "p1",
      from: "p2",
      data: "{}",
    });
  },
);

busCase(
  "park: the hold keeps the newest 64 signals within 256 KiB, and names the senders of the dropped ones",
  async (engine) => {
    const [a, b] = [await engine.node(), await engine.node()];
    await a.bus.join("s", "p1", 4);
    await a.bus.join("s", "p2", 4);
    await a.bus.join("s", "p3", 4);
    await a.bus.park("s", "p1", "A".repeat(32));
    const send = (from: string, data: string) =>
      b.bus.send({ session: "s", to: "p1", from, data });
    await send("p3", "0");
    for (let i = 1; i < 70; i++) await send("p2", `${i}`);
    const counted = await b.bus.resume("s", "A".repeat(32));
    assert.ok(counted);
    assert.deepEqual(
      counted.held.signals.map((signal) => signal.data),
      Array.from({ length: 64 }, (_, i) => `${i + 6}`),
    );
    assert.deepEqual(counted.held.dropped.sort(), ["p2", "p3"]);
    // Five signals of 60 KiB: the oldest goes, four (240 KiB) stay.
    await b.bus.park("s", "p1", "B".repeat(32));
    const big = (n: number) => `${n}${"x".repeat(61_439)}`;
    for (let i = 0; i < 5; i++) await send("p2", big(i));
    const sized = await a.bus.resume("s", "B".repeat(32));
    assert.ok(sized);
    assert.deepEqual(
      sized.held.signals.map((signal) => signal.data[0]),
      ["1", "2", "3", "4"],
    );
    assert.deepEqual(sized.held.dropped, ["p2"]);
  },
);
