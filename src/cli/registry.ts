/**
 * Opens the registry that `--registry` names, for `serve` and the operator
 * commands, with a one-line usage error for a bad choice.
 *
 * @module
 */

import { hostEnv, hostPid, nodeBuiltin } from "../_util/host.ts";
import { MemoryRegistry } from "../registries/memory.ts";
import type { Registry } from "../registries/types.ts";
import { UsageError } from "./usage_error.ts";
import { missingPermission } from "./permission.ts";

/** Where the registry of `--registry postgres` is, besides `--data-dir`. */
export interface RegistryLocation {
  /** The `--database-url` value. */
  databaseUrl?: string | undefined;
  /** The environment (`DATABASE_URL`). @default {the process environment} */
  env?: Record<string, string | undefined>;
  /**
   * Whether a broker may be running on it (operator commands): then SQLite
   * leaves files no record names alone, as they may be its uploads in
   * flight, and a directory without a broker's database is refused rather
   * than made.
   * @default {false}
   */
  besideBroker?: boolean;
}

/**
 * The registry of `kind` ("memory", "sqlite" or "postgres").
 *
 * @param kind The `--registry` value.
 * @param dataDir The `--data-dir` value.
 * @param location The `--database-url` value and the environment.
 * @returns The opened registry (for postgres: connected and migrated).
 * @throws {UsageError} For an unknown kind, a flag of another kind, a
 * missing or unwritable directory, a missing, malformed or unreachable
 * database (the URL, which may hold a password, is never shown).
 */
export async function openRegistry(
  kind: string,
  dataDir: string | undefined,
  location: RegistryLocation = {},
): Promise<Registry> {
  const { databaseUrl, env = hostEnv() } = location;
  if (kind !== "memory" && kind !== "sqlite" && kind !== "postgres") {
    throw new UsageError(
      `Cannot use --registry '${kind}': expected memory, sqlite or postgres`,
    );
  }
  if (databaseUrl !== undefined && kind !== "postgres") {
    throw new UsageError("--database-url needs --registry postgres");
  }
  if (dataDir !== undefined && kind !== "sqlite") {
    throw new UsageError("--data-dir needs --registry sqlite");
  }
  if (kind === "memory") return new MemoryRegistry();
  if (kind === "postgres") return await openPostgres(databaseUrl, env);
  if (dataDir === undefined || dataDir === "") {
    throw new UsageError("--registry sqlite needs --data-dir PATH");
  }
  // Fail early and plainly if the directory cannot be written.
  if (isNonDirectory(dataDir)) {
    throw new UsageError(
      `Cannot use --data-dir '${dataDir}': not a directory: pass a directory (it is made if missing)`,
    );
  }
  // The operator's commands read a broker's data: a directory without its
  // database is a typo, and making one there would hide it.
  if (location.besideBroker === true) assertBrokerData(dataDir);
  const { mkdirSync, rmSync, writeFileSync } = nodeBuiltin("node:fs");
  const probe = nodeBuiltin("node:path").join(
    dataDir,
    `.write-probe-${hostPid()}`,
  );
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
  // Its module (and node:sqlite) loads only for --registry sqlite.
  const { SqliteRegistry } = await import("../registries/sqlite.ts");
  return new SqliteRegistry({
    dataDir,
    removeStrays: location.besideBroker !== true,
  });
}

/**
 * A connected, migrated `PostgresRegistry` (its module, and the client, are
 * loaded only here).
 */
async function openPostgres(
  given: string | undefined,
  env: Record<string, string | undefined>,
): Promise<Registry> {
  const url = given ?? env.DATABASE_URL;
  if (url === undefined || url === "") {
    throw new UsageError(
      "--registry postgres needs --database-url URL or env DATABASE_URL",
    );
  }
  const source = given === undefined ? "env DATABASE_URL" : "--database-url";
  const { PostgresRegistry, PostgresRegistryError } = await import(
    "../registries/postgres.ts"
  );
  try {
    return await PostgresRegistry.open({ url });
  } catch (error) {
    if (missingPermission(error) !== undefined) throw error; // runCli says which
    // A malformed URL is not shown at all; the registry's other messages
    // name host, port and database, never the password.
    if (error instanceof TypeError) {
      throw new UsageError(
        `Cannot use ${source}: expected postgres://USER:PASSWORD@HOST:PORT/DATABASE`,
      );
    }
    const reason = error instanceof PostgresRegistryError
      ? error.reason
      : (error as Error).message;
    throw new UsageError(`Cannot use ${source}: ${reason}`);
  }
}

/**
 * Refuses a `--data-dir` that holds no broker's data (`pods.sqlite`, which a
 * broker makes as it starts), so that nothing is created there.
 */
function assertBrokerData(dataDir: string): void {
  const { existsSync } = nodeBuiltin("node:fs");
  if (!existsSync(dataDir)) {
    throw new UsageError(
      `Cannot use --data-dir '${dataDir}': no such directory: pass the data directory of the broker`,
    );
  }
  if (!existsSync(nodeBuiltin("node:path").join(dataDir, "pods.sqlite"))) {
    throw new UsageError(
      `Cannot use --data-dir '${dataDir}': no pods.sqlite in it: pass the data directory of the broker (it makes pods.sqlite as it starts)`,
    );
  }
}

/** Whether `path` exists and is not a directory. */
function isNonDirectory(path: string): boolean {
  try {
    const { statSync } = nodeBuiltin("node:fs");
    return statSync(path, { throwIfNoEntry: false })?.isDirectory() === false;
  } catch {
    return false; // a file above it, say: the write probe says so
  }
}
