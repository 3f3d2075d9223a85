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
 * Dead peers are found with Deno's WebSocket `idleTimeout` (a ping every
 * `signaling.pingIntervalMs`, rounded up to whole seconds, and a close when
 * no pong comes within the next interval).
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
  }, (request) => {
    if (
      request.method === "GET" && new URL(request.url).pathname === "/signal" &&
      request.headers.get("Upgrade")?.toLowerCase() === "websocket"
    ) {
      const verdict = broker.admit(request);
      if (verdict instanceof Response) return verdict;
      const { socket, response } = Deno.upgradeWebSocket(request, {
        idleTimeout,
      });
      socket.binaryType = "arraybuffer";
      const client = broker.hub.connect({
        send: (text) => socket.send(text),
        close: (code, reason) => socket.close(code, reason),
      }, verdict.origin);
      socket.onmessage = (event) => {
        client.message(
          typeof event.data === "string"
            ? event.data
            : new Uint8Array(event.data),
        );
      };
      socket.onclose = () => client.closed();
      return response;
    }
    return broker.fetch(request);
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
