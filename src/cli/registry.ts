/**
 * Opens the registry that `--registry` names, for `serve` and the operator
 * commands, with a one-line usage error for a bad choice.
 *
 * @module
 */

import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import process from "node:process";
import { MemoryRegistry } from "../registries/memory.ts";
import { SqliteRegistry } from "../registries/sqlite.ts";
import type { Registry } from "../types.ts";
import { UsageError } from "./usage_error.ts";

/**
 * The registry of `kind` ("memory" or "sqlite").
 *
 * @param kind The `--registry` value.
 * @param dataDir The `--data-dir` value.
 * @returns The opened registry.
 * @throws {UsageError} For an unknown kind, a missing or unwritable directory.
 */
export function openRegistry(
  kind: string,
  dataDir: string | undefined,
): Promise<Registry> {
  if (kind === "memory") {
    if (dataDir !== undefined) {
      throw new UsageError("--data-dir needs --registry sqlite");
    }
    return Promise.resolve(new MemoryRegistry());
  }
  if (kind !== "sqlite") {
    throw new UsageError(
      `Cannot use --registry '${kind}': expected memory or sqlite`,
    );
  }
  if (dataDir === undefined || dataDir === "") {
    throw new UsageError("--registry sqlite needs --data-dir PATH");
  }
  // Fail early and plainly if the directory cannot be written.
  const probe = join(dataDir, `.write-probe-${process.pid}`);
  try {
    mkdirSync(dataDir, { recursive: true });
    writeFileSync(probe, "");
    rmSync(probe);
  } catch (error) {
    throw new UsageError(
      `Cannot write to --data-dir '${dataDir}': ${
        (error as Error).message.split("\n")[0]
      }`,
    );
  }
  return Promise.resolve(new SqliteRegistry({ dataDir }));
}
