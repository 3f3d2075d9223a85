// Ports for the tests: a free one, and waiting until a server listens on one.
// Runtime-neutral (it imports `node:` built-ins only): the contract suite
// imports it, and tests/contract/node_test.ts transpiles it for Node 22.
import { createSocket } from "node:dgram";
import { connect, createServer } from "node:net";

/** Resolves after `ms`. */
export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Where {@linkcode freePort} looks. */
export interface FreePortOptions {
  /** Free for UDP too (a TURN server listens on both). @default {false} */
  udp?: boolean;
  /** The address. @default {"127.0.0.1"} */
  host?: string;
}

/** A port free on `host` right now, for TCP (and UDP too with `udp`). */
export async function freePort(
  { udp = false, host = "127.0.0.1" }: FreePortOptions = {},
): Promise<number> {
  for (let attempt = 0; attempt < 20; attempt++) {
    const server = createServer();
    const port = await new Promise<number>((resolve, reject) => {
      server.once("error", reject);
      server.listen(
        0,
        host,
        () => resolve((server.address() as { port: number }).port),
      );
    });
    await new Promise((resolve) => server.close(resolve));
    if (!udp) return port;
    const socket = createSocket("udp4");
    const free = await new Promise<boolean>((resolve) => {
      socket.once("error", () => resolve(false));
      socket.bind(port, host, () => resolve(true));
    });
    await new Promise<void>((resolve) => socket.close(() => resolve()));
    if (free) return port;
  }
  throw new Error("Cannot find a free port");
}

/**
 * Whether something accepts a TCP connection on `host:port` now (a
 * connection not made within `timeoutMs` counts as no).
 */
export function accepts(
  port: number,
  host = "127.0.0.1",
  timeoutMs = 5_000,
): Promise<boolean> {
  return new Promise<boolean>((resolve) => {
    const socket = connect(port, host);
    const answer = (accepted: boolean) => {
      socket.destroy();
      resolve(accepted);
    };
    socket.setTimeout(timeoutMs, () => answer(false));
    socket.once("connect", () => answer(true));
    socket.once("error", () => answer(false));
  });
}

/** How long {@linkcode waitForPort} waits, and where. */
export interface WaitOptions {
  /** The address. @default {"127.0.0.1"} */
  host?: string;
  /** Milliseconds before it gives up. @default {10_000} */
  timeoutMs?: number;
}

/**
 * Waits until `what` accepts TCP connections on `port`; throws
 * "`what` did not start" after `timeoutMs`.
 */
export async function waitForPort(
  port: number,
  what: string,
  { host = "127.0.0.1", timeoutMs = 10_000 }: WaitOptions = {},
): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!await accepts(port, host)) {
    if (Date.now() > end) {
      throw new Error(`${what} did not start: ${host}:${port} never opened`);
    }
    await sleep(25);
  }
}

/**
 * Waits until `check` holds, asking every 20 ms; throws "Timed out waiting
 * for `what`" after `timeoutMs`.
 */
export async function until(
  check: () => boolean | Promise<boolean>,
  what = "a condition",
  timeoutMs = 10_000,
): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!await check()) {
    if (Date.now() > end) throw new Error(`Timed out waiting for ${what}`);
    await sleep(20);
  }
}

/**
 * Waits until a STUN Binding request to `host:port` over UDP is answered (a
 * TURN server may accept TCP before its UDP listener opens); throws
 * "`what` did not start" after `timeoutMs`. The request is 20 bytes: type
 * 0x0001, length 0, the magic cookie, a random transaction id.
 */
export async function waitForStun(
  port: number,
  what: string,
  { host = "127.0.0.1", timeoutMs = 10_000 }: WaitOptions = {},
): Promise<void> {
  const socket = createSocket("udp4");
  let done = false;
  // bounded: raced with a sleep, in a loop that ends at the deadline
  const answered = new Promise<void>((resolve) =>
    socket.on("message", (message) => {
      if (message.length >= 20 && message.readUInt16BE(0) === 0x0101) {
        done = true;
        resolve();
      }
    })
  );
  socket.on("error", () => {}); // "refused" until the listener opens
  const request = new Uint8Array(20);
  const view = new DataView(request.buffer);
  view.setUint16(0, 0x0001);
  view.setUint32(4, 0x2112a442);
  crypto.getRandomValues(request.subarray(8));
  try {
    const end = Date.now() + timeoutMs;
    while (!done) {
      if (Date.now() > end) {
        throw new Error(
          `${what} did not start: no STUN answer on ${host}:${port}`,
        );
      }
      socket.send(request, port, host);
      await Promise.race([answered, sleep(100)]);
    }
  } finally {
    await new Promise<void>((resolve) => socket.close(() => resolve()));
  }
}
