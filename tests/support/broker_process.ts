// The one way the tests start a broker as a process and wait until it
// listens. Runtime-neutral (it imports `node:` built-ins and wait.ts): the
// contract suite imports it, and tests/contract/node_test.ts transpiles it
// for Node 22.
import { spawn } from "node:child_process";
import process from "node:process";
import { within } from "./wait.ts";

/** How long a broker may take to exit once signalled, before SIGKILL. */
const STOP_MS = 30_000;

/** The broker's "listening on http://HOST:PORT" line; group 1 is the port. */
export const LISTENING: RegExp = /listening on http:\/\/[^"\s]+:(\d+)/;
const LISTENING_LINE = new RegExp(`${LISTENING.source}.*\\n`);

/** The flags that make a broker listen on 127.0.0.1, on a port of its choice. */
export const ANY_LOCAL_PORT: readonly string[] = [
  "--port",
  "0",
  "--hostname",
  "127.0.0.1",
];

/** A broker process started by {@linkcode spawnBroker}. */
export interface BrokerProcess extends AsyncDisposable {
  /** The port it logged as listening on. */
  port: number;
  /** Its process id (to send it signals). */
  pid: number;
  /** What it logged up to and with the "listening" line. */
  log: string;
  /** What it wrote so far (all of it with `keep`, else only `log`). */
  output(): { stdout: string; stderr: string };
  /** Sends `signal` (SIGTERM) and resolves with the exit code. */
  stop(signal?: "SIGTERM" | "SIGKILL"): Promise<number>;
  /**
   * Resolves with the exit code once it ends by itself, sending nothing
   * (a signal sent as it ends would race its exit); rejects after 30 s.
   */
  exited(): Promise<number>;
}

/** How {@linkcode spawnBroker} runs it. */
export interface SpawnOptions {
  /** The working directory. */
  cwd?: string;
  /** Added to this process's environment (NO_COLOR=1 always is). */
  env?: Record<string, string>;
  /** Keep all of stdout and stderr for {@linkcode BrokerProcess.output}. */
  keep?: boolean;
  /** Milliseconds it may take to listen. @default {60_000} */
  timeoutMs?: number;
}

/**
 * Runs `command ARGS` (a broker's command line) and waits until it logs
 * "listening on http://HOST:PORT"; rejects with its log if it ends first.
 */
export function spawnBroker(
  command: string,
  args: string[],
  { cwd, env = {}, keep = false, timeoutMs = 60_000 }: SpawnOptions = {},
): Promise<BrokerProcess> {
  const child = spawn(command, args, {
    ...(cwd ? { cwd } : {}),
    stdio: ["ignore", keep ? "pipe" : "ignore", "pipe"],
    env: { ...process.env, NO_COLOR: "1", ...env },
  });
  // bounded: waited for within STOP_MS in stop(), or raced with the timer
  // of the "listening" wait
  const exited = new Promise<number>((resolve) => {
    child.once("close", (code, signal) => resolve(code ?? (signal ? 128 : 1)));
  });
  let stopped: Promise<number> | undefined;
  const stop = (signal: "SIGTERM" | "SIGKILL" = "SIGTERM") => {
    stopped ??= (async () => {
      // process.kill, not child.kill: after child.kill(), Deno's
      // node:child_process reports the signal instead of the exit code.
      try {
        if (child.exitCode === null) process.kill(child.pid!, signal);
      } catch { /* it ended meanwhile */ }
      try {
        return await within(
          exited,
          `the broker (PID ${child.pid}) to exit after ${signal}`,
          STOP_MS,
        );
      } catch (error) {
        // It ignored the signal: SIGKILL ends it, then the test fails.
        try {
          process.kill(child.pid!, "SIGKILL");
        } catch { /* it ended meanwhile */ }
        await exited;
        throw error;
      }
    })();
    return stopped;
  };
  let stdout = "";
  let log = "";
  let listening = false;
  child.stdout?.setEncoding("utf8").on("data", (text) => (stdout += text));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      void stop("SIGKILL");
      reject(new Error(`The broker did not listen in ${timeoutMs} ms: ${log}`));
    }, timeoutMs);
    child.once("error", reject);
    child.stderr!.setEncoding("utf8").on("data", (text: string) => {
      // Once it listens, the rest is read (so that the broker never blocks
      // on a full pipe) and kept only with `keep`.
      if (listening && !keep) return;
      log += text;
      const match = listening ? null : LISTENING_LINE.exec(log);
      if (!match) return;
      listening = true;
      clearTimeout(timer);
      const logged = log;
      resolve({
        port: Number(match[1]),
        pid: child.pid!,
        log: logged,
        output: () => ({ stdout, stderr: log }),
        stop,
        exited: () =>
          within(exited, `the broker (PID ${child.pid}) to exit`, STOP_MS),
        [Symbol.asyncDispose]: async () => void await stop(),
      });
    });
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`The broker ended (${code}) before listening: ${log}`));
    });
  });
}
