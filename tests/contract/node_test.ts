// The contract suite (tests/contract/) on Node 22, against the npm package:
// the tarball is built (or reused), installed into a fresh project, the
// suite is transpiled there, and ONE Node process runs every case through
// the package's public API (`import * as api from "pod-broker"`) and its
// `pod-broker` bin. Each case is a Deno test here that awaits its result
// line from that run, so a failed Node case fails its own test, with the
// Node error and stack.
import assert from "node:assert/strict";
import { delimiter, dirname, join } from "node:path";
import { pathToFileURL } from "node:url";
import ts from "typescript";
import { type CaseResult, RESULT_PREFIX } from "./_run.ts";
import { CASES } from "./mod.ts";
import {
  ensureTarball,
  installTarball,
  nodePath,
  packageVersion,
  ROOT,
} from "../support/npm_package.ts";

/** The whole Node run's limit: build, install and every case. */
const RUN_TIMEOUT_MS = 15 * 60_000;
const CONTRACT_DIR = join(ROOT, "tests/contract");
/** The runtime-neutral files of tests/support/ that the suite imports. */
const NEUTRAL_SUPPORT = [
  "ports.ts",
  "broker_process.ts",
  "host_request.ts",
  "wait.ts",
  "nostr_sign.ts",
  "little_endian.ts",
];

const NODE_CASES = CASES.filter((c) => c.only?.runtime !== "deno");

/** The one Node run that every test of this file reads from. */
interface NodeRun {
  /** The result line of the case `name`. */
  result(name: string): Promise<CaseResult>;
  /** Resolves once the runner exited; checks what it reported. */
  finished: Promise<RunSummary>;
}

interface RunSummary {
  code: number;
  stderr: string;
  /** Result lines for names the suite does not have. */
  unknown: string[];
  /** Milliseconds per step: build, install, node, transpile, run. */
  timings: Record<string, number>;
}

let started: Promise<NodeRun> | undefined;

/** Starts the Node run on first use; later calls share it. */
function nodeRun(): Promise<NodeRun> {
  started ??= startNodeRun();
  return started;
}

const SETUP_TEST =
  "[node] the npm package builds and installs, and Node 22 starts the suite";

/** The run, for the tests after the first: a failed start is told once. */
async function startedRun(): Promise<NodeRun> {
  try {
    return await nodeRun();
  } catch {
    throw new Error(`The Node run did not start: see '${SETUP_TEST}'`);
  }
}

async function startNodeRun(): Promise<NodeRun> {
  const timings: Record<string, number> = {};
  const time = async <T>(step: string, work: () => Promise<T>): Promise<T> => {
    const start = performance.now();
    try {
      return await work();
    } finally {
      timings[step] = Math.round(performance.now() - start);
    }
  };
  const tarball = await time("build", ensureTarball);
  const [project, node] = await time(
    "install",
    () => Promise.all([installTarball(tarball), nodePath()]),
  );
  try {
    const version = await packageVersion();
    await time("transpile", () => transpileSuite(project, version));
  } catch (error) {
    await Deno.remove(project, { recursive: true });
    throw error;
  }

  const results = new Map<string, PromiseWithResolvers<CaseResult>>();
  for (const { name } of NODE_CASES) {
    const deferred = Promise.withResolvers<CaseResult>();
    // Tests filtered out of this run never await theirs.
    deferred.promise.catch(() => {});
    results.set(name, deferred);
  }
  const unknown: string[] = [];
  const runStart = performance.now();
  const child = new Deno.Command(node, {
    args: ["--enable-source-maps", "main.mjs"],
    cwd: project,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
    env: {
      // Node 22 first on PATH, so that the bin's `#!/usr/bin/env node` (the
      // CLI cases) runs on it too.
      PATH: `${dirname(node)}${delimiter}${Deno.env.get("PATH") ?? ""}`,
      NO_COLOR: "1",
    },
  }).spawn();
  const deadline = setTimeout(() => child.kill("SIGKILL"), RUN_TIMEOUT_MS);
  const stderr = new Response(child.stderr).text();
  const finished = (async (): Promise<RunSummary> => {
    let pending = "";
    for await (
      const text of child.stdout.pipeThrough(new TextDecoderStream())
    ) {
      pending += text;
      let newline;
      while ((newline = pending.indexOf("\n")) !== -1) {
        const line = pending.slice(0, newline);
        pending = pending.slice(newline + 1);
        if (!line.startsWith(RESULT_PREFIX)) continue;
        const result: CaseResult = JSON.parse(
          line.slice(RESULT_PREFIX.length),
        );
        const deferred = results.get(result.name);
        if (deferred) deferred.resolve(result);
        else unknown.push(result.name);
      }
    }
    const { code } = await child.status;
    clearTimeout(deadline);
    timings.run = Math.round(performance.now() - runStart);
    const log = await stderr;
    for (const deferred of results.values()) {
      deferred.reject(
        new Error(
          `The Node run ended (exit ${code}) without reporting this case\n${log}`,
        ),
      );
    }
    // The project is no longer needed (also when a filter skips the last
    // test of this file).
    await Deno.remove(project, { recursive: true }).catch(() => {});
    return { code, stderr: log, unknown, timings };
  })();
  return {
    result: (name) => results.get(name)!.promise,
    finished,
  };
}

/**
 * Transpiles tests/contract/*.ts into `project/contract/*.mjs`, and the
 * runtime-neutral support files into `project/support/` (relative imports
 * rewritten to `.mjs`, source maps inline so that stacks name the .ts lines),
 * and writes `project/main.mjs`, which runs the suite.
 */
async function transpileSuite(project: string, version: string) {
  const contract: string[] = [];
  for await (const entry of Deno.readDir(CONTRACT_DIR)) {
    if (entry.isFile && entry.name.endsWith(".ts")) contract.push(entry.name);
  }
  await transpileFiles(CONTRACT_DIR, contract, join(project, "contract"));
  await transpileFiles(
    join(ROOT, "tests/support"),
    NEUTRAL_SUPPORT,
    join(project, "support"),
  );
  const bin = join(project, "node_modules/.bin/pod-broker");
  await Deno.writeTextFile(
    join(project, "main.mjs"),
    [
      'import process from "node:process";',
      'import * as pkg from "pod-broker";',
      'import * as adapter from "pod-broker/adapter";',
      'import { createRedisBus } from "pod-broker/bus-redis";',
      'import { PostgresRegistry } from "pod-broker/registry-postgres";',
      'import { CASES } from "./contract/mod.mjs";',
      'import { runCases } from "./contract/_run.mjs";',
      "const api = {",
      "  ...pkg,",
      "  ...adapter,",
      "  createRedisBus,",
      "  PostgresRegistry,",
      '  runtime: "node",',
      '  http: "node:http",',
      `  cli: [${JSON.stringify(bin)}],`,
      `  version: ${JSON.stringify(version)},`,
      "};",
      'const cases = CASES.filter((c) => c.only?.runtime !== "deno");',
      "const failed = await runCases(api, cases);",
      // Handles a failed case left open must not keep the run alive.
      "process.exit(failed === 0 ? 0 : 1);",
    ].join("\n"),
  );
}

// The run outlives each test (one child process for all), so the sanitizers
// are off here; on Node the runner checks every case for leaked handles.
const SHARED_RUN = { sanitizeOps: false, sanitizeResources: false } as const;

Deno.test({
  name: SETUP_TEST,
  ...SHARED_RUN,
  fn: async () => void await nodeRun(),
});

for (const { name, only } of CASES) {
  if (only?.runtime === "deno") {
    Deno.test({
      name: `[node] ${name} (Deno only: ${only.why})`,
      ignore: true,
      fn: () => {},
    });
    continue;
  }
  Deno.test({
    name: `[node] ${name}`,
    ...SHARED_RUN,
    fn: async () => {
      const result = await (await startedRun()).result(name);
      if (!result.ok) {
        const error = new Error(`On Node 22: ${result.error}`);
        error.stack = `On Node 22: ${result.stack ?? result.error}`;
        throw error;
      }
    },
  });
}

Deno.test({
  name: "[node] the runner reported every case and exited 0",
  ...SHARED_RUN,
  fn: async () => {
    const summary = await (await startedRun()).finished;
    assert.deepEqual(summary.unknown, []);
    assert.equal(
      summary.code,
      0,
      `The Node run exited ${summary.code}; its stderr:\n${summary.stderr}`,
    );
    const { build, install, transpile, run } = summary.timings;
    console.log(
      `Node run: build ${build} ms, install ${install} ms, ` +
        `transpile ${transpile} ms, ${NODE_CASES.length} cases ${run} ms`,
    );
  },
});

/** Transpiles `dir`'s `names` (TypeScript) into `out` as `.mjs` files. */
async function transpileFiles(dir: string, names: string[], out: string) {
  await Deno.mkdir(out);
  for (const name of names) {
    const fileName = join(dir, name);
    const { outputText } = ts.transpileModule(
      await Deno.readTextFile(fileName),
      {
        fileName,
        compilerOptions: {
          module: ts.ModuleKind.ESNext,
          target: ts.ScriptTarget.ES2022,
          inlineSourceMap: true,
          inlineSources: true,
          sourceRoot: pathToFileURL(`${dir}/`).href,
        },
      },
    );
    const output = outputText.replace(
      /((?:\bfrom|\bimport)\s*\(?\s*["'])(\.{1,2}\/[^"']*?)\.ts(["'])/g,
      "$1$2.mjs$3",
    );
    await Deno.writeTextFile(
      join(out, name.replace(/\.ts$/, ".mjs")),
      output,
    );
  }
}
