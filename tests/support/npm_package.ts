// The npm package for tests on Node 22: build (or reuse) the tarball, install
// it into a fresh project, and find a Node 22 to run it with. The machine's
// own node may be too old for node:sqlite (v20), so Node 22 comes from
// `npx -y node@22`; set POD_BROKER_TEST_NODE (say, to 22.13.0) to try another
// version, and POD_BROKER_TEST_TARBALL to test a tarball built earlier.
import { join } from "node:path";
import { fileURLToPath } from "node:url";

/** The repository's root directory. */
export const ROOT: string = fileURLToPath(new URL("../..", import.meta.url));
/** The npm spec of the Node that runs the package. */
export const NODE_SPEC = `node@${Deno.env.get("POD_BROKER_TEST_NODE") ?? "22"}`;
/** The build's inputs: a change in any of them makes the tarball stale. */
const BUILD_INPUTS = [
  "src",
  "scripts/build_npm.ts",
  "tests/support/npm_layout.ts",
  "deno.json",
  "README.md",
  "LICENSE",
];
const MINUTE = 60_000;

/** deno.json's version: the package's. */
export async function packageVersion(): Promise<string> {
  const { version } = JSON.parse(
    await Deno.readTextFile(join(ROOT, "deno.json")),
  );
  return version;
}

/**
 * The tarball's path, running `scripts/build_npm.ts` when it is stale.
 * POD_BROKER_TEST_TARBALL names a tarball to use as it is (one built
 * earlier in CI, say), without building.
 */
export async function ensureTarball(): Promise<string> {
  const given = Deno.env.get("POD_BROKER_TEST_TARBALL");
  if (given) return given;
  const tarball = join(ROOT, `pod-broker-${await packageVersion()}.tgz`);
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

/**
 * A fresh temp project (`"type": "module"`) with `tarball` installed, as a
 * user's would be. The caller removes the directory.
 */
export async function installTarball(tarball: string): Promise<string> {
  const project = await Deno.makeTempDir({ prefix: "pod-broker-npm-test-" });
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
  return project;
}

/** The path of the Node 22 binary (fetched by npx on first use). */
export async function nodePath(): Promise<string> {
  return (await run(
    "npx",
    ["-y", NODE_SPEC, "-p", "process.execPath"],
    ROOT,
    3 * MINUTE,
  )).trim();
}

/** Runs a command with a time limit; returns its stdout, throws with its output. */
export async function run(
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
