// Signaling across brokers on Redis (issue 14) on both runtimes: two brokers
// in one process, each with its own RedisBus on one private redis-server
// (started here with node:child_process). Runs on Deno and on the npm
// package under Node 22 (see _support.ts).
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { writeFile } from "node:fs/promises";
import { connect, createServer } from "node:net";
import { join } from "node:path";
import process from "node:process";
import {
  collect,
  sleep,
  startServer,
  tempDir,
  TestClient,
} from "./_support.ts";

const { cases, test } = collect();

/** The scale-out cases. */
export const SCALEOUT_CASES = cases;

const REDIS_SERVER = "/usr/bin/redis-server";

async function freePort(): Promise<number> {
  const server = createServer();
  const port = await new Promise<number>((resolve) =>
    server.listen(
      0,
      "127.0.0.1",
      () => resolve((server.address() as { port: number }).port),
    )
  );
  await new Promise((resolve) => server.close(resolve));
  return port;
}

test("bus: peers of one session on two brokers see each other and signal through Redis", async (api) => {
  if (!existsSync(REDIS_SERVER)) {
    if (process.env.CI) throw new Error(`${REDIS_SERVER} is missing`);
    console.error(`\n!!! ${REDIS_SERVER} is missing: this case is SKIPPED\n`);
    return;
  }
  await using dir = await tempDir("pod-broker-redis-");
  const port = await freePort();
  const password = `pw-${crypto.randomUUID()}`;
  // The password in a 0600 file, not on the command line.
  await writeFile(
    join(dir.path, "redis.conf"),
    [
      "bind 127.0.0.1",
      `port ${port}`,
      `dir ${dir.path}`,
      'save ""',
      "appendonly no",
      `requirepass ${password}`,
      "",
    ].join("\n"),
    { mode: 0o600 },
  );
  const redis = spawn(REDIS_SERVER, [join(dir.path, "redis.conf")], {
    stdio: "ignore",
  });
  const exited = new Promise((resolve) => redis.once("exit", resolve));
  try {
    for (let attempt = 0;; attempt++) {
      const up = await new Promise<boolean>((resolve) => {
        const socket = connect(port, "127.0.0.1");
        socket.once("connect", () => {
          socket.destroy();
          resolve(true);
        });
        socket.once("error", () => resolve(false));
      });
      if (up) break;
      assert.ok(attempt < 100, "redis-server did not start");
      await sleep(50);
    }
    const url = `redis://:${password}@127.0.0.1:${port}`;
    const busA = await api.createRedisBus({ url });
    const busB = await api.createRedisBus({ url });
    try {
      await using a = await startServer(api, { bus: busA });
      await using b = await startServer(api, { bus: busB });
      const health = await (await fetch(`${a.url}/health`)).json();
      assert.equal(health.bus, "up");
      assert.ok(!JSON.stringify(health).includes(password));
      const onA = new TestClient(a.wsUrl);
      const joinedA = await onA.join("across");
      const onB = new TestClient(b.wsUrl);
      const joinedB = await onB.join("across");
      assert.deepEqual(joinedB.peers, [joinedA.peerId]);
      assert.deepEqual(await onA.next(), {
        type: "peer-joined",
        peerId: joinedB.peerId,
      });
      const data = { candidate: null };
      onB.send({ type: "signal", to: joinedA.peerId, data });
      assert.deepEqual(await onA.next(), {
        type: "signal",
        from: joinedB.peerId,
        data,
      });
      onB.ws.close();
      await onB.closed;
      assert.deepEqual(await onA.next(), {
        type: "peer-left",
        peerId: joinedB.peerId,
      });
      onA.ws.close();
      await onA.closed;
    } finally {
      await busA.close();
      await busB.close();
    }
  } finally {
    redis.kill("SIGKILL");
    await exited;
  }
});
