// WebSocket helpers for signaling tests: a queued client over the real
// WebSocket API, and a raw TCP client for handshakes and silent peers.
import assert from "node:assert/strict";

// deno-lint-ignore no-explicit-any
export type Frame = Record<string, any>;

/** A WebSocket client whose received frames queue up for `next()`. */
export class TestClient {
  readonly ws: WebSocket;
  readonly closed: Promise<CloseEvent>;
  #queue: Frame[] = [];
  #waiters: ((frame: Frame) => void)[] = [];

  constructor(url: string, origin?: string) {
    const init = origin === undefined
      ? undefined
      : { headers: { Origin: origin } };
    // Deno's WebSocket takes headers as a second argument.
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
export async function joinAll(url: string, session: string, count: number) {
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
 * A WebSocket handshake over raw TCP: returns the status line and the open
 * connection (for a silent peer that never answers pings).
 */
export async function rawHandshake(
  port: number,
  headers: Record<string, string> = {},
): Promise<{ status: number; head: string; conn: Deno.TcpConn }> {
  const conn = await Deno.connect({ hostname: "127.0.0.1", port });
  const extra = Object.entries(headers).map(([k, v]) => `${k}: ${v}\r\n`).join(
    "",
  );
  await conn.write(new TextEncoder().encode(
    "GET /signal HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n" +
      "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n" +
      extra + "\r\n",
  ));
  let head = "";
  const buffer = new Uint8Array(4096);
  while (!head.includes("\r\n\r\n")) {
    const n = await conn.read(buffer);
    if (n === null) break;
    head += new TextDecoder().decode(buffer.subarray(0, n));
  }
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
