// The contract suite's definition: what a case is, what it gets, and
// `test()`, which adds one. The suite runs on Deno
// (tests/contract/deno_test.ts, with src/mod.ts) and on Node 22 (through the
// installed npm package, tests/contract/node_test.ts), so this file and its
// helpers (_servers.ts, _pods.ts, _wire.ts) import nothing at run time but
// `node:` built-ins: the broker comes in as `ContractApi`, and its types are
// imported with `import type` only.
import type * as Core from "../../src/core.ts";
import type * as Adapter from "../../src/adapter.ts";
import type * as BusRedis from "../../src/signaling/bus/redis.ts";
import type * as RegistryPostgres from "../../src/registries/postgres.ts";
import type { CreateSignalServer } from "../../src/cli/main.ts";

/** The runtime a case runs on. */
export type Runtime = "deno" | "node";

/**
 * What a case gets: the package's public exports (`src/core.ts` plus the
 * runtime's `createSignalServer`), its unstable `adapter` subpath, and how to
 * reach the rest of it.
 */
export type ContractApi = typeof Core & typeof Adapter & {
  /** The runtime's server: `adapters/deno.ts` or `adapters/node.ts`. */
  createSignalServer: CreateSignalServer;
  /** The Redis bus (the `bus-redis` subpath of the package). */
  createRedisBus: typeof BusRedis.createRedisBus;
  /** The PostgreSQL registry (the `registry-postgres` subpath). */
  PostgresRegistry: typeof RegistryPostgres.PostgresRegistry;
  /** Which runtime this is. */
  runtime: Runtime;
  /** The HTTP server under the broker: `Deno.serve`, or `node:http` (either runtime's). */
  http: "Deno.serve" | "node:http";
  /** The command line that runs the `pod-broker` CLI, without its arguments. */
  cli: string[];
  /** The version the build must report (deno.json's). */
  version: string;
};

/** One case of the suite. */
export interface ContractCase {
  /** The test's name, unique in the suite. */
  name: string;
  /** Runs the case; rejects on the first failed check. */
  fn: (api: ContractApi) => Promise<void>;
  /** Set when the case runs on one runtime only; `why` says why. */
  only?: { runtime: Runtime; why: string };
  /** Time limit of the Node runner for this case. @default {60000} */
  timeoutMs?: number;
}

/** Options of a case defined with `test()`. */
export type CaseOptions = Pick<ContractCase, "only" | "timeoutMs">;

/** Every case defined so far, in the order the suite files define them. */
const defined: ContractCase[] = [];

/**
 * Adds a case to the suite, so that a suite file reads like a Deno test
 * file: `test("name", async (api) => {...});`. tests/contract/mod.ts imports
 * every suite file and reads the cases with `definedCases()`.
 */
export function test(
  name: string,
  fn: ContractCase["fn"],
  options: CaseOptions = {},
): void {
  defined.push({ name, fn, ...options });
}

/** The cases defined so far, in order. */
export function definedCases(): readonly ContractCase[] {
  return [...defined];
}
