/**
 * `createSignalServer` on Deno: `Deno.serve` for HTTP and
 * `Deno.upgradeWebSocket` for `/signal`, feeding the runtime-neutral broker.
 *
 * @module
 */

import { type Admission, createBroker } from "../http/broker.ts";
import { resolveOptions } from "../config/options.ts";
import type { SignalServer, SignalServerOptions } from "../config/types.ts";
import { connectSocket, startListeners } from "./_wiring.ts";
import { CLOSE_DEADLINE_MS } from "../signaling/close.ts";
import { SendTimeoutError } from "../serving/send_deadline.ts";

/**
 * Starts a broker on Deno and resolves once it listens.
 *
 * Dead peers are found with Deno's WebSocket `idleTimeout`: a socket silent
 * for one `signaling.pingIntervalMs` is pinged, and one still silent after
 * the next is dropped, as on Node. Deno counts the interval in whole
 * seconds, so it is rounded up.
 *
 * @param options Server options; `registry` is required.
 * @returns The running server, with its bound `port` and `close()`.
 * @throws {TypeError} When an option is unknown or out of range.
 *
 * @example Start on a free port and stop
 * ```ts ignore
 * import { createSignalServer, MemoryRegistry } from "jsr:@pod/broker";
 *
 * const server = await createSignalServer({ registry: new MemoryRegistry(), port: 0 });
 * console.log(`listening on ${server.port}`);
 * await server.close();
 * ```
 */
export function createSignalServer(
  options: SignalServerOptions,
): Promise<SignalServer> {
  const resolved = resolveOptions(options);
  const broker = createBroker(resolved);
  const idleTimeout = Math.max(
    1,
    Math.ceil(resolved.signaling.pingIntervalMs / 1000),
  );
  const listenMain = async () => {
    const { promise: listening, resolve } = Promise.withResolvers<void>();
    // Throws at once when the port cannot be had.
    const server = Deno.serve({
      port: resolved.port,
      hostname: resolved.hostname,
      onListen: () => resolve(),
      // A body that failed lands here too: a pod cut off by its send
      // deadline was logged already.
      onError: (error) => {
        if (!(error instanceof SendTimeoutError)) {
          resolved.logger("error", "Unexpected error", { error });
        }
        return new Response("Internal Server Error", { status: 500 });
      },
    }, (request, info) => {
      const answer = broker.handle(request, info.remoteAddr.hostname);
      // A hot pod comes back synchronously and is returned as is.
      if (answer instanceof Response) return answer;
      if (answer instanceof Promise) {
        return answer.then((answer) => upgrade(request, answer));
      }
      return upgrade(request, answer);
    });
    await listening;
    return { addr: server.addr, close: () => server.shutdown() };
  };

  // This server's sockets being closed, each with its "input arrived"
  // callback.
  const quieting = new WeakMap<WebSocket, () => void>();

  function upgrade(request: Request, answer: Response | Admission): Response {
    if (answer instanceof Response) return answer;
    const { socket, response } = Deno.upgradeWebSocket(request, {
      idleTimeout,
    });
    socket.binaryType = "arraybuffer";
    // A hub may answer at once (PeerJS's OPEN): what it does before the
    // socket opens is done once it has.
    let early: (() => void)[] | null = [];
    const whenOpen = (act: () => void) =>
      early === null ? act() : early.push(act);
    socket.onopen = () => {
      const acts = early ?? [];
      early = null;
      for (const act of acts) act();
    };
    const events = connectSocket(broker, {
      send: (text) => whenOpen(() => socket.send(text)),
      close: (code, reason) =>
        whenOpen(() => closeWhenQuiet(quieting, socket, code, reason)),
      bufferedAmount: () => socket.bufferedAmount,
    }, answer);
    socket.onmessage = (event) => {
      // A socket being closed: its input is read and dropped.
      const quiet = quieting.get(socket);
      if (quiet) return quiet();
      events.message(
        typeof event.data === "string"
          ? event.data
          : new Uint8Array(event.data),
      );
    };
    socket.onclose = (event) => events.closed(event.code);
    return response;
  }

  let closed: Promise<void> | undefined;
  return startListeners(broker, resolved, listenMain).then((
    { main, metrics },
  ) => ({
    metricsPort: metrics?.port ?? null,
    port: main.addr.port,
    hostname: main.addr.hostname,
    close(): Promise<void> {
      closed ??= (async () => {
        await broker.shutdown();
        await main.close();
        await metrics?.close();
        broker.metrics?.close();
      })();
      return closed;
    },
  }));
}

/** How long a closing socket's input must pause before the close frame goes. */
const QUIET_MS = 200;

/**
 * Closes `socket` once its client pauses sending, or at a deadline, reading
 * and dropping its input meanwhile. Closing a socket whose client is still
 * sending (a flood) makes Deno reset the connection, and the client loses
 * the error frame and the close code sent just before.
 */
function closeWhenQuiet(
  quieting: WeakMap<WebSocket, () => void>,
  socket: WebSocket,
  code: number,
  reason: string,
) {
  if (socket.readyState !== WebSocket.OPEN) return socket.close(code, reason);
  if (quieting.has(socket)) return;
  let pause: ReturnType<typeof setTimeout> | undefined;
  const close = () => {
    clearTimeout(pause);
    clearTimeout(deadline);
    quieting.delete(socket);
    if (socket.readyState === WebSocket.OPEN) socket.close(code, reason);
  };
  // The longest a closing socket's input is read and dropped: the same
  // deadline the hub gives any closing handshake.
  const deadline = setTimeout(close, CLOSE_DEADLINE_MS);
  const rearm = () => {
    clearTimeout(pause);
    pause = setTimeout(close, QUIET_MS);
  };
  quieting.set(socket, rearm);
  rearm();
}
