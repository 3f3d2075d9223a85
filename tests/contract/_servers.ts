// Servers and processes for the contract cases: a broker in this process,
// a broker or the CLI as a child process, a temp dir.
// Runtime-neutral, like every file here: see _suite.ts.
import { spawn } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import process from "node:process";
import {
  type BrokerProcess,
  spawnBroker as spawnProcess,
  type SpawnOptions,
} from "../support/broker_process.ts";
import type {
  Registry,
  SignalServer,
  SignalServerOptions,
} from "../../src/core.ts";
import type { ContractApi } from "./_suite.ts";
import { RUN_MS, WaitTimeout } from "../support/wait.ts";

// The low-level helpers live in tests/support/ (runtime-neutral files that
// node_test.ts transpiles with this folder); the suite imports them from here.
export {
  freePort,
  sleep,
  until,
  waitForPort,
  waitForStun,
} from "../support/ports.ts";
export {
  ANY_LOCAL_PORT,
  type BrokerProcess,
  LISTENING,
} from "../support/broker_process.ts";

/** A running test server and its URLs. */
export interface TestServer extends AsyncDisposable {
  server: SignalServer;
  /** `http://127.0.0.1:PORT` */
  url: string;
  /** `ws://127.0.0.1:PORT/signal` */
  wsUrl: string;
  registry: Registry;
}

/**
 * Starts a broker on 127.0.0.1, port 0, silent, with a memory registry
 * unless given, and no drain window unless given (a test closing a broker
 * with sockets open does not wait for it).
 */
export async function startServer(
  api: ContractApi,
  options: Partial<SignalServerOptions> = {},
): Promise<TestServer> {
  const registry = options.registry ?? new api.MemoryRegistry();
  const server = await api.createSignalServer({
    logger: api.silentLogger,
    accessLog: "off",
    drainSeconds: 0,
    ...options,
    registry,
    port: 0,
    hostname: "127.0.0.1",
  });
  const url = `http://127.0.0.1:${server.port}`;
  return {
    server,
    url,
    wsUrl: `ws://127.0.0.1:${server.port}/signal`,
    registry,
    [Symbol.asyncDispose]: () => server.close(),
  };
}

/** A fresh temp directory, and its removal. */
export async function tempDir(
  prefix = "pod-broker-contract-",
): Promise<AsyncDisposable & { path: string }> {
  const path = await mkdtemp(join(tmpdir(), prefix));
  return {
    path,
    [Symbol.asyncDispose]: () => rm(path, { recursive: true, force: true }),
  };
}

/** What a finished CLI run printed. */
export interface CliRun {
  /** Exit code. */
  code: number;
  /** Everything written to stdout. */
  stdout: string;
  /** Everything written to stderr. */
  stderr: string;
}

/** Runs `pod-broker ARGS` (the runtime's CLI) to the end. */
export function runCli(api: ContractApi, args: string[]): Promise<CliRun> {
  const [command, ...prefix] = api.cli;
  return runCommand(command!, [...prefix, ...args]);
}

/** How {@linkcode runCommand} runs a program. */
export interface RunOptions {
  /** The working directory. */
  cwd?: string;
  /** Environment variables added to this process's. */
  env?: Record<string, string>;
  /** Stops (SIGKILL) the program once its output matches this. */
  stopWhen?: RegExp;
  /**
   * Stops (SIGKILL) the program after this many milliseconds; without it,
   * a program still running after `RUN_MS` is stopped and the run fails,
   * naming it.
   */
  timeoutMs?: number;
}

/**
 * Runs a program to the end (`node:child_process`, on either runtime), or
 * until {@linkcode RunOptions} stops it (then `stopped` is true).
 */
export function runCommand(
  command: string,
  args: string[],
  { cwd, env = {}, stopWhen, timeoutMs }: RunOptions = {},
): Promise<CliRun & { stopped: boolean }> {
  const child = spawn(command, args, {
    stdio: ["ignore", "pipe", "pipe"],
    env: { ...process.env, NO_COLOR: "1", ...env },
    ...(cwd === undefined ? {} : { cwd }),
  });
  let stdout = "";
  let stderr = "";
  let stopped = false;
  const stop = () => {
    stopped = true;
    child.kill("SIGKILL");
  };
  const seen = () => {
    if (stopWhen && (stopWhen.test(stdout) || stopWhen.test(stderr))) stop();
  };
  child.stdout.setEncoding("utf8").on("data", (text) => {
    stdout += text;
    seen();
  });
  child.stderr.setEncoding("utf8").on("data", (text) => {
    stderr += text;
    seen();
  });
  let overdue = false;
  const timer = setTimeout(() => {
    overdue = timeoutMs === undefined;
    stop();
  }, timeoutMs ?? RUN_MS);
  // bounded: the timer above kills the program
  return new Promise((resolve, reject) => {
    child.once("error", reject);
    child.once("close", (code, signal) => {
      clearTimeout(timer);
      if (overdue) {
        const what = `${[command, ...args].join(" ")} to exit`;
        reject(new WaitTimeout(what, RUN_MS));
      } else {
        resolve({ code: code ?? (signal ? 128 : 1), stdout, stderr, stopped });
      }
    });
  });
}

/**
 * Runs `pod-broker ARGS` (a broker's command line, on the runtime's CLI) and
 * waits until it logs "listening on http://HOST:PORT".
 */
export function spawnBroker(
  api: ContractApi,
  args: string[],
  options: SpawnOptions = {},
): Promise<BrokerProcess> {
  const [command, ...prefix] = api.cli;
  return spawnProcess(command!, [...prefix, ...args], options);
}
