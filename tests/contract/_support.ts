// Runtime-neutral helpers of the contract suite. The suite runs on Deno
// (tests/contract/deno_test.ts, with src/mod.ts) and on Node 22 (through the
// installed npm package, tests/contract/node_test.ts), so this file imports
// nothing at run time but `node:` built-ins: the broker comes in as
// `ContractApi`, and its types are imported with `import type` only.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { connect, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import process from "node:process";
import {
  type BrokerProcess,
  spawnBroker as spawnProcess,
  type SpawnOptions,
} from "../support/broker_process.ts";
import { sleep } from "../support/ports.ts";
import type * as Core from "../../src/core.ts";
import type * as Adapter from "../../src/adapter.ts";
import type * as BusRedis from "../../src/signaling/bus/redis.ts";
import type * as RegistryPostgres from "../../src/registries/postgres.ts";
import type { CreateSignalServer } from "../../src/cli/main.ts";
import type {
  Registry,
  SignalServer,
  SignalServerOptions,
  SignPodOptions,
} from "../../src/core.ts";

// The low-level helpers live in tests/support/ (runtime-neutral files that
// node_test.ts transpiles with this folder); the suite imports them from here.
export { freePort, sleep, until, waitForPort } from "../support/ports.ts";
export {
  ANY_LOCAL_PORT,
  type BrokerProcess,
  LISTENING,
} from "../support/broker_process.ts";

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

/**
 * A list of cases and the `test(name, fn)` that adds to it, so that a
 * suite file reads like a Deno test file:
 * `const { cases, test } = collect(); test("name", async (api) => {...});`.
 */
export function collect(): {
  cases: ContractCase[];
  test: (
    name: string,
    fn: ContractCase["fn"],
    options?: CaseOptions,
  ) => void;
} {
  const cases: ContractCase[] = [];
  return {
    cases,
    test: (name, fn, options = {}) => cases.push({ name, fn, ...options }),
  };
}

/** A running test server and its URLs. */
export interface TestServer extends AsyncDisposable {
  server: SignalServer;
  /** `http://127.0.0.1:PORT` */
  url: string;
  /** `ws://127.0.0.1:PORT/signal` */
  wsUrl: string;
  registry: Registry;
}

/** Starts a broker on 127.0.0.1, port 0, silent, with a memory registry unless given. */
export async function startServer(
  api: ContractApi,
  options: Partial<SignalServerOptions> = {},
): Promise<TestServer> {
  const registry = options.registry ?? new api.MemoryRegistry();
  const server = await api.createSignalServer({
    logger: api.silentLogger,
    accessLog: "off",
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

/** A small HTML document. */
export const SAMPLE_HTML =
  "<!doctype html>\n<html><head><title>Test pod</title></head><body><p>hello</p></body></html>\n";

/** The sandbox policy every pod response carries first. */
export const SANDBOX_POLICY =
  "sandbox allow-scripts allow-forms allow-modals allow-downloads allow-popups allow-popups-to-escape-sandbox; object-src 'none'; base-uri 'none'";

/** A fresh Ed25519 seed. */
export async function newSeed(api: ContractApi): Promise<Uint8Array> {
  return (await api.generateKeyPair()).seed;
}

/** A signed copy of `html` (SAMPLE_HTML by default) with a fresh key. */
export async function signedPod(
  api: ContractApi,
  html: string | Uint8Array = SAMPLE_HTML,
  options: SignPodOptions = {},
  seed?: Uint8Array,
): Promise<Uint8Array<ArrayBuffer>> {
  const pod = await api.signPod(html, seed ?? await newSeed(api), options);
  return new Uint8Array(pod);
}

/** Asserts each header of `expected` on `response` (null: absent). */
export function assertHeaders(
  response: Response,
  expected: Record<string, string | null>,
): void {
  for (const [name, value] of Object.entries(expected)) {
    assert.equal(response.headers.get(name), value, name);
  }
}

/** POSTs `body` to /pods as text/html. */
export function upload(
  url: string,
  body: BodyInit | null,
  headers: HeadersInit = { "Content-Type": "text/html; charset=utf-8" },
): Promise<Response> {
  return fetch(`${url}/pods`, { method: "POST", headers, body });
}

/** A SHA-256 in base64url that names no stored version. */
export const NO_VERSION = "A".repeat(43);

/**
 * The update headers of `seed` for replacing the version of pod `id`
 * stored now (from its /meta, or `replaces` when given) with `pod`:
 * `Pod-Update-Signature` and `Pod-Update-Replaces`. A pod with no readable
 * manifest gets a signature of a made-up content, so that the broker's own
 * refusal of the body shows.
 */
export async function updateHeaders(
  api: ContractApi,
  url: string,
  id: string,
  pod: Uint8Array,
  seed: Uint8Array,
  replaces?: string,
): Promise<Record<string, string>> {
  if (replaces === undefined) {
    const meta = await fetch(`${url}/${id}/meta`);
    const body = await meta.json().catch(() => null);
    replaces = meta.ok ? body.sha256 as string : NO_VERSION;
  }
  let contentSha256 = NO_VERSION;
  try {
    const json = api.parsePod(pod).json as { contentSha256?: unknown };
    if (typeof json.contentSha256 === "string") {
      contentSha256 = json.contentSha256;
    }
  } catch {
    // not a pod: any signature of the right shape
  }
  const statement = {
    id: /^[A-Za-z0-9]{12}$/.test(id) ? id : "AAAAAAAAAAAA",
    replaces,
    contentSha256,
  };
  const signature = await api.signUpdate(statement, seed).catch(() =>
    api.signUpdate({ ...statement, contentSha256: NO_VERSION }, seed)
  );
  return {
    "Pod-Update-Signature": signature,
    "Pod-Update-Replaces": replaces,
  };
}

/**
 * PUTs `pod` to /ID as text/html with `seed`'s update headers (see
 * {@linkcode updateHeaders}); `headers` are added, or replace them.
 */
export async function putUpdate(
  api: ContractApi,
  url: string,
  id: string,
  pod: Uint8Array<ArrayBuffer>,
  seed: Uint8Array,
  headers: Record<string, string> = {},
): Promise<Response> {
  return await fetch(`${url}/${id}`, {
    method: "PUT",
    headers: {
      "Content-Type": "text/html; charset=utf-8",
      ...await updateHeaders(api, url, id, pod, seed),
      ...headers,
    },
    body: pod,
  });
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

/** Whether two byte arrays are equal (fast enough for 50 MiB). */
export function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/** Checks the RFC 9457 shape of a problem response and returns its body. */
export async function problemOf(
  response: Response,
): Promise<Record<string, unknown>> {
  assert.equal(
    response.headers.get("Content-Type"),
    "application/problem+json",
  );
  const body = await response.json();
  assert.equal(body.status, response.status);
  assert.equal(body.type, "about:blank");
  assert.equal(typeof body.title, "string");
  assert.equal(typeof body.detail, "string");
  return body;
}

/** Checks that `response` is a problem with `status` and `code`. */
export async function assertProblem(
  response: Response,
  status: number,
  code: string,
): Promise<void> {
  assert.equal(response.status, status, `expected ${status} ${code}`);
  assert.equal((await problemOf(response)).code, code);
}

/** A fresh temp directory, and its removal. */
export async function tempDir(
  prefix = "pod-broker-contract-",
): Promise<AsyncDisposable & { path: string }> {
  const path = await mkdtemp(join(tmpdir(), prefix));
  return {
    path,
    [Symbol.asyncDispose]: () => rm(path, { recursive: true, force: true }),
  };
}

/** A JSON frame received on a signaling socket. */
// deno-lint-ignore no-explicit-any
export type Frame = Record<string, any>;

/** A WebSocket client whose received frames queue up for `next()`. */
export class TestClient {
  readonly ws: WebSocket;
  readonly closed: Promise<CloseEvent>;
  #queue: Frame[] = [];
  #waiters: ((frame: Frame) => void)[] = [];

  constructor(url: string, origin?: string) {
    // Deno's and Node's (undici's) WebSocket both take `{ headers }` as
    // their second argument, which the DOM typings do not know.
    const init = origin === undefined
      ? undefined
      : { headers: { Origin: origin } };
    this.ws = new WebSocket(url, init as unknown as string[]);
    this.ws.onmessage = (event) => {
      const frame = JSON.parse(event.data);
      const waiter = this.#waiters.shift();
      if (waiter) waiter(frame);
      else this.#queue.push(frame);
    };
    this.closed = new Promise((resolve) => (this.ws.onclose = resolve));
  }

  /** Resolves once the socket is open. */
  opened(): Promise<void> {
    if (this.ws.readyState === WebSocket.OPEN) return Promise.resolve();
    return new Promise((resolve, reject) => {
      this.ws.onopen = () => resolve();
      this.ws.onerror = () => reject(new Error("WebSocket failed to open"));
    });
  }

  /** The next frame received, failing after `timeoutMs`. */
  next(timeoutMs = 3000): Promise<Frame> {
    const queued = this.#queue.shift();
    if (queued) return Promise.resolve(queued);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.#waiters.splice(this.#waiters.indexOf(waiter), 1);
        reject(new Error("No frame arrived in time"));
      }, timeoutMs);
      const waiter = (frame: Frame) => {
        clearTimeout(timer);
        resolve(frame);
      };
      this.#waiters.push(waiter);
    });
  }

  /** Frames received and not yet taken. */
  get pending(): number {
    return this.#queue.length;
  }

  /** Sends a frame (JSON-encoded unless a string). */
  send(frame: Frame | string): void {
    this.ws.send(typeof frame === "string" ? frame : JSON.stringify(frame));
  }

  /** Joins `session` and returns the `joined` frame. */
  async join(session: string): Promise<Frame> {
    await this.opened();
    this.send({ type: "join", session });
    const joined = await this.next();
    assert.equal(joined.type, "joined", JSON.stringify(joined));
    return joined;
  }

  /** Closes from the client side and waits for the close event. */
  async close(): Promise<CloseEvent> {
    if (this.ws.readyState < WebSocket.CLOSING) this.ws.close();
    return await this.closed;
  }
}

/** Opens `count` clients, joins them to `session` one after another. */
export async function joinAll(
  url: string,
  session: string,
  count: number,
): Promise<{ clients: TestClient[]; ids: string[] }> {
  const clients: TestClient[] = [];
  const ids: string[] = [];
  for (let i = 0; i < count; i++) {
    const client = new TestClient(url);
    const joined = await client.join(session);
    // Earlier peers hear of the newcomer.
    for (const earlier of clients) {
      assert.deepEqual(await earlier.next(), {
        type: "peer-joined",
        peerId: joined.peerId,
      });
    }
    clients.push(client);
    ids.push(joined.peerId);
  }
  return { clients, ids };
}

/**
 * A raw TCP connection to the broker (`node:net`), for what `fetch` and
 * `WebSocket` cannot do: send half a request, stop reading, speak frames.
 */
export class RawConnection {
  readonly socket: Socket;
  /** Resolves once the connection is closed (by either side). */
  readonly ended: Promise<void>;
  #chunks: Uint8Array[] = [];
  #size = 0;

  private constructor(socket: Socket) {
    this.socket = socket;
    socket.on("data", (chunk: Uint8Array) => {
      this.#chunks.push(chunk);
      this.#size += chunk.length;
    });
    this.ended = new Promise((resolve) => {
      socket.on("close", () => resolve());
      // A reset is an end like any other; "close" follows it.
      socket.on("error", () => {});
    });
  }

  /** Connects to 127.0.0.1:`port`. */
  static open(port: number): Promise<RawConnection> {
    const socket = connect({ host: "127.0.0.1", port });
    return new Promise((resolve, reject) => {
      socket.once("connect", () => resolve(new RawConnection(socket)));
      socket.once("error", reject);
    });
  }

  /** Everything received so far. */
  bytes(): Uint8Array {
    if (this.#chunks.length > 1) {
      const all = new Uint8Array(this.#size);
      let at = 0;
      for (const chunk of this.#chunks) {
        all.set(chunk, at);
        at += chunk.length;
      }
      this.#chunks = [all];
    }
    return this.#chunks[0] ?? new Uint8Array(0);
  }

  /** Everything received so far, one character a byte. */
  text(): string {
    return new TextDecoder("latin1").decode(this.bytes());
  }

  /** Writes `data` (a string is sent one byte a character). */
  write(data: string | Uint8Array): Promise<void> {
    return new Promise((resolve, reject) => {
      this.socket.write(
        typeof data === "string" ? latin1(data) : data,
        (error) => (error ? reject(error) : resolve()),
      );
    });
  }

  /** Waits until the received text satisfies `check`, or the connection ends. */
  async readUntil(check: (text: string) => boolean, ms = 5_000) {
    const end = Date.now() + ms;
    let done = false;
    void this.ended.then(() => (done = true));
    while (!check(this.text()) && !done && Date.now() < end) await sleep(10);
    return this.text();
  }

  /** Stops reading: the kernel's buffers fill up, then the sender's. */
  pause(): void {
    this.socket.pause();
  }

  /** Reads again. */
  resume(): void {
    this.socket.resume();
  }

  /** Drops the connection and waits until it is closed. */
  async close(): Promise<void> {
    this.socket.destroy();
    await this.ended;
  }
}

function latin1(text: string): Uint8Array {
  const bytes = new Uint8Array(text.length);
  for (let i = 0; i < text.length; i++) bytes[i] = text.charCodeAt(i);
  return bytes;
}

/**
 * A WebSocket handshake over raw TCP: returns the status line and the open
 * connection (for a silent peer that never answers pings).
 */
export async function rawHandshake(
  port: number,
  headers: Record<string, string> = {},
): Promise<{ status: number; head: string; conn: RawConnection }> {
  const conn = await RawConnection.open(port);
  const extra = Object.entries(headers).map(([k, v]) => `${k}: ${v}\r\n`).join(
    "",
  );
  await conn.write(
    "GET /signal HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n" +
      "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n" +
      extra + "\r\n",
  );
  const text = await conn.readUntil((text) => text.includes("\r\n\r\n"));
  const head = text.slice(0, text.indexOf("\r\n\r\n") + 4);
  const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(head)?.[1] ?? 0);
  return { status, head, conn };
}

/** A masked client text frame (payload under 126 bytes). */
export function maskedTextFrame(text: string): Uint8Array {
  const payload = new TextEncoder().encode(text);
  assert.ok(payload.length < 126);
  const mask = crypto.getRandomValues(new Uint8Array(4));
  const frame = new Uint8Array(6 + payload.length);
  frame[0] = 0x81;
  frame[1] = 0x80 | payload.length;
  frame.set(mask, 2);
  payload.forEach((byte, i) => (frame[6 + i] = byte ^ mask[i % 4]!));
  return frame;
}

/**
 * The header of a masked binary client frame of `size` bytes with a 64-bit
 * length (FIN + binary, a zero mask): its payload may be sent as is.
 */
export function binaryFrameHeader(size: number): Uint8Array {
  const header = new Uint8Array(14);
  header[0] = 0x82;
  header[1] = 0x80 | 127;
  new DataView(header.buffer).setBigUint64(2, BigInt(size));
  return header;
}

/** The upgrade request of a raw WebSocket client to `/signal`. */
export const SIGNAL_UPGRADE: string =
  "GET /signal HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\n" +
  "Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n" +
  "Sec-WebSocket-Version: 13\r\n\r\n";

/** A frame a server sent: its opcode and payload. */
export interface ServerFrame {
  opcode: number;
  payload: Uint8Array;
}

/** The complete unmasked frames in `bytes` (a server's side of a WebSocket). */
export function parseServerFrames(bytes: Uint8Array): ServerFrame[] {
  const frames: ServerFrame[] = [];
  let at = 0;
  while (at + 2 <= bytes.length) {
    let length = bytes[at + 1]! & 0x7f;
    let header = 2;
    if (length === 126) {
      if (at + 4 > bytes.length) break;
      length = (bytes[at + 2]! << 8) | bytes[at + 3]!;
      header = 4;
    } else if (length === 127) {
      if (at + 10 > bytes.length) break;
      length = 0;
      for (let i = 2; i < 10; i++) length = length * 256 + bytes[at + i]!;
      header = 10;
    }
    if (at + header + length > bytes.length) break;
    frames.push({
      opcode: bytes[at]! & 0x0f,
      payload: bytes.subarray(at + header, at + header + length),
    });
    at += header + length;
  }
  return frames;
}

/** An HTTP/1.1 response read off a raw connection. */
export interface RawResponse {
  /** The status code, 0 before the status line arrived. */
  status: number;
  /** The head: status line and header lines. */
  head: string;
  /** The body (de-chunked), as far as it arrived. */
  body: string;
  /** Whether the body arrived whole (Content-Length or the last chunk). */
  complete: boolean;
}

/**
 * Reads the first response in `text`, with either framing: Deno.serve sends
 * a Content-Length, node:http may send chunks.
 */
export function parseRawResponse(text: string): RawResponse {
  const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1] ?? 0);
  const end = text.indexOf("\r\n\r\n");
  if (end === -1) return { status, head: text, body: "", complete: false };
  const head = text.slice(0, end + 2);
  const rest = text.slice(end + 4);
  const length = /\r\ncontent-length: *(\d+)\r\n/i.exec(head);
  if (length) {
    const size = Number(length[1]);
    return {
      status,
      head,
      body: rest.slice(0, size),
      complete: rest.length >= size,
    };
  }
  if (!/\r\ntransfer-encoding: *chunked\r\n/i.test(head)) {
    return { status, head, body: rest, complete: false };
  }
  let body = "";
  let at = 0;
  for (;;) {
    const lineEnd = rest.indexOf("\r\n", at);
    if (lineEnd === -1) return { status, head, body, complete: false };
    const size = parseInt(rest.slice(at, lineEnd), 16);
    if (size === 0) return { status, head, body, complete: true };
    if (lineEnd + 2 + size > rest.length) {
      body += rest.slice(lineEnd + 2);
      return { status, head, body, complete: false };
    }
    body += rest.slice(lineEnd + 2, lineEnd + 2 + size);
    at = lineEnd + 2 + size + 2;
  }
}

/** What a finished CLI run printed. */
export interface CliRun {
  /** Exit code. */
  code: number;
  /** Everything written to stdout. */
  stdout: string;
  /** Everything written to stderr. */
  stderr: string;
}

/** Runs `pod-broker ARGS` (the runtime's CLI) to the end. */
export function runCli(api: ContractApi, args: string[]): Promise<CliRun> {
  const [command, ...prefix] = api.cli;
  return runCommand(command!, [...prefix, ...args]);
}

/** How {@linkcode runCommand} runs a program. */
export interface RunOptions {
  /** The working directory. */
  cwd?: string;
  /** Environment variables added to this process's. */
  env?: Record<string, string>;
  /** Stops (SIGKILL) the program once its output matches this. */
  stopWhen?: RegExp;
  /** Stops (SIGKILL) the program after this many milliseconds. */
  timeoutMs?: number;
}

/**
 * Runs a program to the end (`node:child_process`, on either runtime), or
 * until {@linkcode RunOptions} stops it (then `stopped` is true).
 */
export function runCommand(
  command: string,
  args: string[],
  { cwd, env = {}, stopWhen, timeoutMs }: RunOptions = {},
): Promise<CliRun & { stopped: boolean }> {
  const child = spawn(command, args, {
    stdio: ["ignore", "pipe", "pipe"],
    env: { ...process.env, NO_COLOR: "1", ...env },
    ...(cwd === undefined ? {} : { cwd }),
  });
  let stdout = "";
  let stderr = "";
  let stopped = false;
  const stop = () => {
    stopped = true;
    child.kill("SIGKILL");
  };
  const seen = () => {
    if (stopWhen && (stopWhen.test(stdout) || stopWhen.test(stderr))) stop();
  };
  child.stdout.setEncoding("utf8").on("data", (text) => {
    stdout += text;
    seen();
  });
  child.stderr.setEncoding("utf8").on("data", (text) => {
    stderr += text;
    seen();
  });
  const timer = timeoutMs === undefined
    ? undefined
    : setTimeout(stop, timeoutMs);
  return new Promise((resolve, reject) => {
    child.once("error", reject);
    child.once("close", (code, signal) => {
      clearTimeout(timer);
      resolve({ code: code ?? (signal ? 128 : 1), stdout, stderr, stopped });
    });
  });
}

/**
 * Runs `pod-broker ARGS` (a broker's command line, on the runtime's CLI) and
 * waits until it logs "listening on http://HOST:PORT".
 */
export function spawnBroker(
  api: ContractApi,
  args: string[],
  options: SpawnOptions = {},
): Promise<BrokerProcess> {
  const [command, ...prefix] = api.cli;
  return spawnProcess(command!, [...prefix, ...args], options);
}

/**
 * The TURN REST credential for `username`, computed the long way round
 * (Web Crypto), independently of src/signaling/ice.ts.
 */
export async function expectedTurnCredential(
  secret: string,
  username: string,
): Promise<string> {
  const key = await crypto.subtle.importKey(
    "raw",
    new TextEncoder().encode(secret),
    { name: "HMAC", hash: "SHA-1" },
    false,
    ["sign"],
  );
  const mac = await crypto.subtle.sign(
    "HMAC",
    key,
    new TextEncoder().encode(username),
  );
  return btoa(String.fromCharCode(...new Uint8Array(mac)));
}

/**
 * Sends one request (`head`, then `body`) over raw TCP to 127.0.0.1:`port`
 * and reads its response: for what fetch will not send, such as a Host of
 * its own.
 */
export async function rawRequest(
  port: number,
  head: string,
  body: Uint8Array = new Uint8Array(0),
): Promise<RawResponse> {
  const conn = await RawConnection.open(port);
  try {
    await conn.write(head);
    if (body.length > 0) await conn.write(body);
    const text = await conn.readUntil((text) =>
      parseRawResponse(text).complete
    );
    return parseRawResponse(text);
  } finally {
    await conn.close();
  }
}

/** A raw connection that announced an upload and sent `sent` of it. */
export async function announce(
  port: number,
  contentLength: number,
  sent: string | Uint8Array,
): Promise<RawConnection> {
  const conn = await RawConnection.open(port);
  await conn.write(
    `POST /pods HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: text/html\r\nContent-Length: ${contentLength}\r\n\r\n`,
  );
  await conn.write(sent);
  return conn;
}
