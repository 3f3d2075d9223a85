// The HTTP benchmark per stack: the broker next to the bare server of the
// same stack (its floor) and nginx, in one run, with the ratios.
//
//   deno task bench:http --stack deno       # src/mod.ts (Deno.serve)
//   deno task bench:http --stack deno-node  # src/mod_node.ts on Deno (node:http)
//   deno task bench:http --stack node22     # the npm build on Node 22
//   deno task bench:http --stack all        # the three, one table
//
// BROKER_CMD, when set, starts the broker instead (another registry, say),
// held against the floor of the stack named. Any other argument goes to the
// harness as is (`--parts a,d`, `--rounds 5`,
// `--duration 10`, ...). The harness is the shared HTTP benchmark kept beside
// the project (POD_BROKER_HTTP_BENCH names another copy); it starts every
// server by its PID on 127.0.0.1, runs wrk and curl, and writes
// `results.json`, from which this prints one row per stack. Needs wrk, nginx,
// curl and Node; Node 22 is fetched with `npx -y node@22` for `node22`, and
// the npm build is made (and installed into a temp dir) as the tests make it.
import { join } from "node:path";
import { NODE_BIN, PACKAGE_NAME } from "../tests/support/npm_layout.ts";
import {
  ensureTarball,
  installTarball,
  nodePath,
  ROOT,
} from "../tests/support/npm_package.ts";

const STACKS = ["deno", "deno-node", "node22"] as const;
type Stack = typeof STACKS[number];

const HARNESS = Deno.env.get("POD_BROKER_HTTP_BENCH") ??
  join(ROOT, "..", "shared", "bench", "http");

/** The broker's arguments after its entry point. */
const SERVE = "--registry memory --port {port} --hostname 127.0.0.1";

/**
 * How Deno starts the broker, as the README and the operator docs do:
 * `serve.lock` pins only what serving loads. (`deno.lock` also pins the
 * tests' tools, and reading it costs a start about 13 ms.)
 */
const DENO_RUN = "run -A --lock=serve.lock --frozen";

/** What the harness needs to run one stack. */
interface StackRun {
  /** The broker's start command (`{port}` filled in by the harness). */
  brokerCmd: string;
  /** Harness options naming the floor of the stack. */
  floor: string[];
}

async function stackRun(stack: Stack): Promise<StackRun> {
  const deno = Deno.execPath();
  if (stack === "deno") {
    return {
      brokerCmd: `'${deno}' ${DENO_RUN} src/mod.ts ${SERVE}`,
      floor: [],
    };
  }
  if (stack === "deno-node") {
    return {
      brokerCmd: `'${deno}' ${DENO_RUN} src/mod_node.ts ${SERVE}`,
      floor: ["--floor", "node"],
    };
  }
  const [app, node] = await Promise.all([
    ensureTarball().then(installTarball),
    nodePath(),
  ]);
  const entry = join(app, "node_modules", PACKAGE_NAME, NODE_BIN);
  return {
    brokerCmd: `'${node}' '${entry}' ${SERVE}`,
    floor: ["--floor", "node", "--floor-node", node],
  };
}

interface Summary {
  rps: number;
  server_cpu_us_per_req: number;
}

/** One stack's figures from the harness's `results.json`. */
interface Row {
  stack: Stack;
  // deno-lint-ignore no-explicit-any
  parts: Record<string, any>;
  /** The most CPU anything else used during a run, % of one core. */
  otherLoad: number;
}

async function runStack(stack: Stack, args: string[]): Promise<Row> {
  const { brokerCmd, floor } = await stackRun(stack);
  const workdir = await Deno.makeTempDir({ prefix: `bench-http-${stack}-` });
  const status = await new Deno.Command("bash", {
    args: [
      join(HARNESS, "run.sh"),
      ROOT,
      ...floor,
      "--workdir",
      workdir,
      ...args,
    ],
    cwd: ROOT,
    env: {
      BROKER_CMD: Deno.env.get("BROKER_CMD") ?? brokerCmd,
      DENO: Deno.execPath(),
    },
    stdin: "null",
    stdout: "inherit",
    stderr: "inherit",
  }).spawn().status;
  const results = JSON.parse(
    await Deno.readTextFile(join(workdir, "results.json")),
  );
  if (!status.success) {
    console.error(`${stack}: the harness exited ${status.code}`);
  }
  let otherLoad = 0;
  for (const runs of Object.values(results.parts.a?.runs ?? {})) {
    for (const run of runs as { other_load_pct?: number }[]) {
      otherLoad = Math.max(otherLoad, run.other_load_pct ?? 0);
    }
  }
  return { stack, parts: results.parts, otherLoad };
}

const NAMES: Record<Stack, string> = {
  "deno": "`src/mod.ts`, Deno.serve",
  "deno-node": "`src/mod_node.ts` on Deno",
  "node22": "npm build on Node 22",
};

const int = (x: number) =>
  Number.isFinite(x) ? Math.round(x).toLocaleString("en-US") : "n/a";
const fixed = (x: number, digits: number) =>
  Number.isFinite(x) ? x.toFixed(digits) : "n/a";

/** The table of the rows, in Markdown. */
function table(rows: Row[]): string {
  const lines = [
    "| stack | broker GET req/s | floor req/s | nginx req/s | broker/floor | broker/nginx | CPU µs/req (floor) | other load |",
    "|---|---|---|---|---|---|---|---|",
  ];
  for (const { stack, parts, otherLoad } of rows) {
    const a = parts.a;
    if (a === undefined) continue;
    const summary = a.summary as Record<string, Summary>;
    const broker = summary["pod-broker"]!;
    const floor = summary[a.floor as string]!;
    const nginx = summary["nginx"]!;
    lines.push(
      `| ${NAMES[stack]} | ${int(broker.rps)} | ${
        int(floor.rps)
      } (${a.floor}) | ${int(nginx.rps)} | ${
        fixed(broker.rps / floor.rps, 2)
      } | ${fixed(broker.rps / nginx.rps, 2)} | ${
        fixed(broker.server_cpu_us_per_req, 1)
      } (${fixed(floor.server_cpu_us_per_req, 1)}) | ${otherLoad}% |`,
    );
  }
  const more = rows.filter(({ parts }) => parts.b || parts.c || parts.d);
  if (more.length > 0) {
    lines.push(
      "",
      "| stack | POST /pods per s (floor) | uploads/floor | 50 MiB upload / SHA-256 | peak RSS / blob | cold start ms |",
      "|---|---|---|---|---|---|",
    );
    for (const { stack, parts: { b, c, d } } of more) {
      lines.push(
        `| ${NAMES[stack]} | ${
          b ? `${int(b.uploads_per_s)} (${int(b.floor_post_per_s)})` : "-"
        } | ${b ? fixed(b.over_floor_post, 2) : "-"} | ${
          c ? `${fixed(c.x_floor, 1)}x` : "-"
        } | ${c ? `${fixed(c.peak_delta_x_blob, 2)}x` : "-"} | ${
          d ? int(d.median_health_ms) : "-"
        } |`,
      );
    }
  }
  return lines.join("\n");
}

function parseArgs(argv: string[]): { stacks: Stack[]; rest: string[] } {
  const at = argv.indexOf("--stack");
  const value = at < 0 ? "deno" : argv[at + 1] ?? "";
  const rest = at < 0 ? argv : [...argv.slice(0, at), ...argv.slice(at + 2)];
  if (value === "all") return { stacks: [...STACKS], rest };
  if (!(STACKS as readonly string[]).includes(value)) {
    console.error(
      `Cannot bench stack '${value}': use --stack deno|deno-node|node22|all`,
    );
    Deno.exit(2);
  }
  return { stacks: [value as Stack], rest };
}

if (import.meta.main) {
  const { stacks, rest } = parseArgs(Deno.args);
  const rows: Row[] = [];
  for (const stack of stacks) rows.push(await runStack(stack, rest));
  console.log(`\n${table(rows)}`);
}
