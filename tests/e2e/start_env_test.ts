// `deno task start`, the README's way to run the broker from a checkout,
// asks for what the broker needs: it starts with its secrets in the
// environment (TURN secret, DATABASE_URL, REDIS_URL) and uses each.
import assert from "node:assert/strict";
import { inCi } from "../support/gated.ts";
import { assertEnvBroker, startEnvServices } from "../support/env_start.ts";
import { havePostgres } from "../support/postgres.ts";
import { haveRedis } from "../support/redis.ts";

const ROOT = new URL("../..", import.meta.url).pathname;

/** The first JSON log line whose message says "listening on". */
async function listeningLine(
  stderr: ReadableStream<Uint8Array<ArrayBuffer>>,
): Promise<{ pid: number; port: number; log: string }> {
  const reader = stderr.pipeThrough(new TextDecoderStream()).getReader();
  let log = "";
  try {
    for (;;) {
      const line = /^\{.*listening on http:\/\/[^"]+:(\d+)".*\}$/m.exec(log);
      if (line) {
        const { pid } = JSON.parse(line[0]);
        return { pid, port: Number(line[1]), log };
      }
      const { done, value } = await reader.read();
      if (done) throw new Error(`The broker ended before listening:\n${log}`);
      log += value;
    }
  } finally {
    reader.releaseLock();
    await stderr.cancel().catch(() => {});
  }
}

Deno.test({
  name:
    "deno task start reads POD_BROKER_TURN_SECRET, DATABASE_URL and REDIS_URL from the environment",
  ignore: !inCi && !(havePostgres() && haveRedis()),
  async fn() {
    await using services = await startEnvServices();
    const task = new Deno.Command(Deno.execPath(), {
      args: [
        "task",
        "start",
        ...services.flags,
        "--port",
        "0",
        "--hostname",
        "127.0.0.1",
      ],
      cwd: ROOT,
      env: { NO_COLOR: "1", ...services.env },
      stdin: "null",
      stdout: "null",
      stderr: "piped",
    }).spawn();
    let brokerPid: number | undefined;
    // Bounded: a broker that never listens fails the test, not the suite.
    const deadline = setTimeout(() => {
      try {
        task.kill("SIGKILL");
      } catch {
        // already gone
      }
    }, 120_000);
    try {
      const { pid, port } = await listeningLine(task.stderr);
      brokerPid = pid;
      await assertEnvBroker(`http://127.0.0.1:${port}`, services);
      // `deno task` runs the broker as its child: the broker's own PID (in
      // its log) is the one to signal.
      Deno.kill(pid, "SIGTERM");
      assert.equal((await task.status).code, 0);
      brokerPid = undefined;
    } finally {
      clearTimeout(deadline);
      if (brokerPid !== undefined) {
        try {
          Deno.kill(brokerPid, "SIGKILL");
        } catch {
          // already gone
        }
      }
      try {
        task.kill("SIGKILL");
      } catch {
        // already gone
      }
      await task.status;
    }
  },
});
