// A WebSocket over a raw TCP connection for the dialect cases
// (tests/contract/compat.ts, nostr.ts): the one way a runtime-neutral test
// can send the `Host` of a pod host, or see the status of a refused
// upgrade. Imports only `node:` built-ins and the suite's own helpers.
import assert from "node:assert/strict";
import { type Frame, parseServerFrames, RawConnection } from "./_wire.ts";

/** A WebSocket client on a raw connection, speaking JSON text frames. */
export interface RawSocket {
  /** The handshake's status (101 when upgraded). */
  status: number;
  /** Sends one JSON text frame (masked, as a client must). */
  send(frame: unknown): void;
  /** The next JSON text frame the server sent, failing after `ms`. */
  next(ms?: number): Promise<Frame>;
  /** The close code the server sent, once it did (null before). */
  closeCode(): number | null;
  /** Drops the connection. */
  close(): Promise<void>;
}

/**
 * Opens `path` on 127.0.0.1:`port` as a WebSocket with a `Host` of one's
 * choosing (a pod host) and an `Origin` when given.
 *
 * @returns The socket, or its refusal's status (then only `close` works).
 */
export async function rawSocket(
  port: number,
  path: string,
  host = "127.0.0.1",
  origin?: string,
): Promise<RawSocket> {
  const conn = await RawConnection.open(port);
  await conn.write(
    `GET ${path} HTTP/1.1\r\nHost: ${host}:${port}\r\nUpgrade: websocket\r\n` +
      "Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n" +
      "Sec-WebSocket-Version: 13\r\n" +
      (origin === undefined ? "" : `Origin: ${origin}\r\n`) + "\r\n",
  );
  const text = await conn.readUntil((text) => text.includes("\r\n\r\n"));
  const headEnd = text.indexOf("\r\n\r\n") + 4;
  const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1] ?? 0);
  let taken = 0;
  const frames = () =>
    parseServerFrames(conn.bytes().subarray(headEnd)).filter((frame) =>
      frame.opcode === 1 || frame.opcode === 8
    );
  return {
    status,
    send(frame) {
      void conn.write(maskedFrame(JSON.stringify(frame)));
    },
    async next(ms = 3_000) {
      const end = Date.now() + ms;
      for (;;) {
        const text = frames().filter((frame) => frame.opcode === 1)[taken];
        if (text !== undefined) {
          taken++;
          return JSON.parse(new TextDecoder().decode(text.payload));
        }
        if (Date.now() > end) throw new Error("No frame arrived in time");
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
    },
    closeCode() {
      const close = frames().find((frame) => frame.opcode === 8);
      if (close === undefined) return null;
      return (close.payload[0]! << 8) | close.payload[1]!;
    },
    close: () => conn.close(),
  };
}

/** A masked client text frame of any length up to 64 KiB. */
function maskedFrame(text: string): Uint8Array {
  const payload = new TextEncoder().encode(text);
  assert.ok(payload.length < 65_536);
  const long = payload.length >= 126;
  const header = long ? 4 : 2;
  const frame = new Uint8Array(header + 4 + payload.length);
  frame[0] = 0x81;
  if (long) {
    frame[1] = 0x80 | 126;
    frame[2] = payload.length >> 8;
    frame[3] = payload.length & 0xff;
  } else {
    frame[1] = 0x80 | payload.length;
  }
  const mask = crypto.getRandomValues(new Uint8Array(4));
  frame.set(mask, header);
  payload.forEach((byte, i) => (frame[header + 4 + i] = byte ^ mask[i % 4]!));
  return frame;
}
