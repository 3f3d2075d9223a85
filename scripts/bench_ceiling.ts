/**
 * What the broker's response headers cost a GET on each stack, whatever
 * else the broker does: a bare server answering every request with the
 * same 10 KiB pod and the two headers of the HTTP bench's floor
 * (Content-Type and Cache-Control), next to the same server answering with
 * every header the broker sends with that pod. The headers are the
 * broker's own: this starts one (`src/mod.ts`, memory registry), publishes
 * the pod and reads its GET. On Deno.serve the floor makes a new `Response`
 * per request, as the HTTP bench's does, and the other answers with a
 * clone of one made at start, as the broker does.
 *
 *   deno task bench:ceiling
 *   deno task bench:ceiling --rounds 7 --duration 10
 *
 * Under the HTTP bench's load (`wrk -t1 -c64`), the median of `--rounds`
 * rounds (default 5) of `--duration` seconds (default 5), the two servers
 * of a stack back to back in each round. Their ratio is the most a broker
 * that sends those headers can reach of the floor, on each of Deno.serve,
 * node:http on Deno and Node 22 (fetched with `npx -y node@22`). Needs wrk,
 * and nothing else busy.
 *
 * @module
 */

import { parseArgs } from "node:util";
import { join } from "node:path";
import { generateKeyPair, signPod } from "../src/mod.ts";
import { nodePath, ROOT } from "../tests/support/npm_package.ts";
import { freePort, waitForPort } from "../tests/support/ports.ts";
import { stopChild } from "../tests/support/child_stop.ts";
import { spawnBroker } from "../tests/support/broker_process.ts";

const HERE = join(ROOT, "scripts", "bench_ceiling");

/** Headers that depend on the moment or the connection, not the pod. */
const PER_RESPONSE = new Set(["date", "content-length", "connection"]);

/**
 * How the Deno.serve servers answer (`serve_deno.ts`): the floor as the HTTP
 * bench's does, the other as the broker does.
 */
const MODE = { floor: "new", contract: "clone" } as const;

/** The headers of the bench's floor (`../shared/bench/http/bare_serve.ts`). */
const FLOOR_HEADERS = ["content-type", "cache-control"];

/** A signed pod of exactly `size` bytes (a comment fills it). */
async function makePod(size: number): Promise<Uint8Array<ArrayBuffer>> {
  const { seed } = await generateKeyPair();
  const html = (fill: number) =>
    `<!doctype html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n<title>bench pod</title>\n</head>\n<body>\n<!-- ${
      "x".repeat(fill)
    } -->\n</body>\n</html>\n`;
  const overhead = (await signPod(html(0), seed, { name: "bench" })).length;
  return await signPod(html(size - overhead), seed, {
    name: "bench",
  }) as Uint8Array<ArrayBuffer>;
}

/** Starts a bare server and waits for its port. */
async function start(
  cmd: string[],
  port: number,
  what: string,
): Promise<Deno.ChildProcess> {
  const child = new Deno.Command(cmd[0]!, {
    args: cmd.slice(1),
    cwd: ROOT,
    stdin: "null",
    stdout: "null",
    stderr: "inherit",
  }).spawn();
  try {
    await waitForPort(port, what, { timeoutMs: 30_000 });
  } catch (error) {
    await stopChild(child, "SIGKILL", 0);
    throw error;
  }
  return child;
}

/** The headers the broker sends with `pod` on GET, per-response ones aside. */
async function brokerHeaders(
  pod: Uint8Array<ArrayBuffer>,
): Promise<Record<string, string>> {
  await using broker = await spawnBroker(Deno.execPath(), [
    ...["run", "-A", "--lock=serve.lock", "--frozen", "src/mod.ts"],
    ...["--registry", "memory", "--port", "0", "--hostname", "127.0.0.1"],
  ], { cwd: ROOT });
  const base = `http://127.0.0.1:${broker.port}`;
  const posted = await fetch(`${base}/pods`, {
    method: "POST",
    headers: { "content-type": "text/html" },
    body: pod,
  });
  const { id } = await posted.json();
  if (posted.status !== 201) throw new Error(`POST /pods: ${posted.status}`);
  const got = await fetch(`${base}/${id}`);
  const body = new Uint8Array(await got.arrayBuffer());
  if (got.status !== 200 || body.length !== pod.length) {
    throw new Error(`GET /${id}: ${got.status}, ${body.length} bytes`);
  }
  return Object.fromEntries(
    [...got.headers].filter(([name]) => !PER_RESPONSE.has(name)),
  );
}

/** wrk's requests per second against `port`. */
async function wrk(port: number, seconds: number): Promise<number> {
  const { stdout, success } = await new Deno.Command("wrk", {
    args: ["-t1", "-c64", `-d${seconds}s`, `http://127.0.0.1:${port}/`],
    stdout: "piped",
    stderr: "inherit",
  }).output();
  const rate = /Requests\/sec:\s*([\d.]+)/.exec(
    new TextDecoder().decode(stdout),
  );
  if (!success || !rate) throw new Error("wrk failed");
  return Number(rate[1]);
}

const median = (values: number[]) =>
  [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

if (import.meta.main) {
  const { values } = parseArgs({
    args: Deno.args,
    options: {
      rounds: { type: "string", default: "5" },
      duration: { type: "string", default: "5" },
    },
  });
  const rounds = Number(values.rounds);
  const duration = Number(values.duration);
  if (![rounds, duration].every((n) => Number.isInteger(n) && n > 0)) {
    console.error("--rounds and --duration take whole numbers above 0");
    Deno.exit(2);
  }
  const work = await Deno.makeTempDir({ prefix: "bench-ceiling-" });
  const pod = await makePod(10 * 1024);
  const contract = await brokerHeaders(pod);
  const floor = Object.fromEntries(
    FLOOR_HEADERS.map((name) => [name, contract[name] ?? ""]),
  );
  const files = {
    pod: join(work, "pod.html"),
    floor: join(work, "floor.json"),
    contract: join(work, "contract.json"),
  };
  await Deno.writeFile(files.pod, pod);
  await Deno.writeTextFile(files.floor, JSON.stringify(floor));
  await Deno.writeTextFile(files.contract, JSON.stringify(contract));
  const node = await nodePath();
  const deno = [Deno.execPath(), "run", "-A"];
  const stacks = [
    { name: "Deno.serve", cmd: [...deno, join(HERE, "serve_deno.ts")] },
    { name: "node:http on Deno", cmd: [...deno, join(HERE, "serve_node.mjs")] },
    { name: "Node 22", cmd: [node, join(HERE, "serve_node.mjs")] },
  ];
  const servers: {
    stack: string;
    kind: "floor" | "contract";
    port: number;
    child: Deno.ChildProcess;
    rps: number[];
  }[] = [];
  try {
    for (const { name, cmd } of stacks) {
      for (const kind of ["floor", "contract"] as const) {
        const port = await freePort();
        const child = await start(
          [...cmd, `${port}`, files.pod, files[kind], MODE[kind]],
          port,
          `${name} (${kind})`,
        );
        servers.push({ stack: name, kind, port, child, rps: [] });
      }
    }
    console.log(
      `Load average at start: ${
        Deno.loadavg().map((x) => x.toFixed(2)).join(", ")
      }`,
    );
    // The two servers of a stack run back to back, in turns (floor first
    // in even rounds, last in odd ones), so that a machine getting faster
    // or slower within a round favours neither.
    for (let round = 0; round < rounds; round++) {
      for (let at = 0; at < servers.length; at += 2) {
        const pair = servers.slice(at, at + 2);
        for (const server of round % 2 === 0 ? pair : pair.reverse()) {
          server.rps.push(await wrk(server.port, duration));
        }
      }
    }
  } finally {
    for (const { child } of servers) await stopChild(child, "SIGTERM", 5_000);
    await Deno.remove(work, { recursive: true });
  }
  const bytes = (headers: Record<string, string>) =>
    Object.entries(headers).reduce(
      (sum, [name, value]) => sum + name.length + value.length + 4,
      0,
    );
  console.log(
    `\nGET of a ${pod.length}-byte pod: ${Object.keys(floor).length} headers (${
      bytes(floor)
    } bytes) against the broker's ${Object.keys(contract).length} (${
      bytes(contract)
    } bytes), wrk -t1 -c64, median of ${rounds} x ${duration} s\n`,
  );
  console.log("| stack | floor req/s | with the broker's headers | ratio |");
  console.log("|---|---|---|---|");
  for (const { name } of stacks) {
    const [a, b] = ["floor", "contract"].map((kind) =>
      median(servers.find((s) => s.stack === name && s.kind === kind)!.rps)
    );
    console.log(
      `| ${name} | ${Math.round(a!)} | ${Math.round(b!)} | ${
        (b! / a!).toFixed(2)
      } |`,
    );
  }
}
