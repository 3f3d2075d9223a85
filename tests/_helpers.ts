// Shared test helpers: a real server on 127.0.0.1 port 0, keys and pods.
import { createSignalServer } from "../src/adapters/deno.ts";
import { generateKeyPair } from "../src/pod/ed25519.ts";
import { signPod, type SignPodOptions } from "../src/pod/sign.ts";
import { silentLogger } from "../src/log.ts";
import { MemoryRegistry } from "../src/registries/memory.ts";
import type {
  Registry,
  SignalServer,
  SignalServerOptions,
} from "../src/types.ts";

/** A running test server and its base URL. */
export interface TestServer extends AsyncDisposable {
  server: SignalServer;
  url: string;
  wsUrl: string;
  registry: Registry;
}

/** Starts a broker on 127.0.0.1, port 0, silent, with a memory registry unless given. */
export async function startServer(
  options: Partial<SignalServerOptions> = {},
): Promise<TestServer> {
  const registry = options.registry ?? new MemoryRegistry();
  const server = await createSignalServer({
    logger: silentLogger,
    ...options,
    registry,
    port: 0,
    hostname: "127.0.0.1",
  });
  const url = `http://127.0.0.1:${server.port}`;
  return {
    server,
    url,
    wsUrl: `ws://127.0.0.1:${server.port}/signal`,
    registry,
    [Symbol.asyncDispose]: () => server.close(),
  };
}

/** A fresh Ed25519 seed. */
export async function newSeed(): Promise<Uint8Array> {
  return (await generateKeyPair()).seed;
}

/** A small HTML document. */
export const SAMPLE_HTML =
  "<!doctype html>\n<html><head><title>Test pod</title></head><body><p>hello</p></body></html>\n";

/** A signed copy of `html` (SAMPLE_HTML by default) with a fresh key. */
export async function signedPod(
  html: string | Uint8Array = SAMPLE_HTML,
  options: SignPodOptions = {},
  seed?: Uint8Array,
): Promise<Uint8Array<ArrayBuffer>> {
  const pod = await signPod(html, seed ?? await newSeed(), options);
  return new Uint8Array(pod);
}

/** POSTs `body` to /pods as text/html. */
export function upload(
  url: string,
  body: BodyInit | null,
  headers: HeadersInit = { "Content-Type": "text/html; charset=utf-8" },
): Promise<Response> {
  return fetch(`${url}/pods`, { method: "POST", headers, body });
}

/** Replaces the first occurrence of ASCII `from` with `to` in the bytes of `pod`. */
export function replaceText(
  pod: Uint8Array,
  from: string,
  to: string,
): Uint8Array<ArrayBuffer> {
  const needle = new TextEncoder().encode(from);
  let at = -1;
  for (let i = 0; i + needle.length <= pod.length && at === -1; i++) {
    if (needle.every((byte, j) => pod[i + j] === byte)) at = i;
  }
  if (at === -1) throw new Error(`Cannot find '${from}' in the pod`);
  const replacement = new TextEncoder().encode(to);
  const out = new Uint8Array(pod.length - needle.length + replacement.length);
  out.set(pod.subarray(0, at));
  out.set(replacement, at);
  out.set(pod.subarray(at + needle.length), at + replacement.length);
  return out;
}

/** A broker process started by {@linkcode spawnBroker}. */
export interface BrokerProcess extends AsyncDisposable {
  /** The port it logged as listening on. */
  port: number;
  /** Sends SIGTERM and resolves with the exit code. */
  stop(): Promise<number>;
}

/**
 * Runs `deno ARGS` (a broker's command line) and waits until it logs
 * "listening on http://HOST:PORT".
 */
export async function spawnBroker(
  args: string[],
  cwd?: string,
): Promise<BrokerProcess> {
  const child = new Deno.Command(Deno.execPath(), {
    args,
    ...(cwd ? { cwd } : {}),
    stdin: "null",
    stdout: "null",
    stderr: "piped",
    env: { NO_COLOR: "1" },
  }).spawn();
  const reader = child.stderr.pipeThrough(new TextDecoderStream()).getReader();
  const release = async () => {
    reader.releaseLock();
    await child.stderr.cancel().catch(() => {});
  };
  let log = "";
  let match: RegExpExecArray | null = null;
  while (!(match = /listening on http:\/\/\S+:(\d+)/.exec(log))) {
    const { done, value } = await reader.read();
    if (done) {
      await release();
      await child.status;
      throw new Error(`The broker ended before listening: ${log}`);
    }
    log += value;
  }
  await release();
  let stopped: Promise<number> | undefined;
  const stop = () => {
    stopped ??= (async () => {
      child.kill("SIGTERM");
      return (await child.status).code;
    })();
    return stopped;
  };
  return {
    port: Number(match[1]),
    stop,
    [Symbol.asyncDispose]: async () => void await stop(),
  };
}

/** `src/mod.ts`: the Deno CLI's entry. */
export const MOD: string = new URL("../src/mod.ts", import.meta.url).pathname;

/** What a finished CLI run printed. */
export interface CliRun {
  /** Exit code. */
  code: number;
  /** Everything written to stdout. */
  stdout: string;
  /** Everything written to stderr. */
  stderr: string;
}

/** Runs `pod-broker ARGS` (the Deno CLI) to the end. */
export async function cli(args: string[]): Promise<CliRun> {
  const { code, stdout, stderr } = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", MOD, ...args],
    stdin: "null",
    env: { NO_COLOR: "1" },
  }).output();
  const text = new TextDecoder();
  return { code, stdout: text.decode(stdout), stderr: text.decode(stderr) };
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
    "--port",
    "0",
    "--hostname",
    "127.0.0.1",
  ]);
}
