// Signaling across brokers: several brokers (real Deno servers on 127.0.0.1)
// sharing a private redis-server through RedisBus, plus the same cluster
// logic on the in-process LocalBus. Each broker holds its own peers; the
// tests check what the clients of different brokers see.
import assert from "node:assert/strict";
import { until } from "../support/ports.ts";
import { Redis } from "ioredis";
import type { LogLevel } from "../../src/_util/log.ts";
import { type Bus, LocalBus } from "../../src/signaling/bus/mod.ts";
import { createRedisBus, REAP_BATCH } from "../../src/signaling/bus/redis.ts";
import { heldBytes } from "../../src/signaling/bus/held.ts";
import { MAX_COMPAT_MESSAGE_CHARS } from "../../src/signaling/bus/redis_compat.ts";
import type { SignalServerOptions } from "../../src/config/types.ts";
import {
  signedPod,
  startServer,
  type TestServer,
  upload,
} from "../support/helpers.ts";
import {
  haveRedis,
  spawnBusBroker,
  startRedis,
  type TestRedis,
} from "../support/redis.ts";
import { rawHandshake, TestClient } from "../support/ws.ts";

const OFFER = { sdp: { type: "offer", sdp: "v=0\r\n" } };
const ANSWER = { sdp: { type: "answer", sdp: "v=0\r\n" } };
const CANDIDATE = {
  candidate: { candidate: "candidate:1 1 udp 1 1.2.3.4 5 typ host" },
};

const HAVE_REDIS = haveRedis();
const redisTest = (name: string, fn: () => Promise<void>) =>
  Deno.test({ name, ignore: !HAVE_REDIS && !Deno.env.get("CI"), fn });

interface Broker extends AsyncDisposable {
  t: TestServer;
  bus: Bus;
  logs: string[];
  health(): Promise<Record<string, unknown>>;
}

/** A broker on a bus; its log lines are kept to check for secrets. */
async function startBroker(
  bus: Bus,
  signaling: SignalServerOptions["signaling"] = {},
): Promise<Broker> {
  const logs: string[] = [];
  const logger = (level: LogLevel, msg: string, fields?: object) =>
    logs.push(JSON.stringify({ level, msg, ...fields }));
  const t = await startServer(
    { logger, signaling, bus } as Partial<SignalServerOptions>,
  );
  return {
    t,
    bus,
    logs,
    health: async () => await (await fetch(`${t.url}/health`)).json(),
    [Symbol.asyncDispose]: async () => {
      await t.server.close();
      await bus.close();
    },
  };
}

async function redisBroker(
  redis: TestRedis,
  signaling: SignalServerOptions["signaling"] = {},
  heartbeatMs = 300,
): Promise<Broker> {
  const logs: string[] = [];
  const bus = await createRedisBus({
    url: redis.url,
    heartbeatMs,
    logger: (level, msg, fields) =>
      logs.push(JSON.stringify({ level, msg, ...fields })),
  });
  const broker = await startBroker(bus, signaling);
  broker.logs.push(...logs);
  return broker;
}

/** Proves nothing else is queued for `client`: a bad frame's error comes next. */
async function assertNothingElse(client: TestClient): Promise<void> {
  client.send("{");
  assert.equal((await client.next()).code, "bad_json");
}

/** Three clients on three brokers: joined lists, relays, peer-left. */
async function crossBrokerJourney(brokers: Broker[], session: string) {
  const [a, b, c] = brokers.map((broker) => new TestClient(broker.t.wsUrl));
  const joinedA = await a!.join(session);
  const joinedB = await b!.join(session);
  assert.deepEqual(joinedB.peers, [joinedA.peerId]);
  assert.deepEqual(await a!.next(), {
    type: "peer-joined",
    peerId: joinedB.peerId,
  });
  const joinedC = await c!.join(session);
  assert.deepEqual(
    [...joinedC.peers].sort(),
    [joinedA.peerId, joinedB.peerId].sort(),
  );
  for (const client of [a!, b!]) {
    assert.deepEqual(await client.next(), {
      type: "peer-joined",
      peerId: joinedC.peerId,
    });
  }
  const ids = new Set([joinedA.peerId, joinedB.peerId, joinedC.peerId]);
  assert.equal(ids.size, 3);

  // Offer A -> B, answer B -> A, candidates both ways: addressee only.
  a!.send({ type: "signal", to: joinedB.peerId, data: OFFER });
  assert.deepEqual(await b!.next(), {
    type: "signal",
    from: joinedA.peerId,
    data: OFFER,
  });
  b!.send({ type: "signal", to: joinedA.peerId, data: ANSWER });
  assert.deepEqual(await a!.next(), {
    type: "signal",
    from: joinedB.peerId,
    data: ANSWER,
  });
  for (const data of [CANDIDATE, { candidate: null }]) {
    a!.send({ type: "signal", to: joinedB.peerId, data });
    b!.send({ type: "signal", to: joinedA.peerId, data });
    assert.deepEqual(await b!.next(), {
      type: "signal",
      from: joinedA.peerId,
      data,
    });
    assert.deepEqual(await a!.next(), {
      type: "signal",
      from: joinedB.peerId,
      data,
    });
  }
  await assertNothingElse(c!);
  // A peer another broker never had is unknown.
  a!.send({ type: "signal", to: "AAAAAAAAAAAAAAAA", data: OFFER });
  assert.equal((await a!.next()).code, "unknown_peer");

  b!.send({ type: "leave" });
  assert.equal((await b!.closed).code, 1000);
  for (const client of [a!, c!]) {
    assert.deepEqual(await client.next(), {
      type: "peer-left",
      peerId: joinedB.peerId,
    });
  }
  await c!.close();
  assert.deepEqual(await a!.next(), {
    type: "peer-left",
    peerId: joinedC.peerId,
  });
  await assertNothingElse(a!);
  await a!.close();
}

Deno.test("LocalBus: peers of one session on three hubs see each other and relay to the addressee only", async () => {
  const local = new LocalBus();
  await using a = await startBroker(local.connect());
  await using b = await startBroker(local.connect());
  await using c = await startBroker(local.connect());
  await crossBrokerJourney([a, b, c], "local-room");
  assert.deepEqual((await a.health()).bus, "up");
});

Deno.test("LocalBus: maxPeersPerSession holds across hubs under concurrent joins", async () => {
  const local = new LocalBus();
  const signaling = { maxPeersPerSession: 3 };
  await using a = await startBroker(local.connect(), signaling);
  await using b = await startBroker(local.connect(), signaling);
  await assertFullAcross([a, b, a, b, a, b, a, b], 3);
});

/** `clients` join at once through their brokers: `max` get in, the rest are told session_full. */
async function assertFullAcross(brokers: Broker[], max: number) {
  const clients = brokers.map((broker) => new TestClient(broker.t.wsUrl));
  await Promise.all(clients.map((client) => client.opened()));
  for (const client of clients) client.send({ type: "join", session: "full" });
  const first = await Promise.all(clients.map((client) => client.next()));
  const joined = first.filter((frame) => frame.type === "joined");
  const full = first.filter((frame) => frame.code === "session_full");
  assert.equal(joined.length, max, JSON.stringify(first));
  assert.equal(full.length, clients.length - max);
  assert.equal(new Set(joined.map((frame) => frame.peerId)).size, max);
  await Promise.all(clients.map((client) => client.close()));
}

redisTest(
  "RedisBus: three brokers on one Redis share sessions; events go only to brokers with peers there",
  async () => {
    await using redis = await startRedis();
    await using a = await redisBroker(redis);
    await using b = await redisBroker(redis);
    await using c = await redisBroker(redis);
    await crossBrokerJourney([a, b, c], "room-1");

    // Each broker subscribes to its own channel and nothing per session;
    // a session's events reach the brokers that hold a peer there, and no
    // other.
    const probe = new Redis(redis.url);
    const listener = new Redis(redis.url);
    try {
      const channels = await probe.pubsub(
        "CHANNELS",
        "pod-broker:*",
      ) as string[];
      assert.equal(channels.length, 3, channels.join(", "));
      assert.ok(channels.every((name) => name.startsWith("pod-broker:n:")));
      const told = new Map<string, string[]>();
      listener.on(
        "pmessage",
        (_pattern: string, channel: string, message: string) => {
          if (message.split(" ")[1] !== "room-2") return;
          told.set(channel, [...told.get(channel) ?? [], message[0]!]);
        },
      );
      await listener.psubscribe("pod-broker:n:*");
      const x = new TestClient(a.t.wsUrl);
      const y = new TestClient(b.t.wsUrl);
      await x.join("room-2");
      await y.join("room-2");
      // x joined (A told), y joined (A and B told), x left (B told); y's
      // leave, once x's is done, has no one left to tell. (Closed at once,
      // their leaves could come in either order.)
      await x.close();
      await until(
        () => Promise.resolve([...told.values()].flat().length === 4),
        "four events",
      );
      await y.close();
      assert.equal(told.size, 2, "A and B, not C");
      assert.deepEqual(
        [...told.values()].map((kinds) => kinds.join("")).sort(),
        ["+!", "++"],
      );
      // The session's keys go with its last peer.
      await until(
        async () => (await probe.exists("pod-broker:session:room-2")) === 0,
        "the session hash to go",
      );
      assert.equal(
        (await probe.pubsub("CHANNELS", "pod-broker:*") as string[]).length,
        3,
      );
    } finally {
      probe.disconnect();
      listener.disconnect();
    }
    const health = await c.health();
    assert.equal(health.bus, "up");
    assert.equal(health.peers, 0);
    for (const broker of [a, b, c]) {
      assert.ok(!broker.logs.join("\n").includes(redis.password));
    }
  },
);

redisTest(
  "RedisBus: session_full holds across three brokers under concurrent joins",
  async () => {
    await using redis = await startRedis();
    const signaling = { maxPeersPerSession: 4 };
    await using a = await redisBroker(redis, signaling);
    await using b = await redisBroker(redis, signaling);
    await using c = await redisBroker(redis, signaling);
    await assertFullAcross([a, b, c, a, b, c, a, b, c, a, b, c], 4);
  },
);

redisTest(
  "RedisBus: kill -9 of a broker is reported as peer-left on the others within four heartbeats",
  async () => {
    await using redis = await startRedis();
    const heartbeatMs = 300;
    await using a = await redisBroker(redis, {}, heartbeatMs);
    const child = await spawnBusBroker(redis.url, heartbeatMs);
    try {
      const port = child.port;
      const doomed = new TestClient(`ws://127.0.0.1:${port}/signal`);
      const survivor = new TestClient(a.t.wsUrl);
      const joinedDoomed = await doomed.join("kill-room");
      const joinedSurvivor = await survivor.join("kill-room");
      assert.deepEqual(joinedSurvivor.peers, [joinedDoomed.peerId]);
      await child.kill();
      await doomed.closed;
      // Three missed beats make it dead; the next beat of A reaps it.
      assert.deepEqual(await survivor.next(4 * heartbeatMs + 15_000), {
        type: "peer-left",
        peerId: joinedDoomed.peerId,
      });
      await survivor.close();
    } finally {
      await child.kill();
    }
  },
);

redisTest(
  "RedisBus: the peers of a dead broker are removed in script calls of at most REAP_BATCH, so Redis serves others between them",
  async () => {
    await using redis = await startRedis();
    const probe = new Redis(redis.url);
    const watcher = new Redis(redis.url);
    try {
      // A broker that died holding 1,200 peers in 40 sessions, as its JOINs
      // left them in Redis; its heartbeat entry lapsed long ago.
      const dead = "dead000000000000";
      const peers = 1_200;
      const write = probe.pipeline().zadd("pod-broker:nodes", 0, dead);
      for (let i = 0; i < peers; i++) {
        const peer = `P${String(i).padStart(15, "0")}`;
        const session = `reap-${i % 40}`;
        write.hset(`pod-broker:node:${dead}`, peer, session);
        write.hset(`pod-broker:session:${session}`, peer, dead);
        write.hset("pod-broker:peers", peer, dead);
      }
      await write.exec();
      // Every command Redis runs, in order; a script's commands ("lua") come
      // in one unbroken run, since a script is atomic. A removed peer is
      // one INCR of the change number; no PUBLISH goes to the dead broker.
      const runs: number[] = [0];
      let published = 0;
      const monitor = await watcher.monitor();
      monitor.on("monitor", (_time: string, args: string[], source: string) => {
        const command = args[0]?.toLowerCase();
        if (source !== "lua") {
          if (runs.at(-1) !== 0) runs.push(0);
        } else if (command === "incr") {
          runs[runs.length - 1]! += 1;
        } else if (command === "publish") {
          published += 1;
        }
      });
      const bus = await createRedisBus({ url: redis.url, heartbeatMs: 100 });
      try {
        await until(
          async () =>
            (await probe.zscore("pod-broker:nodes", dead)) === null &&
            (await probe.hlen("pod-broker:peers")) === 0,
          "the dead broker to be reaped",
        );
      } finally {
        await bus.close();
      }
      monitor.disconnect();
      const removed = runs.reduce((sum, run) => sum + run, 0);
      assert.equal(removed, peers, "one change per peer");
      assert.equal(published, 0, "nothing told to the dead broker");
      assert.ok(
        Math.max(...runs) <= REAP_BATCH,
        `a script call removed ${Math.max(...runs)} peers`,
      );
      assert.equal(await probe.exists(`pod-broker:node:${dead}`), 0);
      assert.equal(await probe.exists("pod-broker:session:reap-7"), 0);
    } finally {
      probe.disconnect();
      watcher.disconnect();
    }
  },
);

redisTest(
  "RedisBus: while Redis is down pods are served and /signal answers 503 bus_down; after a restart joins work again",
  async () => {
    await using redis = await startRedis();
    await using a = await redisBroker(redis);
    await using b = await redisBroker(redis);
    const x = new TestClient(a.t.wsUrl);
    const y = new TestClient(b.t.wsUrl);
    await x.join("restart-room");
    await y.join("restart-room");
    assert.equal((await x.next()).type, "peer-joined");

    await redis.kill();
    for (const broker of [a, b]) {
      await until(async () => (await broker.health()).bus === "down", "down");
    }
    const refused = await rawHandshake(a.t.server.port);
    refused.conn.close();
    assert.equal(refused.status, 503);
    assert.match(refused.head, /bus_down|application\/problem\+json/);
    const pod = await signedPod();
    const created = await upload(a.t.url, pod);
    assert.equal(created.status, 201);
    const { id } = await created.json();
    const served = await fetch(`${a.t.url}/${id}`);
    assert.equal(served.status, 200);
    await served.body?.cancel();

    // Redis comes back empty: the brokers' peers are gone from it, so they
    // are closed with 1013 (try again later) and their clients join again.
    await redis.start();
    assert.equal((await x.closed).code, 1013);
    assert.equal((await y.closed).code, 1013);
    for (const broker of [a, b]) {
      await until(async () => (await broker.health()).bus === "up", "up");
    }
    const x2 = new TestClient(a.t.wsUrl);
    const y2 = new TestClient(b.t.wsUrl);
    const joinedX2 = await x2.join("restart-room");
    const joinedY2 = await y2.join("restart-room");
    assert.deepEqual(joinedY2.peers, [joinedX2.peerId]);
    y2.send({ type: "signal", to: joinedX2.peerId, data: OFFER });
    assert.equal((await x2.next()).type, "peer-joined");
    assert.deepEqual(await x2.next(), {
      type: "signal",
      from: joinedY2.peerId,
      data: OFFER,
    });
    await x2.close();
    await y2.close();
    for (const broker of [a, b]) {
      const text = broker.logs.join("\n") +
        JSON.stringify(await broker.health());
      assert.ok(
        !text.includes(redis.password),
        "no password in logs or /health",
      );
    }
  },
);

redisTest(
  "createRedisBus() refuses a non-Redis URL and an unreachable Redis without naming the password",
  async () => {
    await assert.rejects(
      createRedisBus({ url: "http://127.0.0.1:1" }),
      /Cannot use the Redis URL/,
    );
    const port = (() => {
      const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
      const { port } = listener.addr as Deno.NetAddr;
      listener.close();
      return port;
    })();
    const error = await createRedisBus({
      url: `redis://:sekrit-pw@127.0.0.1:${port}`,
      connectTimeoutMs: 300,
    }).then(() => null, (error: Error) => error);
    assert.ok(error instanceof Error);
    assert.match(error.message, /^Cannot connect to the Redis bus/);
    assert.ok(!error.message.includes("sekrit-pw"));
  },
);

redisTest(
  "openBus() opens a RedisBus for --bus redis and refuses bad flags",
  async () => {
    const { openBus } = await import("../../src/cli/serve_flags.ts");
    await using redis = await startRedis();
    assert.equal(await openBus({}, {}), undefined);
    await assert.rejects(
      openBus({ bus: "kafka" }, {}),
      /Cannot use --bus 'kafka'/,
    );
    await assert.rejects(openBus({ bus: "redis" }, {}), /needs --redis-url/);
    await assert.rejects(
      openBus({ "redis-url": redis.url }, {}),
      /--redis-url needs --bus redis/,
    );
    const bus = await openBus({ bus: "redis" }, { REDIS_URL: redis.url });
    assert.equal(bus?.state, "up");
    await bus?.close();
  },
);

redisTest(
  "RedisBus: a parked peer's resume token is nowhere in Redis, only its digest; the token still resumes it",
  async () => {
    await using redis = await startRedis();
    const bus = await createRedisBus({ url: redis.url });
    const other = await createRedisBus({ url: redis.url });
    const probe = new Redis(redis.url);
    try {
      assert.ok((await bus.join("s", "p1", 4)).ok);
      const token = "T".repeat(16) + crypto.randomUUID().replaceAll("-", "")
        .slice(0, 16);
      await bus.park("s", "p1", token);
      const keys = await probe.keys("*");
      assert.ok(keys.length > 0);
      for (const key of keys) {
        assert.ok(!key.includes(token), `a key names the token: ${key}`);
        const type = await probe.type(key);
        const values = type === "string"
          ? [await probe.get(key)]
          : type === "hash"
          ? Object.values(await probe.hgetall(key))
          : [];
        for (const value of values) {
          assert.ok(!value?.includes(token), `${key} holds the token`);
        }
      }
      const resumed = await other.resume("s", token);
      assert.ok(resumed !== null, "the token resumes it");
      assert.equal(resumed.peerId, "p1");
    } finally {
      probe.disconnect();
      await other.close();
      await bus.close();
    }
  },
);

redisTest(
  "RedisBus: what one broker's peers put into the holds of away peers, all of them together, stays within its signaling.maxHeldBytes; a signal past it is dropped and its sender named, and signals to peers that are here pass",
  async () => {
    await using redis = await startRedis();
    const away = await createRedisBus({ url: redis.url });
    const delivered: string[] = [];
    away.attach({
      event: () => {},
      deliver: (delivery) => delivered.push(delivery.data),
      state: () => {},
    });
    const data = (c: string) => ({ candidate: { candidate: c.repeat(40) } });
    const size = heldBytes(JSON.stringify(data("a")));
    await using broker = await startBroker(
      await createRedisBus({ url: redis.url }),
      { maxHeldBytes: 2 * size },
    );
    const probe = new Redis(redis.url);
    const client = new TestClient(broker.t.wsUrl);
    try {
      for (const peer of ["p1", "p2"]) {
        assert.ok((await away.join("held", peer, 4)).ok);
      }
      await away.park("held", "p1", "A".repeat(32));
      await away.park("held", "p2", "B".repeat(32));
      const { peerId, peers } = await client.join("held");
      assert.deepEqual([...peers].sort(), ["p1", "p2"]);
      // Two to p1 fill the broker's bound; one more, to another away peer,
      // does not fit.
      client.send({ type: "signal", to: "p1", data: data("a") });
      client.send({ type: "signal", to: "p1", data: data("c") });
      client.send({ type: "signal", to: "p2", data: data("b") });
      await until(
        async () =>
          await probe.llen("pod-broker:held:p1") === 2 &&
          await probe.sismember("pod-broker:dropped:p2", peerId) === 1,
        "two signals held for p1, and p2 told of a dropped one",
        10_000,
      );
      const first = await away.resume("held", "A".repeat(32));
      assert.deepEqual(first?.held, {
        signals: ["a", "c"].map((c) => ({
          from: peerId,
          data: JSON.stringify(data(c)),
        })),
        dropped: [],
      });
      const second = await away.resume("held", "B".repeat(32));
      assert.deepEqual(second?.held, { signals: [], dropped: [peerId] });
      // p1 is here again: what reaches it is not held, and not counted.
      client.send({ type: "signal", to: "p1", data: data("d") });
      await until(() => delivered.length === 1, "the delivery to p1", 10_000);
      assert.deepEqual(delivered, [JSON.stringify(data("d"))]);
    } finally {
      await client.close();
      probe.disconnect();
      await away.close();
    }
  },
);

redisTest(
  "RedisBus: a dialect message on Redis over MAX_COMPAT_MESSAGE_CHARS is dropped unread; one within it is delivered",
  async () => {
    await using redis = await startRedis();
    const bus = await createRedisBus({ url: redis.url });
    const probe = new Redis(redis.url);
    const directs: string[] = [];
    bus.attach({ event: () => {}, deliver: () => {}, state: () => {} });
    bus.compat.attach({
      topic: () => {},
      direct: (_key, message) => directs.push(message),
    });
    try {
      const channel = `pod-broker:n:${bus.node}`;
      const message = (text: string) => `~c${JSON.stringify(["ikey", text])}`;
      await probe.publish(
        channel,
        message("x".repeat(MAX_COMPAT_MESSAGE_CHARS)),
      );
      await probe.publish(channel, message("small"));
      await until(() => directs.length > 0, "the small message");
      assert.deepEqual(directs, ["small"]);
    } finally {
      probe.disconnect();
      await bus.close();
    }
  },
);
