/**
 * The command line: `serve` (the default) maps flags to the options of
 * `createSignalServer`; `keygen`, `sign`, `verify` and `publish` are the pod
 * author's tools. Bad input exits 2 with a one-line reason.
 *
 * @module
 */

import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import process from "node:process";
import { parseArgs, type ParseArgsConfig } from "node:util";
import { encodeBase64Url } from "./_encoding.ts";
import { jsonLogger } from "./log.ts";
import { generateKeyPair } from "./pod/ed25519.ts";
import { decodePrivateKeyPem, encodePrivateKeyPem } from "./pod/keys.ts";
import { signPod } from "./pod/sign.ts";
import { verifyPod } from "./pod/verify.ts";
import { BrokerError } from "./problem.ts";
import { MemoryRegistry } from "./registries/memory.ts";
import { SqliteRegistry } from "./registries/sqlite.ts";
import type { Registry, SignalServer, SignalServerOptions } from "./types.ts";
import { VERSION } from "./version.ts";

/** The runtime's `createSignalServer`, passed in by `mod.ts` or `mod_node.ts`. */
export type CreateSignalServer = (
  options: SignalServerOptions,
) => Promise<SignalServer>;

/** Thrown for bad command-line input; exits 2. */
class UsageError extends Error {}

const HELP =
  `pod-broker ${VERSION}: signed single-file web apps, served and signaled

Usage:
  pod-broker [serve] [options]          start the broker
  pod-broker keygen [--out FILE]        make an Ed25519 key (PKCS#8 PEM)
  pod-broker sign --key FILE [--name NAME] [--created-at] [--out FILE] POD.html
  pod-broker verify POD.html            check a signed pod
  pod-broker publish --broker URL [--key FILE] [--name NAME] POD.html
                                        sign (with a fresh key if none) and upload

Serve options:
  --registry memory|sqlite     where pods are kept (default memory)
  --data-dir PATH              data directory, required with sqlite
  --port N                     port, 0 for any free one (default 8080)
  --hostname H                 address to listen on (default 0.0.0.0)
  --base-url URL               public URL of the broker (default: the request's origin)
  --trust-proxy                honour X-Forwarded-Proto and X-Forwarded-Host
  --max-blob-bytes N           upload limit (default 52428800)
  --csp STR                    replace the pods' content policy
  --permissions-policy STR     replace the pods' Permissions-Policy
  --sandbox STR                replace the pods' sandbox tokens
  --allowed-origin O           allow WebSockets from O only (repeatable; "null" for pods)
  --max-frame-bytes N          signaling frame limit (default 65536)
  --max-peers-per-session N    (default 32)
  --max-sockets N              (default 10000)
  --join-timeout-ms N          (default 10000)
  --rate-limit-burst N         (default 100)
  --rate-limit-per-second N    (default 50)
  --ping-interval-ms N         (default 30000)
  -h, --help                   show this help
  -V, --version                show the version
`;

const SERVE_FLAGS = {
  registry: { type: "string" },
  "data-dir": { type: "string" },
  port: { type: "string" },
  hostname: { type: "string" },
  "base-url": { type: "string" },
  "trust-proxy": { type: "boolean" },
  "max-blob-bytes": { type: "string" },
  csp: { type: "string" },
  "permissions-policy": { type: "string" },
  sandbox: { type: "string" },
  "allowed-origin": { type: "string", multiple: true },
  "max-frame-bytes": { type: "string" },
  "max-peers-per-session": { type: "string" },
  "max-sockets": { type: "string" },
  "join-timeout-ms": { type: "string" },
  "rate-limit-burst": { type: "string" },
  "rate-limit-per-second": { type: "string" },
  "ping-interval-ms": { type: "string" },
  help: { type: "boolean", short: "h" },
  version: { type: "boolean", short: "V" },
} as const satisfies ParseArgsConfig["options"];

const SIGNALING_FLAGS = {
  "max-frame-bytes": "maxFrameBytes",
  "max-peers-per-session": "maxPeersPerSession",
  "max-sockets": "maxSockets",
  "join-timeout-ms": "joinTimeoutMs",
  "rate-limit-burst": "rateLimitBurst",
  "rate-limit-per-second": "rateLimitPerSecond",
  "ping-interval-ms": "pingIntervalMs",
} as const;

/**
 * Runs the command line.
 *
 * @param args The arguments after the program name.
 * @param createSignalServer The runtime's server factory.
 * @returns The exit code: 0 on success, 1 on failure, 2 on bad input.
 */
export async function runCli(
  args: string[],
  createSignalServer: CreateSignalServer,
): Promise<number> {
  try {
    const [command, ...rest] = args;
    switch (command) {
      case "keygen":
        return await keygen(rest);
      case "sign":
        return await signCommand(rest);
      case "verify":
        return await verifyCommand(rest);
      case "publish":
        return await publish(rest);
      case "serve":
        return await serve(rest, createSignalServer);
      default:
        return await serve(args, createSignalServer);
    }
  } catch (error) {
    if (error instanceof UsageError || error instanceof TypeError) {
      process.stderr.write(`pod-broker: ${error.message} (see --help)\n`);
      return 2;
    }
    process.stderr.write(`pod-broker: ${(error as Error)?.message ?? error}\n`);
    return 1;
  }
}

async function serve(
  args: string[],
  createSignalServer: CreateSignalServer,
): Promise<number> {
  const { values } = parse(args, SERVE_FLAGS, false);
  if (values.help) return print(HELP);
  if (values.version) return print(`${VERSION}\n`);
  const options: SignalServerOptions = {
    registry: openRegistry(values.registry ?? "memory", values["data-dir"]),
  };
  if (values.port !== undefined) {
    options.port = integerFlag("port", values.port, 0, 65_535);
  }
  if (values.hostname !== undefined) options.hostname = values.hostname;
  if (values["base-url"] !== undefined) options.baseUrl = values["base-url"];
  if (values["trust-proxy"]) options.trustProxy = true;
  if (values["max-blob-bytes"] !== undefined) {
    options.maxBlobBytes = integerFlag(
      "max-blob-bytes",
      values["max-blob-bytes"],
      1,
    );
  }
  const podHeaderOptions: NonNullable<SignalServerOptions["podHeaderOptions"]> =
    {};
  if (values.csp !== undefined) podHeaderOptions.csp = values.csp;
  if (values["permissions-policy"] !== undefined) {
    podHeaderOptions.permissionsPolicy = values["permissions-policy"];
  }
  if (values.sandbox !== undefined) podHeaderOptions.sandbox = values.sandbox;
  options.podHeaderOptions = podHeaderOptions;
  const signaling: NonNullable<SignalServerOptions["signaling"]> = {};
  for (const [flag, key] of Object.entries(SIGNALING_FLAGS)) {
    const value = values[flag as keyof typeof SIGNALING_FLAGS];
    if (value !== undefined) signaling[key] = integerFlag(flag, value, 1);
  }
  if (values["allowed-origin"]) {
    signaling.allowedOrigins = values["allowed-origin"];
  }
  options.signaling = signaling;

  const server = await createSignalServer(options);
  const shown = server.hostname.includes(":")
    ? `[${server.hostname}]`
    : server.hostname;
  jsonLogger(
    "info",
    `pod-broker ${VERSION} listening on http://${shown}:${server.port}`,
    {
      registry: values.registry ?? "memory",
    },
  );
  const signal = await new Promise<string>((resolve) => {
    process.once("SIGINT", () => resolve("SIGINT"));
    process.once("SIGTERM", () => resolve("SIGTERM"));
  });
  jsonLogger("info", "Shutting down", { signal });
  await server.close();
  const registry = options.registry as { close?: () => void };
  registry.close?.();
  return 0;
}

function openRegistry(kind: string, dataDir: string | undefined): Registry {
  if (kind === "memory") {
    if (dataDir !== undefined) {
      throw new UsageError("--data-dir needs --registry sqlite");
    }
    return new MemoryRegistry();
  }
  if (kind !== "sqlite") {
    throw new UsageError(
      `Cannot use --registry '${kind}': expected memory or sqlite`,
    );
  }
  if (dataDir === undefined) {
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
  return new SqliteRegistry({ dataDir });
}

async function keygen(args: string[]): Promise<number> {
  const { values } = parse(args, {
    out: { type: "string" },
    help: { type: "boolean" },
  }, false);
  if (values.help) return print(HELP);
  const { seed, publicKey } = await generateKeyPair();
  const pem = encodePrivateKeyPem(seed);
  if (values.out === undefined) {
    process.stdout.write(pem);
  } else {
    await writeFile(values.out, pem, { mode: 0o600, flag: "wx" }).catch(
      (error) => {
        throw new UsageError(
          `Cannot write key to '${values.out}': ${error.code ?? error.message}`,
        );
      },
    );
  }
  process.stderr.write(`publicKey: ${encodeBase64Url(publicKey)}\n`);
  return 0;
}

async function signCommand(args: string[]): Promise<number> {
  const { values, positionals } = parse(args, {
    key: { type: "string" },
    name: { type: "string" },
    "created-at": { type: "boolean" },
    out: { type: "string" },
  }, true);
  if (values.key === undefined) throw new UsageError("sign needs --key FILE");
  const input = onePositional(positionals, "sign");
  const seed = decodePrivateKeyPem(await readText(values.key, "key"));
  const pod = await signPod(await readBytes(input), seed, signOptions(values));
  if (values.out === undefined) process.stdout.write(pod);
  else await writeFile(values.out, pod);
  return 0;
}

async function verifyCommand(args: string[]): Promise<number> {
  const { positionals } = parse(args, {}, true);
  const input = onePositional(positionals, "verify");
  try {
    const { manifest, contentSha256 } = await verifyPod(await readBytes(input));
    const report = {
      valid: true,
      ownerPubkey: manifest.publicKey,
      contentSha256,
      name: manifest.name ?? null,
      createdAt: manifest.createdAt ?? null,
    };
    return print(`${JSON.stringify(report, null, 2)}\n`);
  } catch (error) {
    if (!(error instanceof BrokerError)) throw error;
    process.stderr.write(`pod-broker: ${error.code}: ${error.message}\n`);
    return 1;
  }
}

async function publish(args: string[]): Promise<number> {
  const { values, positionals } = parse(args, {
    broker: { type: "string" },
    key: { type: "string" },
    name: { type: "string" },
    "created-at": { type: "boolean" },
  }, true);
  if (values.broker === undefined) {
    throw new UsageError("publish needs --broker URL");
  }
  const input = onePositional(positionals, "publish");
  let seed: Uint8Array;
  if (values.key !== undefined) {
    seed = decodePrivateKeyPem(await readText(values.key, "key"));
  } else {
    seed = (await generateKeyPair()).seed;
    process.stderr.write(
      "pod-broker: signing with a fresh key (pass --key FILE to keep one)\n",
    );
  }
  const pod = await signPod(await readBytes(input), seed, signOptions(values));
  let endpoint: URL;
  try {
    endpoint = new URL(
      "pods",
      values.broker.endsWith("/") ? values.broker : `${values.broker}/`,
    );
  } catch {
    throw new UsageError(`Cannot use --broker '${values.broker}': not a URL`);
  }
  const response = await fetch(endpoint, {
    method: "POST",
    headers: { "Content-Type": "text/html; charset=utf-8" },
    body: pod as Uint8Array<ArrayBuffer>,
  });
  const body = await response.json().catch(() => null) as
    | { url?: string; code?: string; detail?: string }
    | null;
  if (response.status !== 201 || body?.url === undefined) {
    const reason = body?.code
      ? `${body.code}: ${body.detail}`
      : `HTTP ${response.status}`;
    process.stderr.write(`pod-broker: upload refused: ${reason}\n`);
    return 1;
  }
  return print(`${body.url}\n`);
}

function signOptions(values: { name?: string; "created-at"?: boolean }) {
  const options: { name?: string; createdAt?: true } = {};
  if (values.name !== undefined) options.name = values.name;
  if (values["created-at"]) options.createdAt = true;
  return options;
}

function parse<T extends NonNullable<ParseArgsConfig["options"]>>(
  args: string[],
  options: T,
  allowPositionals: boolean,
) {
  try {
    return parseArgs({ args, options, allowPositionals, strict: true });
  } catch (error) {
    throw new UsageError((error as Error).message.split("\n")[0]!);
  }
}

function onePositional(positionals: string[], command: string): string {
  if (positionals.length !== 1) {
    throw new UsageError(`${command} takes exactly one file`);
  }
  return positionals[0]!;
}

function integerFlag(
  flag: string,
  text: string,
  min: number,
  max = Number.MAX_SAFE_INTEGER,
) {
  const value = /^\d+$/.test(text) ? Number(text) : NaN;
  if (!Number.isSafeInteger(value) || value < min || value > max) {
    throw new UsageError(
      `Cannot use --${flag} '${text}': expected an integer from ${min} to ${max}`,
    );
  }
  return value;
}

async function readBytes(path: string): Promise<Uint8Array> {
  try {
    return new Uint8Array(await readFile(path));
  } catch (error) {
    throw new UsageError(
      `Cannot read '${path}': ${(error as { code?: string }).code ?? error}`,
    );
  }
}

async function readText(path: string, what: string): Promise<string> {
  try {
    return await readFile(path, "utf8");
  } catch (error) {
    throw new UsageError(
      `Cannot read ${what} '${path}': ${(error as { code?: string }).code}`,
    );
  }
}

function print(text: string): number {
  process.stdout.write(text);
  return 0;
}
