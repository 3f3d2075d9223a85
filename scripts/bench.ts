// Runs both side-by-side harnesses in ../shared/bench against the working
// tree and prints the ratios issue 12 asks for, from one run:
//
//   deno task bench:all                  # HTTP, then signaling (~6 minutes)
//   deno task bench:all --only signaling # or --only http
//
// HTTP: ../shared/bench/http/run.sh (its own table, ratios included).
// Signaling: ../shared/bench/signaling/run.sh, one fresh server per scenario,
// for four servers: the PeerJS server 1.0.2 (on the machine's node), the
// broker on Deno (src/, limits lifted by the harness's launcher), the npm build
// under Node 22 (the tarball the tests build, limits lifted the same way), and
// the bare Deno relay. Scenarios: closed-loop throughput with the signaling mix
// (CPU per relayed message), 2,000 held sockets (KB per socket), and an open
// loop at 5,000 msg/s (p99.9 latency; the median of three runs, each with a
// fresh server: on a shared 2-core machine one stall of the host moves a
// single run's p99.9 by ten times).
import { join } from "node:path";
import {
  ensureTarball,
  installTarball,
  nodePath,
  ROOT,
} from "../tests/support/npm_package.ts";

const SHARED = join(ROOT, "..", "shared", "bench");
const only = Deno.args.includes("--only")
  ? Deno.args[Deno.args.indexOf("--only") + 1]
  : null;
if (only !== null && only !== "http" && only !== "signaling") {
  console.error("usage: bench.ts [--only http|signaling]");
  Deno.exit(2);
}

/** The broker's limits lifted for a closed-loop run, as the harness does. */
const LIFTED = {
  maxPeersPerSession: 1_000_000,
  maxSockets: 1_000_000,
  rateLimitBurst: 1_000_000_000,
  rateLimitPerSecond: 1_000_000_000,
};

async function sh(
  command: string,
  args: string[],
  env: Record<string, string> = {},
  cwd = ROOT,
): Promise<string> {
  const out = await new Deno.Command(command, {
    args,
    cwd,
    env,
    stdin: "null",
    stdout: "piped",
    stderr: "inherit",
  }).output();
  const text = new TextDecoder().decode(out.stdout);
  if (!out.success) {
    throw new Error(`${command} ${args.join(" ")} exited with ${out.code}`);
  }
  return text;
}

if (only !== "signaling") {
  console.log(await sh("bash", [join(SHARED, "http", "run.sh"), "."]));
}

if (only !== "http") {
  const signaling = join(SHARED, "signaling");
  const deps = Deno.env.get("BENCH_DEPS") ??
    (await sh("bash", [join(signaling, "install-deps.sh")]))
      .trim().split("\n").pop()!;
  // The npm build, with a launcher that lifts the same limits.
  const app = await installTarball(await ensureTarball());
  await Deno.writeTextFile(
    join(app, "launch.mjs"),
    `import { createSignalServer, MemoryRegistry } from "pod-broker";
const server = await createSignalServer({
  registry: new MemoryRegistry(),
  port: Number(process.argv[2]),
  hostname: "127.0.0.1",
  signaling: ${JSON.stringify(LIFTED)},
});
for (const signal of ["SIGTERM", "SIGINT"]) {
  process.on(signal, () => server.close().finally(() => process.exit(0)));
}
`,
  );
  const node22 = await nodePath();
  const servers: { name: string; env: Record<string, string> }[] = [
    { name: "PeerJS", env: { ADAPTER: "peerjs" } },
    {
      name: "pod-broker, Deno",
      env: { ADAPTER: "podbroker", POD_BROKER_DIR: ROOT },
    },
    {
      name: "pod-broker, npm on Node 22",
      env: {
        ADAPTER: "podbroker",
        PORT: "8789",
        PODBROKER_VERIFY: "0",
        SERVER_CWD: app,
        SERVER_CMD: `${node22} launch.mjs 8789`,
      },
    },
    {
      name: "bare Deno relay",
      env: {
        ADAPTER: "podbroker",
        PORT: "8788",
        PODBROKER_VERIFY: "0",
        SERVER_CMD: `deno run --allow-net=127.0.0.1 ${
          join(signaling, "bare_relay.ts")
        } 8788`,
      },
    },
  ];
  const scenarios = [
    ["throughput", "--pairs", "50", "--duration", "10", "--window", "8"],
    ["conns", "--n", "2000", "--hold", "10"],
    ["latency", "--pairs", "50", "--rate", "5000", "--duration", "10"],
  ];
  const results = new Map<string, Record<string, number>>();
  for (const server of servers) {
    for (const scenario of scenarios) {
      const runs: Record<string, number>[] = [];
      for (let i = 0; i < (scenario[0] === "latency" ? 3 : 1); i++) {
        const out = await sh(
          "bash",
          [join(signaling, "run.sh"), ...scenario],
          { BENCH_DEPS: deps, ...server.env },
          signaling,
        );
        const line = out.split("\n").find((l) => l.startsWith("RESULT "));
        if (line) runs.push(JSON.parse(line.slice(7)));
      }
      runs.sort((a, b) => (a.p999_ms ?? 0) - (b.p999_ms ?? 0));
      const median = runs[Math.floor(runs.length / 2)];
      if (median) results.set(`${server.name}/${scenario[0]}`, median);
    }
  }
  const figure = (server: string, scenario: string, key: string) =>
    results.get(`${server}/${scenario}`)?.[key];
  const ratio = (a?: number, b?: number) =>
    a === undefined || b === undefined ? "n/a" : (a / b).toFixed(2);
  const rows = servers.map(({ name }) => ({
    name,
    cpu: figure(name, "throughput", "server_cpu_us_per_msg"),
    kb: figure(name, "conns", "server_kb_per_conn"),
    p999: figure(name, "latency", "p999_ms"),
  }));
  console.log(
    "signaling  (throughput: 50 pairs, signaling mix; conns: 2,000 held; latency: 5,000 msg/s, median of 3)",
  );
  console.log(
    "    server                        CPU us/msg   KB/socket   p99.9 ms",
  );
  for (const row of rows) {
    console.log(
      `    ${row.name.padEnd(28)}  ${String(row.cpu ?? "n/a").padStart(10)}  ${
        String(row.kb ?? "n/a").padStart(10)
      }  ${String(row.p999 ?? "n/a").padStart(9)}`,
    );
  }
  const [peer, deno, node, bare] = rows as [
    typeof rows[0],
    typeof rows[0],
    typeof rows[0],
    typeof rows[0],
  ];
  console.log(
    `    Deno/bare relay: CPU ${ratio(deno.cpu, bare.cpu)}, memory ${
      ratio(deno.kb, bare.kb)
    }   Node 22 build/PeerJS: CPU ${ratio(node.cpu, peer.cpu)}, memory ${
      ratio(node.kb, peer.kb)
    }`,
  );
  console.log(
    `    p99.9 at 5k msg/s vs PeerJS: Deno ${
      ratio(deno.p999, peer.p999)
    }, Node 22 build ${ratio(node.p999, peer.p999)}`,
  );
  await Deno.remove(app, { recursive: true });
}
