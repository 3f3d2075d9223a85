// Signaling across brokers on Redis (issue 14) on both runtimes: two brokers
// in one process, each with its own RedisBus on one private redis-server
// (started here with node:child_process). Runs on Deno and on the npm
// package under Node 22 (see _suite.ts).
import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { spawn, spawnSync } from "node:child_process";
import { chownSync, existsSync, readdirSync } from "node:fs";
import { writeFile } from "node:fs/promises";
import { connect } from "node:net";
import { join } from "node:path";
import process from "node:process";
import { assertProblem, signedPod, upload } from "./_pods.ts";
import {
  freePort,
  sleep,
  startServer,
  tempDir,
  type TestServer,
  waitForPort,
} from "./_servers.ts";
import { type ContractApi, test } from "./_suite.ts";
import type { SignalServerOptions } from "../../src/core.ts";
import { assertSessionAcross, TestClient } from "./_wire.ts";

const REDIS_SERVER = "/usr/bin/redis-server";

/** A private redis-server: a 0600 config file (the password is not in argv). */
interface ContractRedis extends AsyncDisposable {
  port: number;
  password: string;
  url: string;
}

/** Starts redis-server, or returns null (and says so) when it is missing. */
export async function startRedis(): Promise<ContractRedis | null> {
  if (!existsSync(REDIS_SERVER)) {
    if (process.env.CI) throw new Error(`${REDIS_SERVER} is missing`);
    console.error(`\n!!! ${REDIS_SERVER} is missing: this case is SKIPPED\n`);
    return null;
  }
  const dir = await tempDir("pod-broker-redis-");
  const port = await freePort();
  const password = `pw-${crypto.randomUUID()}`;
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
  const stop = async () => {
    redis.kill("SIGKILL");
    await exited;
    await dir[Symbol.asyncDispose]();
  };
  try {
    await waitForPort(port, "redis-server");
  } catch (error) {
    await stop();
    throw error;
  }
  return {
    port,
    password,
    url: `redis://:${password}@127.0.0.1:${port}`,
    [Symbol.asyncDispose]: stop,
  };
}

/**
 * Two brokers on one private Redis, each with its RedisBus and `more`
 * options; or null.
 */
export async function twoBrokers(
  api: ContractApi,
  signaling: Record<string, number> = {},
  more: Partial<SignalServerOptions> = {},
): Promise<
  | (AsyncDisposable & { a: TestServer; b: TestServer })
  | null
> {
  const redis = await startRedis();
  if (redis === null) return null;
  // The default heartbeat: these cases never wait for a broker to be taken
  // for dead, and a short one (lapsing after three beats) lets a stall of a
  // loaded machine take a live broker for dead and free its ids.
  const buses = [
    await api.createRedisBus({ url: redis.url }),
    await api.createRedisBus({ url: redis.url }),
  ];
  const [a, b] = [
    await startServer(api, { ...more, bus: buses[0]!, signaling }),
    await startServer(api, { ...more, bus: buses[1]!, signaling }),
  ];
  return {
    a,
    b,
    async [Symbol.asyncDispose]() {
      await a.server.close();
      await b.server.close();
      for (const bus of buses) await bus.close();
      await redis[Symbol.asyncDispose]();
    },
  };
}

/**
 * Sends commands to Redis over a raw connection (RESP), as anyone who can
 * reach it could, and returns the replies as text lines.
 */
function rawRedis(
  redis: ContractRedis,
  commands: string[][],
): Promise<string[]> {
  const encode = (args: string[]) =>
    `*${args.length}\r\n` +
    args.map((arg) => `$${Buffer.byteLength(arg)}\r\n${arg}\r\n`).join("");
  return new Promise((resolve, reject) => {
    const socket = connect(redis.port, "127.0.0.1");
    let text = "";
    socket.setEncoding("utf8");
    socket.on("error", reject);
    socket.on("data", (chunk: string) => {
      text += chunk;
      const replies = text.split("\r\n").filter((line) => line !== "");
      if (replies.length >= commands.length) {
        socket.end();
        resolve(replies);
      }
    });
    socket.write(
      [["AUTH", redis.password], ...commands.slice(1)].map(encode).join(""),
    );
  });
}

test("bus: peers of one session on two brokers see each other and signal through Redis", async (api) => {
  await using redis = await startRedis();
  if (redis === null) return;
  const { url, password } = redis;
  const busA = await api.createRedisBus({ url });
  const busB = await api.createRedisBus({ url });
  try {
    await using a = await startServer(api, { bus: busA });
    await using b = await startServer(api, { bus: busB });
    const health = await (await fetch(`${a.url}/health`)).json();
    assert.equal(health.bus, "up");
    assert.ok(!JSON.stringify(health).includes(password));
    await assertSessionAcross(a.wsUrl, b.wsUrl, "across");
  } finally {
    await busA.close();
    await busB.close();
  }
});

test("security 8: a message PUBLISHed on Redis cannot put a rogue ice frame or a non-member's signal into a browser", async (api) => {
  await using redis = await startRedis();
  if (redis === null) return;
  const busA = await api.createRedisBus({ url: redis.url });
  const busB = await api.createRedisBus({ url: redis.url });
  try {
    await using a = await startServer(api, { bus: busA });
    await using b = await startServer(api, { bus: busB });
    const victim = new TestClient(a.wsUrl);
    const { peerId: victimId } = await victim.join("sec8");
    const honest = new TestClient(b.wsUrl);
    const { peerId: honestId } = await honest.join("sec8");
    assert.equal((await victim.next()).type, "peer-joined");

    const rogueIce = JSON.stringify({
      type: "ice",
      iceServers: [{
        urls: ["turn:203.0.113.66:3478"],
        username: "attacker",
        credential: "attacker",
      }],
    });
    const stranger = "ZZZZZZZZZZZZZZZZ";
    const rogueSignal = (from: string) =>
      JSON.stringify({ type: "signal", from, data: { candidate: null } });
    const channel = `pod-broker:n:${busA.node}`;
    const messages = [
      // Ready frames, as a broker used to publish them.
      `sec8 ${victimId} ${rogueIce}`,
      `sec8 ${victimId} ${rogueSignal(stranger)}`,
      `sec8 ${victimId} ${rogueSignal(honestId)}`,
      // {from, data}: a sender that is no member, and data that is no signal.
      `sec8 ${victimId} ${stranger} {"candidate":null}`,
      `sec8 ${victimId} ${honestId} ${rogueIce}`,
      `sec8 ${victimId} ${honestId} {"iceServers":[{"urls":"turn:203.0.113.66"}]}`,
      `sec8 ${victimId} ${honestId} {"sdp":{"type":"offer","sdp":"v=0"},"x":1}`,
      `sec8 ${victimId} ${honestId} {"candidate":"${"x".repeat(70_000)}"}`,
      `other ${victimId} ${honestId} {"candidate":null}`,
      `sec8 ${victimId} ${victimId} {"candidate":null}`,
    ];
    const replies = await rawRedis(redis, [
      ["AUTH"],
      ...messages.map((message) => ["PUBLISH", channel, message]),
    ]);
    // Each reached broker A's subscription (one receiver each).
    assert.deepEqual(replies, ["+OK", ...messages.map(() => ":1")]);

    // An honest cross-broker signal still passes, and is the victim's next
    // frame: nothing the raw PUBLISHes carried came before it.
    const data = { sdp: { type: "offer", sdp: "v=0\r\n" } };
    honest.send({ type: "signal", to: victimId, data });
    assert.deepEqual(await victim.next(), {
      type: "signal",
      from: honestId,
      data,
    });
    victim.send({ type: "signal", to: honestId, data: { candidate: null } });
    assert.deepEqual(await honest.next(), {
      type: "signal",
      from: victimId,
      data: { candidate: null },
    });
    assert.equal(victim.pending, 0);
    await victim.close();
    await honest.close();
  } finally {
    await busA.close();
    await busB.close();
  }
});

/** Debian's PostgreSQL server binaries (`/usr/lib/postgresql/N/bin`), or null. */
function postgresBin(): string | null {
  const root = "/usr/lib/postgresql";
  if (!existsSync(root)) return null;
  for (const version of readdirSync(root).sort().reverse()) {
    if (existsSync(`${root}/${version}/bin/initdb`)) {
      return `${root}/${version}/bin`;
    }
  }
  return null;
}

function chownTree(path: string, uid: number, gid: number): void {
  chownSync(path, uid, gid);
  for (const entry of readdirSync(path, { withFileTypes: true })) {
    const child = join(path, entry.name);
    if (entry.isDirectory()) chownTree(child, uid, gid);
    else chownSync(child, uid, gid);
  }
}

test("registry: PostgresRegistry behind a broker stores, serves, counts and takes down", async (api) => {
  const bin = postgresBin();
  if (bin === null) {
    if (process.env.CI) throw new Error("PostgreSQL is missing");
    console.error("\n!!! PostgreSQL is missing: this case is SKIPPED\n");
    return;
  }
  await using dir = await tempDir("pod-broker-pg-");
  const password = `pw-${crypto.randomUUID()}`;
  await writeFile(join(dir.path, "pwfile"), `${password}\n`, { mode: 0o600 });
  // initdb and postgres refuse root: run them as the postgres user.
  let asUser: string[] = [];
  if (process.getuid?.() === 0) {
    const id = (flag: string) =>
      Number(spawnSync("id", [flag, "postgres"], { encoding: "utf8" }).stdout);
    const [uid, gid] = [id("-u"), id("-g")];
    chownTree(dir.path, uid, gid);
    asUser = [`--reuid=${uid}`, `--regid=${gid}`, "--init-groups", "--"];
  }
  const run = (program: string, args: string[]) =>
    asUser.length
      ? ["/usr/bin/setpriv", [...asUser, `${bin}/${program}`, ...args]] as const
      : [`${bin}/${program}`, args] as const;
  const data = join(dir.path, "data");
  const [initCmd, initArgs] = run("initdb", [
    "-D",
    data,
    "-U",
    "postgres",
    `--pwfile=${join(dir.path, "pwfile")}`,
    "--auth-host=scram-sha-256",
    "--no-sync",
  ]);
  const init = spawnSync(initCmd, initArgs, {
    encoding: "utf8",
    env: { ...process.env, LC_ALL: "C" },
  });
  assert.equal(init.status, 0, init.stderr);
  const port = await freePort();
  const [pgCmd, pgArgs] = run("postgres", [
    "-D",
    data,
    "-p",
    String(port),
    "-k",
    dir.path,
    "-c",
    "listen_addresses=127.0.0.1",
    "-c",
    "fsync=off",
  ]);
  const server = spawn(pgCmd, pgArgs, {
    stdio: "ignore",
    env: { ...process.env, LC_ALL: "C" },
  });
  const exited = new Promise((resolve) => server.once("exit", resolve));
  try {
    await waitForPort(port, "PostgreSQL");
    // The port accepts connections a moment before the server takes them
    // (57P03, "the database system is starting up"): try again briefly.
    const url = `postgres://postgres:${password}@127.0.0.1:${port}/postgres`;
    let registry: InstanceType<typeof api.PostgresRegistry> | undefined;
    for (let attempt = 0; registry === undefined; attempt++) {
      try {
        registry = await api.PostgresRegistry.open({ url });
      } catch (error) {
        if (attempt >= 100 || !/57P03/.test(String(error))) throw error;
        await sleep(50);
      }
    }
    try {
      await using t = await startServer(api, { registry });
      const pod = await signedPod(api);
      const created = await upload(t.url, pod);
      assert.equal(created.status, 201);
      const { id } = await created.json();
      const got = await fetch(`${t.url}/${id}`);
      assert.deepEqual(new Uint8Array(await got.arrayBuffer()), pod);
      const meta = await (await fetch(`${t.url}/${id}/meta`)).json();
      assert.equal(meta.blobSize, pod.length);
      assert.equal(await registry.deletePod(id), true);
      await assertProblem(await fetch(`${t.url}/${id}`), 410, "pod_deleted");
    } finally {
      await registry.close();
    }
  } finally {
    // postgres runs under setpriv, which execs: this pid is the postmaster.
    server.kill("SIGINT");
    await exited;
  }
});
