// Shared test helpers for Deno tests: a real server on 127.0.0.1 port 0,
// keys and pods, broker processes. The runtime-neutral ones live in
// tests/contract/ (the two-runtime contract suite's _suite.ts,
// _servers.ts, _pods.ts and _wire.ts) and are bound
// here to the Deno build.
import config from "../../deno.json" with { type: "json" };
import * as mod from "../../src/mod.ts";
import * as adapter from "../../src/adapter.ts";
import { PostgresRegistry } from "../../src/registries/postgres.ts";
import { createRedisBus } from "../../src/signaling/bus/redis.ts";
import type { SignalServerOptions } from "../../src/config/types.ts";
import type { ContractApi } from "../contract/_suite.ts";
import * as pods from "../contract/_pods.ts";
import * as servers from "../contract/_servers.ts";
import {
  ANY_LOCAL_PORT,
  type BrokerProcess,
  spawnBroker as spawnProcess,
} from "./broker_process.ts";

export { ANY_LOCAL_PORT, type BrokerProcess } from "./broker_process.ts";
export { replaceText, SAMPLE_HTML, upload } from "../contract/_pods.ts";
export {
  type CliRun,
  runCommand,
  type TestServer,
} from "../contract/_servers.ts";

/** `src/mod.ts`: the Deno CLI's entry. */
export const MOD: string =
  new URL("../../src/mod.ts", import.meta.url).pathname;

/** The Deno build as the contract suite sees it (tests/contract/). */
export const DENO_API: ContractApi = {
  ...mod,
  ...adapter,
  createRedisBus,
  PostgresRegistry,
  runtime: "deno",
  http: "Deno.serve",
  cli: [Deno.execPath(), "run", "-A", MOD],
  version: config.version,
};

/** `fn` of tests/contract/, bound to the Deno build. */
function bound<A extends unknown[], R>(
  fn: (api: ContractApi, ...args: A) => R,
): (...args: A) => R {
  return (...args) => fn(DENO_API, ...args);
}

/** Starts a broker on 127.0.0.1, port 0, silent, with a memory registry unless given. */
export const startServer = bound(servers.startServer);

/** A fresh Ed25519 seed. */
export const newSeed = bound(pods.newSeed);

/** A signed copy of `html` (SAMPLE_HTML by default) with a fresh key. */
export const signedPod = bound(pods.signedPod);

/**
 * PUTs `pod` to /ID as text/html with `seed`'s `Pod-Update-Signature` for
 * the version stored now (from /ID/meta).
 */
export const putUpdate = bound(pods.putUpdate);

/**
 * Runs `deno ARGS` (a broker's command line) and waits until it logs
 * "listening on http://HOST:PORT".
 */
export function spawnBroker(
  args: string[],
  cwd?: string,
  env: Record<string, string> = {},
): Promise<BrokerProcess> {
  return spawnProcess(Deno.execPath(), args, { ...(cwd ? { cwd } : {}), env });
}

/** Runs `pod-broker ARGS` (the Deno CLI) to the end, with `env` added. */
export async function cli(
  args: string[],
  env: Record<string, string> = {},
): Promise<servers.CliRun> {
  const { code, stdout, stderr } = await servers.runCommand(
    Deno.execPath(),
    ["run", "-A", MOD, ...args],
    { env },
  );
  return { code, stdout, stderr };
}

/** A CLI broker on 127.0.0.1, port 0, on the SQLite registry in `dataDir`. */
export function spawnSqliteBroker(dataDir: string): Promise<BrokerProcess> {
  return spawnBroker([
    "run",
    "-A",
    MOD,
    "--registry",
    "sqlite",
    "--data-dir",
    dataDir,
    ...ANY_LOCAL_PORT,
  ]);
}

/** A broker on 127.0.0.1 that can be stopped and started again on its port. */
export interface RestartableBroker {
  /** `http://127.0.0.1:PORT` */
  url: string;
  /** The broker's port (the same after a restart). */
  port: number;
  /** Stops the broker (idempotent). */
  stop(): Promise<void>;
  /** Starts it again on the same port, with the same registry. */
  start(): Promise<void>;
}

/**
 * Starts a silent broker on 127.0.0.1, port 0, with a memory registry
 * unless given, that can be stopped and started again on its port.
 */
export async function restartableBroker(
  options: Partial<SignalServerOptions> = {},
): Promise<RestartableBroker> {
  const registry = options.registry ?? new DENO_API.MemoryRegistry();
  const listen = (port: number) =>
    DENO_API.createSignalServer({
      logger: DENO_API.silentLogger,
      accessLog: "off",
      ...options,
      registry,
      port,
      hostname: "127.0.0.1",
    });
  const first = await listen(0);
  const port = first.port;
  let server: { close(): Promise<void> } | null = first;
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    async stop() {
      await server?.close();
      server = null;
    },
    async start() {
      server = await listen(port);
    },
  };
}
