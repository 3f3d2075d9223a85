/**
 * What the doc tests need to stand where a reader stands: Deno's cache
 * folder (kept when the test gives the reader a home of their own), and the
 * repository's `scratch/` folder, where the pages put the reader's files,
 * left as it was found.
 *
 * @module
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import { ROOT } from "./doc_blocks.ts";

/**
 * What the reader does differently in the test: the Deno under test for
 * `npx -y deno@2.9.6` (no download), this checkout for `$PWD` (the alias is
 * made in the repository's root) and for `../pod-broker`, and the test's
 * broker for localhost:8080.
 *
 * @param text A command, a script or a file of the docs.
 * @param port The test broker's port.
 * @returns The text as the test runs it.
 */
export function substitute(text: string, port: number): string {
  return text
    .replaceAll("npx -y deno@2.9.6", Deno.execPath())
    .replaceAll("$PWD/", `${ROOT}/`)
    .replaceAll("localhost:8080", `127.0.0.1:${port}`)
    .replaceAll("../pod-broker", ROOT);
}

/**
 * The arguments of a broker command line of the docs (its first line), for
 * the Deno under test, on 127.0.0.1 and a port of its choice.
 *
 * @param text The block whose first line starts the broker.
 * @returns The arguments after the Deno executable.
 */
export function brokerArgs(text: string): string[] {
  const command = text.split("\n")[0]!.replace(/\s+#.*$/, "");
  const [program, ...args] = substitute(command, 0).split(/\s+/);
  assert.equal(program, Deno.execPath());
  const portAt = args.indexOf("--port");
  assert.ok(portAt > 0, `${command} names its port`);
  args.splice(portAt, 2, "--port", "0", "--hostname", "127.0.0.1");
  return args;
}

/** The folder the pages put the reader's files in (git ignores it). */
export const SCRATCH: string = join(ROOT, "scratch");

/**
 * Deno's cache folder (`DENO_DIR`) as the Deno under test sees it now.
 *
 * @returns An absolute path.
 * @throws {Error} When `deno info` fails.
 */
export async function denoDir(): Promise<string> {
  const { code, stdout } = await new Deno.Command(Deno.execPath(), {
    args: ["info", "--json"],
    stdout: "piped",
    stderr: "null",
  }).output();
  if (code !== 0) throw new Error("deno info --json failed");
  return JSON.parse(new TextDecoder().decode(stdout)).denoDir;
}

function entriesOf(dir: string): Set<string> {
  try {
    return new Set([...Deno.readDirSync(dir)].map((entry) => entry.name));
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return new Set();
    throw error;
  }
}

/** What {@linkcode keepScratch} returns. */
export interface Scratch extends AsyncDisposable {
  /**
   * The entries of the repository's root that are new since, but
   * `scratch/`: what the pages left outside the folder they promise.
   */
  leftovers(): string[];
}

/**
 * Notes what the repository's root and `scratch/` hold; on dispose,
 * removes what was added to `scratch/` since (the whole folder when there
 * was none).
 *
 * @returns The disposable.
 */
export function keepScratch(): Promise<Scratch> {
  const top = entriesOf(ROOT);
  const existed = top.has("scratch");
  const before = entriesOf(SCRATCH);
  return Promise.resolve({
    leftovers: () =>
      [...entriesOf(ROOT)].filter((name) =>
        name !== "scratch" && !top.has(name)
      ),
    async [Symbol.asyncDispose]() {
      if (!existed) {
        await Deno.remove(SCRATCH, { recursive: true }).catch(() => {});
        return;
      }
      for (const name of entriesOf(SCRATCH)) {
        if (!before.has(name)) {
          await Deno.remove(join(SCRATCH, name), { recursive: true });
        }
      }
    },
  });
}
