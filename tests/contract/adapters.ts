// What the runtime adapters own (src/adapters/): start-up and its failures,
// the peer address, and the lingering close of a refused upload. Runs on
// both runtimes (see _support.ts).
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { createServer, type Server } from "node:net";
import process from "node:process";
import {
  type CliRun,
  collect,
  type ContractApi,
  freePort,
} from "./_support.ts";

const { cases, test } = collect();

/** The adapter cases. */
export const ADAPTER_CASES = cases;

/** Holds a TCP port on 127.0.0.1 until the returned server is closed. */
async function holdPort(): Promise<{ port: number; server: Server }> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { port: (server.address() as { port: number }).port, server };
}

/** Whether `port` on 127.0.0.1 can be listened on now. */
async function isFree(port: number): Promise<boolean> {
  const server = createServer();
  const free = await new Promise<boolean>((resolve) => {
    server.once("error", () => resolve(false));
    server.listen(port, "127.0.0.1", () => resolve(true));
  });
  if (free) await new Promise((resolve) => server.close(resolve));
  return free;
}

/**
 * Runs `pod-broker ARGS`, killed after `ms` (then `timedOut` is true), so
 * that a CLI that hangs fails the case instead of the run.
 */
function runCliWithin(
  api: ContractApi,
  args: string[],
  ms: number,
): Promise<CliRun & { timedOut: boolean }> {
  const [command, ...prefix] = api.cli;
  const child = spawn(command!, [...prefix, ...args], {
    stdio: ["ignore", "pipe", "pipe"],
    env: { ...process.env, NO_COLOR: "1" },
  });
  let stdout = "";
  let stderr = "";
  let timedOut = false;
  child.stdout.setEncoding("utf8").on("data", (text) => (stdout += text));
  child.stderr.setEncoding("utf8").on("data", (text) => (stderr += text));
  const timer = setTimeout(() => {
    timedOut = true;
    process.kill(child.pid!, "SIGKILL");
  }, ms);
  return new Promise((resolve, reject) => {
    child.once("error", reject);
    child.once("close", (code, signal) => {
      clearTimeout(timer);
      resolve({ code: code ?? (signal ? 128 : 1), stdout, stderr, timedOut });
    });
  });
}

test("issue 18: a taken --metrics-port fails start-up with one line, a non-zero exit and nothing left listening", async (api) => {
  const taken = await holdPort();
  try {
    const port = await freePort();
    const run = await runCliWithin(api, [
      "--port",
      String(port),
      "--hostname",
      "127.0.0.1",
      "--metrics-port",
      String(taken.port),
    ], 20_000);
    assert.equal(run.timedOut, false, "the CLI hung");
    assert.notEqual(run.code, 0);
    const lines = run.stderr.trim().split("\n");
    assert.equal(lines.length, 1, run.stderr);
    assert.match(lines[0]!, /--metrics-port/);
    assert.match(lines[0]!, /in use/);
    assert.doesNotMatch(run.stderr, /a bug|\n\s+at /);
    assert.ok(await isFree(port), "the main port is still taken");
  } finally {
    await new Promise((resolve) => taken.server.close(resolve));
  }
});

test("issue 18: createSignalServer rejects a taken metrics port and gives the main port back", async (api) => {
  const taken = await holdPort();
  try {
    const port = await freePort();
    await assert.rejects(
      api.createSignalServer({
        registry: new api.MemoryRegistry(),
        port,
        hostname: "127.0.0.1",
        logger: api.silentLogger,
        metrics: { port: taken.port },
      }),
      (error: Error) =>
        error instanceof TypeError && /metrics\.port/.test(error.message) &&
        /in use/.test(error.message),
    );
    assert.ok(await isFree(port), "the main port is still taken");
  } finally {
    await new Promise((resolve) => taken.server.close(resolve));
  }
});

test("issue 18: a taken --port fails start-up with one line, and the metrics port is given back", async (api) => {
  const taken = await holdPort();
  try {
    const metricsPort = await freePort();
    const run = await runCliWithin(api, [
      "--port",
      String(taken.port),
      "--hostname",
      "127.0.0.1",
      "--metrics-port",
      String(metricsPort),
    ], 20_000);
    assert.equal(run.timedOut, false, "the CLI hung");
    assert.notEqual(run.code, 0);
    const lines = run.stderr.trim().split("\n");
    assert.equal(lines.length, 1, run.stderr);
    assert.match(lines[0]!, /--port/);
    assert.match(lines[0]!, /in use/);
    assert.ok(await isFree(metricsPort), "the metrics port is still taken");
  } finally {
    await new Promise((resolve) => taken.server.close(resolve));
  }
});

/** A broker CLI run whose standard output (the access log) is kept. */
interface LoggingBroker {
  /** The port it logged as listening on. */
  port: number;
  /** Sends SIGTERM; resolves with the exit code and everything on stdout. */
  stop(): Promise<{ code: number; stdout: string }>;
}

/** Starts `pod-broker ARGS` and waits (at most 20 s) until it listens. */
function spawnLogging(
  api: ContractApi,
  args: string[],
): Promise<LoggingBroker> {
  const [command, ...prefix] = api.cli;
  const child = spawn(command!, [...prefix, ...args], {
    stdio: ["ignore", "pipe", "pipe"],
    env: { ...process.env, NO_COLOR: "1" },
  });
  let stdout = "";
  let stderr = "";
  child.stdout.setEncoding("utf8").on("data", (text) => (stdout += text));
  const exited = new Promise<number>((resolve) =>
    child.once("close", (code, signal) => resolve(code ?? (signal ? 128 : 1)))
  );
  const stop = async () => {
    try {
      if (child.exitCode === null) process.kill(child.pid!, "SIGTERM");
    } catch { /* it ended meanwhile */ }
    return { code: await exited, stdout };
  };
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      void stop();
      reject(new Error(`The broker did not listen: ${stderr}`));
    }, 20_000);
    child.stderr.setEncoding("utf8").on("data", (text: string) => {
      stderr += text;
      const match = /listening on http:\/\/[^"\s]+:(\d+)/.exec(stderr);
      if (match) {
        clearTimeout(timer);
        resolve({ port: Number(match[1]), stop });
      }
    });
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`The broker ended (${code}): ${stderr}`));
    });
  });
}

/** The `ip` of each access log line in `stdout`, in order. */
function loggedAddresses(stdout: string): (string | undefined)[] {
  return stdout.trim().split("\n").filter((line) => line.startsWith("{"))
    .map((line) => JSON.parse(line).ip);
}

test("issue 19 item 9: --access-log ip writes the peer address, or with --trust-proxy the last X-Forwarded-For hop", async (api) => {
  for (const trustProxy of [false, true]) {
    const broker = await spawnLogging(api, [
      "--port",
      "0",
      "--hostname",
      "127.0.0.1",
      "--access-log",
      "ip",
      ...(trustProxy ? ["--trust-proxy"] : []),
    ]);
    let stopped: { code: number; stdout: string } | undefined;
    try {
      const url = `http://127.0.0.1:${broker.port}/health`;
      await (await fetch(url)).body?.cancel();
      const forwarded = await fetch(url, {
        headers: { "X-Forwarded-For": "203.0.113.9, 198.51.100.4" },
      });
      await forwarded.body?.cancel();
      // A WebSocket upgrade is logged (as 101) with its address too.
      const ws = new WebSocket(`ws://127.0.0.1:${broker.port}/signal`);
      await new Promise((resolve, reject) => {
        ws.onopen = resolve;
        ws.onerror = reject;
      });
      const closed = new Promise((resolve) => (ws.onclose = resolve));
      ws.close();
      await closed;
    } finally {
      stopped = await broker.stop();
    }
    assert.equal(stopped.code, 0);
    assert.deepEqual(
      loggedAddresses(stopped.stdout),
      trustProxy
        ? ["127.0.0.1", "198.51.100.4", "127.0.0.1"]
        : ["127.0.0.1", "127.0.0.1", "127.0.0.1"],
      stopped.stdout,
    );
  }
});
