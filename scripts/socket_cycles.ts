/**
 * `deno task socket-cycles`: memory over time. Starts a broker (the Deno CLI,
 * or the Node build with `--node`) in a child process, then runs 5 cycles of
 * 10,000 WebSockets that open, join (10 peers a session) and close, opened
 * in batches. After each cycle, once `/health` shows no session and no peer,
 * it reads the broker's RSS from /proc/PID/status, then again after a full
 * garbage collection (the broker runs with V8's `gc()` exposed and a
 * preloaded SIGUSR2 handler that calls it): V8 collects lazily, so RSS
 * without it is a sawtooth that says little about a leak. Prints RSS per cycle and
 * the cycle-5 / cycle-1 ratio (the target: within 10%), and `/health` at the
 * end (sessions 0, peers 0). Exits 1 when the hub is not empty at the end or
 * the ratio is over 1.10. A benchmark-style script, not a test.
 *
 * Usage: `deno task socket-cycles [--cycles N] [--sockets N] [--batch N]
 * [--per-session N] [--node]`
 *
 * @module
 */

import { parseArgs } from "node:util";
import {
  collectGarbage,
  removeBrokerFiles,
  startBroker,
} from "../tests/support/crash_loop.ts";

const { values } = parseArgs({
  args: Deno.args,
  options: {
    cycles: { type: "string", default: "5" },
    sockets: { type: "string", default: "10000" },
    batch: { type: "string", default: "500" },
    "per-session": { type: "string", default: "10" },
    settle: { type: "string", default: "2000" },
    node: { type: "boolean", default: false },
  },
});
const CYCLES = Number(values.cycles);
const SOCKETS = Number(values.sockets);
const BATCH = Number(values.batch);
const PER_SESSION = Number(values["per-session"]);
const SETTLE_MS = Number(values.settle);

/** The soft and hard open-file limits of a process, from /proc. */
function openFileLimit(pid: number | "self"): number {
  const limits = Deno.readTextFileSync(`/proc/${pid}/limits`);
  const match = /Max open files\s+(\d+|unlimited)/.exec(limits);
  return match?.[1] === "unlimited" ? Infinity : Number(match?.[1] ?? 0);
}

/** A process's resident set, in bytes, from /proc/PID/status. */
function rssBytes(pid: number): number {
  const status = Deno.readTextFileSync(`/proc/${pid}/status`);
  const kib = Number(/VmRSS:\s+(\d+) kB/.exec(status)?.[1] ?? NaN);
  return kib * 1024;
}

const mib = (bytes: number) => `${(bytes / 2 ** 20).toFixed(1)} MiB`;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface Health {
  sessions: number;
  peers: number;
  origins: string[];
}

async function health(url: string): Promise<Health> {
  return await (await fetch(`${url}/health`)).json();
}

/** Waits until /health shows no session and no peer (at most `ms`). */
async function drained(url: string, ms: number): Promise<Health> {
  const deadline = Date.now() + ms;
  let last = await health(url);
  while ((last.sessions > 0 || last.peers > 0) && Date.now() < deadline) {
    await sleep(100);
    last = await health(url);
  }
  return last;
}

/** Opens one socket, joins `session`, resolves with it once joined. */
function openJoined(wsUrl: string, session: string): Promise<WebSocket> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(wsUrl);
    const timer = setTimeout(() => {
      ws.close();
      reject(new Error("Cannot join: no 'joined' within 30 s"));
    }, 30_000);
    ws.onopen = () => ws.send(JSON.stringify({ type: "join", session }));
    ws.onmessage = (event) => {
      const frame = JSON.parse(String(event.data));
      if (frame.type === "joined") {
        clearTimeout(timer);
        resolve(ws);
      } else if (frame.type === "error") {
        clearTimeout(timer);
        ws.close();
        reject(new Error(`Cannot join: ${frame.code}`));
      }
    };
    ws.onerror = () => {
      clearTimeout(timer);
      reject(new Error("Cannot open the socket"));
    };
  });
}

/** Closes `ws` and resolves on its close event. */
function closeAndWait(ws: WebSocket): Promise<void> {
  if (ws.readyState === WebSocket.CLOSED) return Promise.resolve();
  return new Promise((resolve) => {
    ws.onclose = () => resolve();
    ws.close(1000);
  });
}

if (openFileLimit("self") < SOCKETS + 1_000) {
  console.error(
    `Cannot run ${SOCKETS} sockets: this process may open ${
      openFileLimit("self")
    } files; raise it (ulimit -n) or pass --sockets`,
  );
  Deno.exit(2);
}

const broker = await startBroker({
  flags: [
    "--registry",
    "memory",
    // One more than the sockets of a cycle: the count lags a close by a tick.
    "--max-sockets",
    String(SOCKETS + 1_000),
  ],
  node: values.node,
  maxOpenFiles: SOCKETS + 2_000,
  gcOnSignal: true,
});
const wsUrl = `${broker.url.replace("http", "ws")}/signal`;
let exitCode = 0;
try {
  if (openFileLimit(broker.pid) < SOCKETS + 1_000) {
    throw new Error(
      `Cannot run ${SOCKETS} sockets: the broker may open ${
        openFileLimit(broker.pid)
      } files`,
    );
  }
  await sleep(SETTLE_MS);
  await collectGarbage(broker);
  const idle = rssBytes(broker.pid);
  console.log(
    `socket-cycles: ${
      values.node ? "Node" : "Deno"
    } broker pid ${broker.pid}, ${CYCLES} cycles of ${SOCKETS} sockets (${PER_SESSION} a session, opened ${BATCH} at a time); idle RSS ${
      mib(idle)
    }`,
  );
  console.log(
    "| cycle | open+join | close | RSS, all joined | RSS after | RSS after a full GC |",
  );
  console.log("|---:|---:|---:|---:|---:|---:|");
  const after: number[] = [];
  const afterGc: number[] = [];
  for (let cycle = 1; cycle <= CYCLES; cycle++) {
    const sockets: WebSocket[] = [];
    const t0 = performance.now();
    for (let i = 0; i < SOCKETS; i += BATCH) {
      const batch = [];
      for (let j = i; j < Math.min(SOCKETS, i + BATCH); j++) {
        batch.push(
          openJoined(wsUrl, `c${cycle}-s${Math.floor(j / PER_SESSION)}`),
        );
      }
      sockets.push(...await Promise.all(batch));
    }
    const opened = performance.now() - t0;
    const peak = rssBytes(broker.pid);
    const during = await health(broker.url);
    if (during.peers !== SOCKETS) {
      throw new Error(
        `Cannot count the peers: /health says ${during.peers}, ${SOCKETS} joined`,
      );
    }
    const t1 = performance.now();
    for (let i = 0; i < sockets.length; i += BATCH) {
      await Promise.all(sockets.slice(i, i + BATCH).map(closeAndWait));
    }
    const left = await drained(broker.url, 30_000);
    const closed = performance.now() - t1;
    if (left.sessions > 0 || left.peers > 0) {
      throw new Error(
        `Cannot drain the hub: ${left.sessions} sessions, ${left.peers} peers left`,
      );
    }
    await sleep(SETTLE_MS);
    const rss = rssBytes(broker.pid);
    after.push(rss);
    await collectGarbage(broker);
    const rssGc = rssBytes(broker.pid);
    afterGc.push(rssGc);
    console.log(
      `| ${cycle} | ${(opened / 1000).toFixed(1)} s | ${
        (closed / 1000).toFixed(1)
      } s | ${mib(peak)} | ${mib(rss)} | ${mib(rssGc)} |`,
    );
  }
  const final = await health(broker.url);
  const rawRatio = after[after.length - 1]! / after[0]!;
  const ratio = afterGc[afterGc.length - 1]! / afterGc[0]!;
  console.log(
    `RSS after a full GC, cycle ${CYCLES} / cycle 1: ${
      ratio.toFixed(3)
    } (target <= 1.10); without the GC: ${rawRatio.toFixed(3)}`,
  );
  console.log(`/health at the end: ${JSON.stringify(final)}`);
  if (final.sessions !== 0 || final.peers !== 0 || final.origins.length) {
    console.error("The hub is not empty at the end");
    exitCode = 1;
  }
  if (ratio > 1.1) {
    console.error("RSS grew by more than 10% from cycle 1");
    exitCode = 1;
  }
} catch (error) {
  console.error(String(error));
  console.error(broker.log());
  exitCode = 1;
} finally {
  await broker.stop("SIGTERM");
  await removeBrokerFiles();
}
Deno.exit(exitCode);
