/**
 * Where a pod that `build` or `import` made goes, and how either ends: to
 * standard output or to `--out` with one line saying what was written, and
 * the exit code of a failure (a refusal of the input is 2, the bundler
 * failing is 1, on one line either way).
 *
 * @module
 */

import { writeFile } from "node:fs/promises";
import process from "node:process";
import { BundlerError } from "../bundler/mod.ts";
import { PodError } from "../pod/errors.ts";
import { oneLine } from "../_util/text.ts";
import { fileProblem } from "./input.ts";
import { stderr } from "./io.ts";
import { UsageError } from "./usage_error.ts";

/**
 * Writes `html` to `out`, or to standard output without it, and says what
 * was written (`pod-broker: built OUT (N bytes), signed...`).
 *
 * @param html The pod.
 * @param out The `--out` file, or undefined.
 * @param said What the line says: the verb (`built`), whether it was
 * signed, and what follows (` with KEY`).
 * @throws {UsageError} When the file cannot be written.
 */
export async function writePod(
  html: Uint8Array,
  out: string | undefined,
  said: { verb: string; signed: boolean; more?: string },
): Promise<void> {
  if (out === undefined) {
    await new Promise<void>((done, fail) =>
      process.stdout.write(html, (error) => error ? fail(error) : done())
    );
    return;
  }
  await writeFile(out, html).catch((error) => {
    throw new UsageError(
      `Cannot write the pod to '${out}': ${fileProblem(error)}`,
    );
  });
  stderr(
    `pod-broker: ${said.verb} ${out} (${
      html.length.toLocaleString("en")
    } bytes)${said.signed ? ", signed" : ""}${said.more ?? ""}\n`,
  );
}

/**
 * The exit code of a failed `build` or `import`, its line written: 2 for
 * a refusal of the input (`refusals`, or a pod the format refuses), 1 for
 * the bundler (the machine, not the input).
 *
 * @param error What was thrown.
 * @param refusals The command's own errors that refuse its input.
 * @returns The exit code.
 * @throws {unknown} `error`, when it is neither.
 */
export function failureCode(
  error: unknown,
  refusals: readonly (abstract new (...args: never[]) => Error)[],
): number {
  const refused = error instanceof PodError ||
    refusals.some((type) => error instanceof type);
  if (!refused && !(error instanceof BundlerError)) throw error;
  stderr(`pod-broker: ${oneLine((error as Error).message)}\n`);
  return refused ? 2 : 1;
}
