// The y-webrtc and PeerJS dialects across brokers on Redis, when a broker
// dies: kill -9 of a broker in its own process, and its y-webrtc
// subscriptions and `from`s and its PeerJS ids are removed from Redis by
// the survivor within four heartbeats, so that they can be had again.
import assert from "node:assert/strict";
import { sleep, until } from "../support/ports.ts";
import { Redis } from "ioredis";
import { createRedisBus } from "../../src/signaling/bus/redis.ts";
import { startServer } from "../contract/_servers.ts";
import { TestClient } from "../contract/_wire.ts";
import { DENO_API } from "../support/helpers.ts";
import { haveRedis, spawnBusBroker, startRedis } from "../support/redis.ts";

const HAVE_REDIS = haveRedis();
const HEARTBEAT_MS = 300;

Deno.test({
  name:
    "compat bus: kill -9 of a broker frees its y-webrtc subscriptions and froms and its PeerJS ids within four heartbeats",
  ignore: !HAVE_REDIS,
  async fn() {
    await using redis = await startRedis();
    const bus = await createRedisBus({
      url: redis.url,
      heartbeatMs: HEARTBEAT_MS,
    });
    await using survivor = await startServer(DENO_API, {
      bus,
      signaling: { maxPeersPerSession: 2 },
    });
    const doomed = await spawnBusBroker(redis.url, HEARTBEAT_MS);
    const probe = new Redis(redis.url);
    try {
      const base = `ws://127.0.0.1:${doomed.port}`;
      const there = new TestClient(`${base}/y-webrtc`);
      await there.opened();
      there.send({ type: "subscribe", topics: ["room"] });
      there.send({
        type: "publish",
        topic: "room",
        data: { type: "announce", from: "peer-x" },
      });
      assert.equal((await there.next()).data.from, "peer-x");
      const alice = new TestClient(
        `${base}/peerjs?key=peerjs&id=alice&token=t`,
      );
      assert.deepEqual(await alice.next(), { type: "OPEN" });
      const nodes = await probe.smembers("pod-broker:cnodes");
      assert.equal(nodes.length, 1, "the doomed broker holds a share");
      assert.equal(await probe.hlen("pod-broker:claims"), 2);

      const wsUrl = survivor.url.replace("http", "ws");
      const here = new TestClient(`${wsUrl}/y-webrtc`);
      await here.opened();
      here.send({ type: "subscribe", topics: ["room"] });
      await doomed.kill();
      const killed = Date.now();
      await until(
        async () => (await probe.hlen("pod-broker:claims")) === 0,
        "the claims of the dead broker to go",
        // Four heartbeats on a quiet machine; a loaded one fires the
        // reaper's timers late, so the bound only says that it happens.
        4 * HEARTBEAT_MS + 15_000,
      );
      await until(
        async () =>
          JSON.stringify(await probe.smembers("pod-broker:cnodes")) ===
            JSON.stringify([bus.node]),
        "only the survivor to hold a share",
        15_000,
      );
      const [, topics] = await probe.scan(0, "MATCH", "pod-broker:ct:*");
      assert.equal(topics.length, 1);
      assert.deepEqual(await probe.hgetall(topics[0]!), { [bus.node]: "1" });
      console.log(`reaped after ${Date.now() - killed} ms`);
      // Its place in the topic can be had again (two subscribers at most:
      // the survivor's socket and one more), before anything the survivor
      // does refreshes what it last heard of the other broker's count.
      const second = new TestClient(`${wsUrl}/y-webrtc`);
      await second.opened();
      second.send({ type: "subscribe", topics: ["room"] });
      second.send({ type: "ping" });
      assert.deepEqual(await second.next(), { type: "pong" });
      await sleep(4 * HEARTBEAT_MS);
      second.send({ type: "ping" });
      assert.deepEqual(await second.next(), { type: "pong" }, "not refused");
      // Its from and its id too.
      here.send({
        type: "publish",
        topic: "room",
        data: { type: "announce", from: "peer-x" },
      });
      assert.equal((await here.next()).data.from, "peer-x");
      assert.equal((await second.next()).data.from, "peer-x");
      const heir = new TestClient(
        `${wsUrl}/peerjs?key=peerjs&id=alice&token=other`,
      );
      assert.deepEqual(await heir.next(), { type: "OPEN" });
      for (const client of [here, second, heir, there, alice]) {
        await client.close();
      }
    } finally {
      probe.disconnect();
      await doomed.kill();
      await survivor.server.close();
      await bus.close();
    }
  },
});
