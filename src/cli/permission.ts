/**
 * A Deno permission the command line did not grant (`--allow-env`,
 * `--allow-read=...`): the user's to fix, so the CLI names it on one line
 * and exits 2, never "a bug". Node has no permissions by default; its
 * `--permission` model's errors (`ERR_ACCESS_DENIED`) are told the same way.
 *
 * @module
 */

/** Deno's error names for a permission that was not granted. */
const DENIED_NAMES = new Set(["NotCapable", "PermissionDenied"]);

/**
 * The one-line reason when `error` (or an error it was caused by) is a
 * missing permission, else undefined.
 *
 * @param error Anything thrown.
 * @returns For example `Requires env access to "PGSSL", run again with the
 * --allow-env flag`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { missingPermission } from "./permission.ts";
 *
 * const denied = Object.assign(
 *   new Error('Requires env access to "PGSSL", run again with the --allow-env flag'),
 *   { name: "NotCapable" },
 * );
 * assert.match(missingPermission(new Error("wrapped", { cause: denied }))!, /--allow-env/);
 * assert.equal(missingPermission(new Error("other")), undefined);
 * ```
 */
export function missingPermission(error: unknown): string | undefined {
  for (let depth = 0; depth < 5 && error instanceof Error; depth++) {
    const { code } = error as { code?: unknown };
    if (DENIED_NAMES.has(error.name) || code === "ERR_ACCESS_DENIED") {
      return error.message.split("\n")[0];
    }
    error = error.cause;
  }
  return undefined;
}

/**
 * The CLI's line for a missing permission: what the runtime said (Deno's
 * names the flag to add).
 */
export function permissionLine(reason: string): string {
  return `pod-broker: a permission is missing: ${reason}`;
}
