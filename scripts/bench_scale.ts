/**
 * Runs the scale benchmark of ../shared/bench/scale against the working tree
 * and prints the table of the scale issue, from one run of each:
 *
 *   deno task bench:scale                  # runs 1 to 4 (~10 minutes)
 *   deno task bench:scale --runs 1,4       # some of them
 *   deno task bench:scale --broker-flags="--ping-interval-ms 600000"
 *
 * 1. the npm build under Node 22, one broker, no bus, 15,000 peers;
 * 2. Deno (src/mod.ts), one broker, 15,000 peers;
 * 3. the npm build × 3 on one Redis, 45,000 peers;
 * 4. the npm build × 6 on one Redis, 99,000 peers.
 *
 * The harness is copied to a temp folder (../shared is read-only) and gets
 * its one dependency (`ws`) there; the npm build is the tarball the tests
 * build, installed into a temp project as a user's would be. Every run's
 * `result.json` and broker logs stay in `--out` (default a temp folder,
 * printed). Needs redis-server and redis-cli (Debian's redis-server), and
 * nothing else busy: the brokers, Redis and the load clients share the
 * machine.
 *
 * @module
 */

import { parseArgs } from "node:util";
import { join } from "node:path";
import {
  ensureTarball,
  installTarball,
  nodePath,
  ROOT,
  run,
} from "../tests/support/npm_package.ts";

const RUNS: Record<
  string,
  { runtime: "node" | "deno"; brokers: number; peers: number }
> = {
  "1": { runtime: "node", brokers: 1, peers: 15_000 },
  "2": { runtime: "deno", brokers: 1, peers: 15_000 },
  "3": { runtime: "node", brokers: 3, peers: 15_000 },
  "4": { runtime: "node", brokers: 6, peers: 16_500 },
};

const { values } = (() => {
  try {
    return parseArgs({
      options: {
        runs: { type: "string", default: "1,2,3,4" },
        seconds: { type: "string", default: "30" },
        rate: { type: "string", default: "2000" },
        out: { type: "string" },
        // A value that starts with "--" is given with "=".
        "broker-flags": { type: "string", default: "" },
      },
    });
  } catch (error) {
    console.error(`bench_scale: ${(error as Error).message.split("\n")[0]}`);
    Deno.exit(2);
  }
})();
const chosen = values.runs.split(",").map((s) => s.trim());
for (const name of chosen) {
  if (!(name in RUNS)) {
    console.error(`bench_scale: unknown run '${name}' (expected 1, 2, 3 or 4)`);
    Deno.exit(2);
  }
}

const MINUTE = 60_000;
const harness = await Deno.makeTempDir({ prefix: "pod-broker-scale-" });
for (const file of ["client.mjs", "run.mjs", "package.json"]) {
  await Deno.copyFile(
    join(ROOT, "..", "shared", "bench", "scale", file),
    join(harness, file),
  );
}
await run(
  "npm",
  ["install", "--no-audit", "--no-fund", "--no-package-lock"],
  harness,
  3 * MINUTE,
);
const app = await installTarball(await ensureTarball());
const node22 = await nodePath();
const out = values.out ?? await Deno.makeTempDir({ prefix: "scale-out-" });
console.log(`results in ${out}`);

// The Deno run starts `deno run -A src/mod.ts` by name: this deno.
const denoDir = Deno.execPath().replace(/\/[^/]*$/, "");
const path = `${denoDir}:${Deno.env.get("PATH") ?? ""}`;

interface Summary {
  peers: number;
  joinStormSec: number;
  relay_ms: [number, number, number] | null;
  cross_ms: [number, number, number] | null;
  kbPerPeer: number;
}
interface Result {
  summary?: Summary;
  relay?: {
    sameBroker: { p50: number; p99: number; p999: number; max: number };
    crossBroker: { n: number; p50: number; p99: number; p999: number };
    all: { max: number };
    sent: number;
    received: number;
  };
  join?: { failed: number };
  clientErrors?: Record<string, number>[];
  slowBySec?: Record<string, number>;
  error?: string;
  aborted?: string;
}

const rows: string[] = [];
for (const name of chosen) {
  const spec = RUNS[name]!;
  const dir = join(out, `run${name}`);
  const args = [
    "run.mjs",
    "--runtime",
    spec.runtime,
    "--brokers",
    String(spec.brokers),
    "--peers",
    String(spec.peers),
    "--rate",
    values.rate,
    "--seconds",
    values.seconds,
    "--out",
    dir,
  ];
  if (spec.runtime === "node") args.push("--npm", app, "--node22", node22);
  else args.push("--proj", ROOT);
  if (values["broker-flags"]) {
    // With a leading space: the harness reads an argument that starts with
    // "--" as a flag of its own, so "--ping-interval-ms 600000" alone would
    // be dropped without a word.
    args.push("--broker-flags", ` ${values["broker-flags"]}`);
  }
  await drainTimeWait();
  console.log(`run ${name}: ${spec.runtime}, ${spec.brokers} × ${spec.peers}`);
  const child = await new Deno.Command(node22, {
    args,
    cwd: harness,
    env: { PATH: path },
    stdin: "null",
    stdout: "inherit",
    stderr: "inherit",
    signal: AbortSignal.timeout(8 * MINUTE),
  }).output();
  const result: Result = await Deno.readTextFile(join(dir, "result.json"))
    .then(JSON.parse, () => ({ error: `no result (exit ${child.code})` }));
  rows.push(row(name, spec, result));
}

console.log(
  "\n| run | peers | join storm | relay p50 / p99 / p99.9 (same broker) | cross broker p50 / p99 / p99.9 | max | broker RSS, KB per peer | seconds with frames over 50 ms | errors |",
);
console.log("|---|---|---|---|---|---|---|---|---|");
for (const line of rows) console.log(line);
await Deno.remove(harness, { recursive: true });
await Deno.remove(app, { recursive: true });

function row(
  name: string,
  spec: (typeof RUNS)[string],
  result: Result,
): string {
  const what = `${name} ${
    spec.runtime === "node" ? "Node build" : "Deno"
  } ×${spec.brokers}`;
  const { summary, relay } = result;
  if (summary === undefined || relay === undefined) {
    return `| ${what} | — | — | — | — | — | — | — | ${
      result.error ?? result.aborted ?? "no summary"
    } |`;
  }
  const ms = (a: number, b: number, c: number) => `${a} / ${b} / ${c} ms`;
  const same = relay.sameBroker;
  const cross = relay.crossBroker;
  // Seconds of the relay with more than 20 frames over 50 ms: a burst.
  const slow = Object.entries(result.slowBySec ?? {})
    .filter(([, n]) => n > 20)
    .map(([second, n]) => `${second}s: ${n}`);
  const errors =
    (result.clientErrors ?? []).flatMap((e) =>
      Object.entries(e).filter(([code]) => code !== "peer-left")
    ).reduce((sum, [, n]) => sum + n, 0) + (result.join?.failed ?? 0) +
    (relay.sent - relay.received);
  return `| ${what} | ${
    summary.peers.toLocaleString("en")
  } | ${summary.joinStormSec} s | ${ms(same.p50, same.p99, same.p999)} | ${
    cross.n ? ms(cross.p50, cross.p99, cross.p999) : "—"
  } | ${relay.all.max} ms | ${summary.kbPerPeer} | ${
    slow.length ? slow.join(", ") : "none"
  } | ${errors} |`;
}

/**
 * Waits (at most 90 s) until the sockets of the previous run have left
 * TIME_WAIT. Up to 99,000 of them linger for a minute after a run, and
 * while they do, every bind() of the load clients searches longer for a
 * free port: a join storm started at once took 47 to 62 s, one started
 * after the wait 27 s (same code, same machine).
 */
async function drainTimeWait(): Promise<void> {
  for (let waited = 0; waited < 90; waited += 5) {
    const { stdout } = await new Deno.Command("ss", { args: ["-s"] }).output()
      .catch(() => ({ stdout: new Uint8Array() }));
    const count = Number(
      /timewait (\d+)/.exec(new TextDecoder().decode(stdout))?.[1] ?? 0,
    );
    if (count < 1_000) return;
    if (waited === 0) console.log(`waiting for ${count} sockets in TIME_WAIT`);
    await new Promise((resolve) => setTimeout(resolve, 5_000));
  }
}
