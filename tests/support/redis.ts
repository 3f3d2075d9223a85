// A private redis-server for the bus tests: a config file in a temp dir
// (the password is in the file, never in argv), a free port, no persistence,
// stopped by PID. `restart()` stops it and starts it again on the same port,
// empty, as a crashed Redis without persistence comes back.
import { existsSync } from "node:fs";
import { freePort, waitForPort } from "./ports.ts";
import { signalChild } from "./child_stop.ts";

/** Debian's Redis server. */
export const REDIS_SERVER = "/usr/bin/redis-server";

/** Whether redis-server is installed; prints a loud notice when it is not. */
export function haveRedis(): boolean {
  const have = existsSync(REDIS_SERVER);
  if (!have) {
    const inCi = Boolean(Deno.env.get("CI"));
    console.error(
      `\n!!! ${REDIS_SERVER} is missing: the Redis bus tests ${
        inCi ? "FAIL in CI" : "are SKIPPED"
      }.\n!!! Install Debian's redis-server: sudo apt-get install -y redis-server\n`,
    );
  }
  return have;
}

/** A running private Redis. */
export interface TestRedis extends AsyncDisposable {
  /** Its port on 127.0.0.1. */
  port: number;
  /** The password it requires. */
  password: string;
  /** `redis://:password@127.0.0.1:port`. */
  url: string;
  /** Kills it (SIGKILL: no goodbye to its clients). */
  kill(): Promise<void>;
  /** Starts it again, empty, on the same port. */
  start(): Promise<void>;
  /** Stops it for good and removes its directory. */
  stop(): Promise<void>;
}

/** Starts a private redis-server and waits until it accepts connections. */
export async function startRedis(): Promise<TestRedis> {
  const dir = await Deno.makeTempDir({ prefix: "redis-" });
  const port = await freePort();
  const password = `pw-${crypto.randomUUID()}`;
  const config = [
    "bind 127.0.0.1",
    `port ${port}`,
    `dir ${dir}`,
    'save ""',
    "appendonly no",
    `requirepass ${password}`,
    "daemonize no",
    `logfile ${dir}/redis.log`,
  ].join("\n");
  await Deno.writeTextFile(`${dir}/redis.conf`, config + "\n", { mode: 0o600 });
  let child: Deno.ChildProcess | null = null;
  const start = async () => {
    child = new Deno.Command(REDIS_SERVER, {
      args: [`${dir}/redis.conf`],
      stdin: "null",
      stdout: "null",
      stderr: "null",
    }).spawn();
    await waitForPort(port, "redis-server").catch(async (error) => {
      await kill();
      throw error;
    });
  };
  const kill = async () => {
    const running = child;
    child = null;
    if (running === null) return;
    signalChild(running, "SIGKILL");
    await running.status;
  };
  const stop = async () => {
    await kill();
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  };
  await start();
  return {
    port,
    password,
    url: `redis://:${password}@127.0.0.1:${port}`,
    kill,
    start,
    stop,
    [Symbol.asyncDispose]: stop,
  };
}

/**
 * Starts tests/support/bus_broker_child.ts (a broker on a RedisBus in its
 * own process, for kill -9) and reads its port; `kill()` is SIGKILL.
 */
export async function spawnBusBroker(
  redisUrl: string,
  heartbeatMs: number,
): Promise<{ port: number; kill(): Promise<void> }> {
  const child = new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "-A",
      new URL("bus_broker_child.ts", import.meta.url).pathname,
      String(heartbeatMs),
    ],
    env: { REDIS_URL: redisUrl },
    stdout: "piped",
    stderr: "inherit",
  }).spawn();
  const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  let line = "";
  while (!line.includes("\n")) {
    const { value, done } = await reader.read();
    if (done) throw new Error("The child broker exited");
    line += value;
  }
  reader.releaseLock();
  const { port } = JSON.parse(line.split("\n")[0]!);
  return {
    port,
    async kill() {
      signalChild(child, "SIGKILL");
      await child.status;
      await child.stdout.cancel().catch(() => {});
    },
  };
}
