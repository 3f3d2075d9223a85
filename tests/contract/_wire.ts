// The wire for the contract cases: a signaling client, raw WebSocket frames
// and raw HTTP.
// Runtime-neutral, like every file here: see _suite.ts.
import assert from "node:assert/strict";
import { connect, type Socket } from "node:net";
import { sleep } from "../support/ports.ts";
import { nextEmit, nextEvent, within } from "../support/wait.ts";

/** A JSON frame received on a signaling socket. */
// deno-lint-ignore no-explicit-any
export type Frame = Record<string, any>;

/** A WebSocket client whose received frames queue up for `next()`. */
export class TestClient {
  readonly ws: WebSocket;
  readonly #closed: Promise<CloseEvent>;
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
    // Kept from the start, so that a close before anyone waits is seen;
    // waited for through `closed`, which is bounded.
    // bounded: by the `closed` getter
    this.#closed = new Promise((resolve) => (this.ws.onclose = resolve));
  }

  /** The close event, failing if it has not come within `WAIT_MS`. */
  get closed(): Promise<CloseEvent> {
    return within(this.#closed, `the close of ${this.ws.url}`);
  }

  /** Resolves once the socket is open; fails if it closes first. */
  async opened(): Promise<void> {
    if (this.ws.readyState === WebSocket.OPEN) return;
    if (this.ws.readyState !== WebSocket.CONNECTING) {
      throw new Error("WebSocket failed to open");
    }
    await nextEvent(this.ws, "open", `${this.ws.url} to open`, {
      failOn: ["error", "close"],
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
 * Two peers of `session`, one on the broker at `urlA` and one on the broker
 * at `urlB` (scale-out): B's join lists A, A hears B join, a signal from B
 * reaches A, and A hears B leave. Both clients are closed at the end.
 */
export async function assertSessionAcross(
  urlA: string,
  urlB: string,
  session: string,
): Promise<void> {
  const onA = new TestClient(urlA);
  const joinedA = await onA.join(session);
  const onB = new TestClient(urlB);
  const joinedB = await onB.join(session);
  assert.deepEqual(joinedB.peers, [joinedA.peerId]);
  assert.deepEqual(await onA.next(), {
    type: "peer-joined",
    peerId: joinedB.peerId,
  });
  const data = { candidate: null };
  onB.send({ type: "signal", to: joinedA.peerId, data });
  assert.deepEqual(await onA.next(), {
    type: "signal",
    from: joinedB.peerId,
    data,
  });
  await onB.close();
  assert.deepEqual(await onA.next(), {
    type: "peer-left",
    peerId: joinedB.peerId,
  });
  await onA.close();
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
    // bounded: every wait on it is raced with a timer, or follows a destroy()
    this.ended = new Promise((resolve) => {
      socket.on("close", () => resolve());
      // A reset is an end like any other; "close" follows it.
      socket.on("error", () => {});
    });
  }

  /** Connects to 127.0.0.1:`port`. */
  static async open(port: number): Promise<RawConnection> {
    const socket = connect({ host: "127.0.0.1", port });
    try {
      await nextEmit(socket, "connect", `a connection to port ${port}`);
    } catch (error) {
      socket.destroy();
      throw error;
    }
    return new RawConnection(socket);
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

  /**
   * Waits for the next whole response, the one after the first `seen`
   * characters received, and returns it.
   */
  async nextResponse(seen: number, ms = 5_000): Promise<string> {
    const text = await this.readUntil(
      (text) => parseRawResponse(text.slice(seen)).complete,
      ms,
    );
    return text.slice(seen);
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

/** The head of a `POST /pods` of `length` bytes, on a raw connection. */
export function uploadHead(length: number): string {
  return `POST /pods HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: text/html\r\nContent-Length: ${length}\r\n\r\n`;
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
