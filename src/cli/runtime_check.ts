/**
 * The runtime the CLI needs: Node 22.13 or later (for `node:sqlite` and the
 * web APIs the broker uses), or any Deno 2. Checked before a command runs,
 * so that an old Node says so on one line instead of failing deep inside.
 *
 * @module
 */

/** The oldest Node the npm package supports, as [major, minor]. */
export const MIN_NODE: readonly [number, number] = [22, 13];

/**
 * What is wrong with this runtime, or undefined when it will do.
 *
 * @param versions `process.versions` (Deno sets `deno`, and a `node` of
 * its own that is not checked).
 * @returns A one-line message such as "pod-broker needs Node 22.13 or later
 * (this is 20.19.1)", or undefined.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { runtimeProblem } from "./runtime_check.ts";
 *
 * assert.equal(
 *   runtimeProblem({ node: "20.19.1" }),
 *   "pod-broker needs Node 22.13 or later (this is 20.19.1)",
 * );
 * assert.equal(runtimeProblem({ node: "22.13.0" }), undefined);
 * assert.equal(runtimeProblem({ node: "20.0.0", deno: "2.9.6" }), undefined);
 * ```
 */
export function runtimeProblem(
  versions: Readonly<Record<string, string | undefined>>,
): string | undefined {
  if (versions.deno !== undefined) {
    return undefined;
  }
  const node = versions.node;
  if (node === undefined) return undefined;
  const [major = 0, minor = 0] = node.split(".").map(Number);
  const [needMajor, needMinor] = MIN_NODE;
  if (major > needMajor || (major === needMajor && minor >= needMinor)) {
    return undefined;
  }
  return `pod-broker needs Node ${needMajor}.${needMinor} or later (this is ${node})`;
}
