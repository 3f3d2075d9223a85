// A WebSocket frame that announces more than the broker allows, streamed
// over a raw TCP connection (node:net) until the broker refuses it.
import assert from "node:assert/strict";
import { connect, type Socket } from "node:net";
import { binaryFrameHeader, SIGNAL_UPGRADE } from "../contract/_wire.ts";
import { nextEmit, within } from "./wait.ts";

/** What announcing and streaming one oversized frame came to. */
export interface OversizedFrame {
  /** Payload bytes written before the broker stopped the connection. */
  sent: number;
  /** The code of the close frame the broker sent, or null. */
  closeCode: number | null;
}

/**
 * Upgrades a raw connection on `/signal`, announces a binary frame of
 * `size` bytes and streams its payload 64 KiB at a time until it is sent in
 * full or the broker closes the connection.
 */
export async function sendOversizedFrame(
  port: number,
  size: number,
): Promise<OversizedFrame> {
  const socket: Socket = connect({ host: "127.0.0.1", port });
  await nextEmit(socket, "connect", "the upgrade's connection");
  let received = new Uint8Array(0);
  let closed = false;
  socket.on("data", (chunk: Uint8Array) => {
    const all = new Uint8Array(received.length + chunk.length);
    all.set(received);
    all.set(chunk, received.length);
    received = all;
  });
  socket.on("error", () => {});
  // bounded: raced with a timer below, then the socket is destroyed
  const ended = new Promise<void>((resolve) =>
    socket.on("close", () => {
      closed = true;
      resolve();
    })
  );
  const text = () => new TextDecoder("latin1").decode(received);
  socket.write(SIGNAL_UPGRADE);
  for (let i = 0; i < 500 && !text().includes("\r\n\r\n") && !closed; i++) {
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  assert.match(text(), /^HTTP\/1\.1 101 /);
  const headEnd = text().indexOf("\r\n\r\n") + 4;
  socket.write(binaryFrameHeader(size));
  const chunk = new Uint8Array(64 * 1024);
  let sent = 0;
  while (sent < size && !closed) {
    const n = Math.min(chunk.length, size - sent);
    const flushed = socket.write(chunk.subarray(0, n));
    sent += n;
    if (!flushed) {
      await within(
        new Promise<void>((resolve) => {
          const done = () => {
            socket.off("drain", done);
            socket.off("close", done);
            resolve();
          };
          socket.on("drain", done);
          socket.on("close", done);
        }),
        `the broker to read the frame or close (${sent} bytes sent)`,
      );
    }
  }
  // The broker ends the connection after its close frame (bounded wait).
  await Promise.race([
    ended,
    new Promise((resolve) => setTimeout(resolve, 5_000)),
  ]);
  socket.destroy();
  await ended;
  const frames = received.subarray(headEnd);
  let closeCode: number | null = null;
  for (let at = 0; at + 2 <= frames.length;) {
    let length = frames[at + 1]! & 0x7f;
    let headLength = 2;
    if (length === 126) {
      length = (frames[at + 2]! << 8) | frames[at + 3]!;
      headLength = 4;
    }
    if ((frames[at]! & 0x0f) === 8 && length >= 2) {
      closeCode = (frames[at + headLength]! << 8) |
        frames[at + headLength + 1]!;
    }
    at += headLength + length;
  }
  return { sent, closeCode };
}
