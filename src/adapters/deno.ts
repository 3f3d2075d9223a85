/**
 * `createSignalServer` on Deno: `Deno.serve` for HTTP and
 * `Deno.upgradeWebSocket` for `/signal`, feeding the runtime-neutral broker.
 *
 * @module
 */

import { createBroker } from "../broker.ts";
import { resolveOptions } from "../options.ts";
import type { SignalServer, SignalServerOptions } from "../types.ts";

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
  const { promise: listening, resolve } = Promise.withResolvers<void>();

  const server = Deno.serve({
    port: resolved.port,
    hostname: resolved.hostname,
    onListen: () => resolve(),
  }, async (request) => {
    const answer = await broker.handle(request);
    if (answer instanceof Response) return answer;
    const { socket, response } = Deno.upgradeWebSocket(request, {
      idleTimeout,
    });
    socket.binaryType = "arraybuffer";
    const client = broker.hub.connect({
      send: (text) => socket.send(text),
      close: (code, reason) => socket.close(code, reason),
      bufferedAmount: () => socket.bufferedAmount,
    }, answer.origin);
    socket.onmessage = (event) => {
      client.message(
        typeof event.data === "string"
          ? event.data
          : new Uint8Array(event.data),
      );
    };
    socket.onclose = () => client.closed();
    return response;
  });

  let closed: Promise<void> | undefined;
  return listening.then(() => ({
    port: server.addr.port,
    hostname: server.addr.hostname,
    close(): Promise<void> {
      closed ??= (async () => {
        await broker.shutdown();
        await server.shutdown();
      })();
      return closed;
    },
  }));
}
