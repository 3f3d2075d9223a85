// The npm package on Node 22: build (or reuse) the tarball, install it into a
// fresh project, and run the adapter checks there through the package's
// public API, plus `npx pod-broker --help`. The machine's own node may be too
// old for node:sqlite (v20), so Node 22 comes from `npx -y node@22`; set
// POD_BROKER_TEST_NODE (say, to 22.13.0) to try another version.
import assert from "node:assert/strict";
import { delimiter, dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import ts from "typescript";
import { runAdapterChecks } from "./_adapter_checks.ts";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const NODE = `node@${Deno.env.get("POD_BROKER_TEST_NODE") ?? "22"}`;
/** The build's inputs: a change in any of them makes the tarball stale. */
const BUILD_INPUTS = [
  "src",
  "scripts/build_npm.ts",
  "deno.json",
  "README.md",
  "LICENSE",
];
const MINUTE = 60_000;

Deno.test("createSignalServer() on Deno passes the adapter checks", async () => {
  await runAdapterChecks(await import("../src/mod.ts"));
});

Deno.test("npm package installs and serves on Node 22", async (t) => {
  let tarball = "";
  await t.step(
    "build:npm packs the tarball (or it is up to date)",
    async () => {
      tarball = await ensureTarball();
    },
  );

  const project = await Deno.makeTempDir({ prefix: "pod-broker-npm-test-" });
  try {
    await t.step("npm installs the tarball into a fresh project", async () => {
      await Deno.writeTextFile(
        join(project, "package.json"),
        JSON.stringify({ name: "npm-test", private: true, type: "module" }),
      );
      await run(
        "npm",
        ["install", "--no-audit", "--no-fund", "--no-package-lock", tarball],
        project,
        3 * MINUTE,
      );
    });

    await t.step(
      "the adapter checks pass on Node 22 via the public API",
      async () => {
        // The checks import only node: built-ins, so plain transpiling does.
        const source = await Deno.readTextFile(
          join(ROOT, "tests/_adapter_checks.ts"),
        );
        const { outputText } = ts.transpileModule(source, {
          compilerOptions: {
            module: ts.ModuleKind.ESNext,
            target: ts.ScriptTarget.ES2022,
          },
        });
        await Deno.writeTextFile(join(project, "checks.mjs"), outputText);
        await Deno.writeTextFile(
          join(project, "main.mjs"),
          [
            'import * as api from "pod-broker";',
            'import { runAdapterChecks } from "./checks.mjs";',
            "await runAdapterChecks(api);",
            "console.log(`checks passed on ${process.version}`);",
          ].join("\n"),
        );
        const stdout = await run(
          "npx",
          ["-y", NODE, "main.mjs"],
          project,
          3 * MINUTE,
        );
        assert.match(stdout, /checks passed on v\d+\./);
      },
    );

    await t.step("npx pod-broker --help and --version work", async () => {
      // Put Node 22 first on PATH, so that the bin's `#!/usr/bin/env node`
      // (and npx itself) run on it.
      const node = (await run(
        "npx",
        ["-y", NODE, "-p", "process.execPath"],
        project,
        2 * MINUTE,
      )).trim();
      const env = {
        PATH: `${dirname(node)}${delimiter}${Deno.env.get("PATH") ?? ""}`,
      };
      const help = await run(
        "npx",
        ["pod-broker", "--help"],
        project,
        MINUTE,
        env,
      );
      assert.match(help, /^pod-broker \d+\.\d+\.\d+/);
      assert.match(help, /--registry memory\|sqlite/);
      const version = await run(
        "npx",
        ["pod-broker", "--version"],
        project,
        MINUTE,
        env,
      );
      const config = JSON.parse(
        await Deno.readTextFile(join(ROOT, "deno.json")),
      );
      assert.equal(version.trim(), config.version);
    });
  } finally {
    await Deno.remove(project, { recursive: true });
  }
});

/** The tarball's path, running `scripts/build_npm.ts` when it is stale. */
async function ensureTarball(): Promise<string> {
  const { version } = JSON.parse(
    await Deno.readTextFile(join(ROOT, "deno.json")),
  );
  const tarball = join(ROOT, `pod-broker-${version}.tgz`);
  const built = await Deno.stat(tarball).then((s) => s.mtime, () => null);
  if (built === null || await newestInput() > built) {
    await run(
      Deno.execPath(),
      ["run", "-A", "scripts/build_npm.ts"],
      ROOT,
      5 * MINUTE,
    );
  }
  return tarball;
}

async function newestInput(): Promise<Date> {
  let newest = new Date(0);
  async function visit(path: string): Promise<void> {
    const info = await Deno.stat(path).catch(() => null);
    if (info === null) return;
    if (info.isDirectory) {
      for await (const entry of Deno.readDir(path)) {
        await visit(join(path, entry.name));
      }
    } else if (info.mtime && info.mtime > newest) {
      newest = info.mtime;
    }
  }
  for (const input of BUILD_INPUTS) await visit(join(ROOT, input));
  return newest;
}

/** Runs a command with a time limit; returns its stdout, throws with its output. */
async function run(
  command: string,
  args: string[],
  cwd: string,
  timeoutMs: number,
  env?: Record<string, string>,
): Promise<string> {
  const options: Deno.CommandOptions = {
    args,
    cwd,
    stdout: "piped",
    stderr: "piped",
    signal: AbortSignal.timeout(timeoutMs),
  };
  if (env) options.env = env;
  const { code, stdout, stderr } = await new Deno.Command(command, options)
    .output();
  const out = new TextDecoder().decode(stdout);
  if (code !== 0) {
    throw new Error(
      `'${command} ${args.join(" ")}' exited with ${code}\n${out}${
        new TextDecoder().decode(stderr)
      }`,
    );
  }
  return out;
}
