/**
 * `createSignalServer` on Node.js 22.13+: the lifecycle of a `node:http`
 * server that feeds the same runtime-neutral broker as the Deno adapter.
 * The request bridge lives in `_node_http.ts`, the WebSockets in
 * `_node_ws.ts`.
 *
 * @module
 */

import type { Buffer } from "node:buffer";
import type {
  IncomingMessage,
  Server,
  ServerOptions,
  ServerResponse,
} from "node:http";
import type { AddressInfo } from "node:net";
import type { Duplex } from "node:stream";
import { type Admission, createBroker } from "../http/broker.ts";
import { type ResolvedOptions, resolveOptions } from "../config/options.ts";
import type { SignalServer, SignalServerOptions } from "../config/types.ts";
import {
  isUpgradeRequest,
  loadBridge,
  serveDetached,
  serveHttp,
  type ServeOptions,
  toRequest,
  writeRawResponse,
} from "./_node_http.ts";
import { followsFaultyFraming, refuseFaultyFraming } from "./_node_framing.ts";
import { expireIfStillIdle } from "./_node_idle.ts";
import { createNodeSignaling } from "./_node_ws.ts";
import { serveReady } from "./_node_ready.ts";
import { startListeners } from "./_wiring.ts";
import { nodeBuiltin } from "../_util/host.ts";

// Through host.ts, not `import`: see nodeBuiltin.
const { createServer } = nodeBuiltin("node:http");
const { clearInterval, clearTimeout, setInterval, setTimeout } = nodeBuiltin(
  "node:timers",
);

/**
 * Connections the kernel may hold for the server before it accepts them
 * (Linux caps it at `net.core.somaxconn`, 4096 by default). Node's 511 is
 * less than a burst of new connections that the JavaScript thread, which
 * accepts them here, takes a moment to work through: past it the kernel
 * drops new connections, and their clients retry 1, 3 and 7 s later. 2,000
 * uploads opened at once dropped 1,211 attempts with 511, none with 4096
 * (`/health` beside them: max 147 ms, then 12 ms).
 */
const LISTEN_BACKLOG = 4096;

/**
 * How long an idle keep-alive connection stays open (Node's default is 5 s).
 * A server that closes an idle connection just as its client sends the next
 * request on it resets that request, and clients and proxies retry only
 * idempotent ones: an upload fails (a 502 behind a proxy). Fronts keep idle
 * upstream connections for longer than 5 s (nginx 60 s, Go 90 s, Caddy
 * 2 min), so the broker keeps them longer still, and the front closes first.
 * A client that honours the `Keep-Alive: timeout=130` header does too.
 */
const KEEP_ALIVE_MS = 130_000;

/** How long `close()` lets in-flight requests finish before cutting them. */
const CLOSE_GRACE_MS = 5_000;

/**
 * Starts a broker on Node.js and resolves once it listens.
 *
 * Dead peers: a socket silent (no message, no pong) for one
 * `signaling.pingIntervalMs` is pinged, and one silent for two is dropped,
 * as on Deno. Frames over `signaling.maxFrameBytes` are refused by `ws`
 * itself with close code 1009.
 *
 * A response that is ready before its request body was read whole (an upload
 * refused with 413 or 415) is followed by a lingering close: what still
 * arrives of the body is read and dropped (up to `maxBlobBytes` more, 5 s
 * between reads, 30 s in all, as nginx does), so the client reads the
 * response instead of a reset. A request sent with `Expect: 100-continue` gets its `100 Continue`
 * only once the broker starts reading the body, so a client that waits for
 * it sends nothing that would be refused.
 *
 * @param options Server options; `registry` is required.
 * @returns The running server, with its bound `port` and `close()`.
 * @throws {TypeError} When an option is unknown or out of range.
 *
 * @example Start on a free port and stop
 * ```ts ignore
 * import { createSignalServer, MemoryRegistry } from "pod-broker";
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
  const { logger } = resolved;
  const broker = createBroker(resolved);
  const signaling = createNodeSignaling({
    broker,
    maxFrameBytes: resolved.signaling.maxFrameBytes,
    pingIntervalMs: resolved.signaling.pingIntervalMs,
    logger,
  });

  const serving: ServeOptions = {
    logger,
    lingerBytes: resolved.maxBlobBytes,
    sendTimeoutMs: resolved.sendTimeoutMs,
  };
  // Only a GET to a WebSocket route takes the upgrade path; any other
  // request with an Upgrade header is served as plain HTTP (Node 22.21+ and
  // Deno read this option; older Node sends them all to "upgrade").
  const httpOptions: ServerOptions & {
    shouldUpgradeCallback(req: IncomingMessage): boolean;
  } = {
    // Slow clients: a request head must arrive whole in time (checked every
    // second); bodies are governed by the broker's own uploadTimeoutMs, and
    // responses by the send deadline.
    headersTimeout: resolved.headersTimeoutMs,
    requestTimeout: 0,
    keepAliveTimeout: KEEP_ALIVE_MS,
    connectionsCheckingInterval: Math.min(1_000, resolved.headersTimeoutMs),
    shouldUpgradeCallback: (req) => isUpgradeRequest(broker, req),
  };
  // serveHttp and writeRawResponse handle their own errors. A hot pod is
  // written from its cached parts.
  const server = createServer(httpOptions, (req, res) => {
    if (refuseFaultyFraming(req, res)) return;
    if (!serveReady(broker, req, res, serving)) {
      void serveHttp(broker, req, res, serving);
    }
  });
  // A keep-alive connection whose idle timeout fires is closed, as Node does
  // by default, unless bytes move on it within the stall grace: after a
  // stall, its next request may already be there.
  server.on("timeout", (socket: Duplex) => {
    expireIfStillIdle(socket, () => socket.destroy());
  });
  server.on("checkContinue", (req: IncomingMessage, res: ServerResponse) => {
    if (refuseFaultyFraming(req, res)) return;
    void serveHttp(broker, req, res, serving);
  });
  server.on("upgrade", (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    socket.on("error", (error) => {
      logger("debug", "Socket error during upgrade", { error });
      socket.destroy();
    });
    if (followsFaultyFraming(req)) socket.destroy();
    else if (isUpgradeRequest(broker, req)) {
      void upgrade({ broker, signaling, serving, logger }, req, socket, head);
    } else serveDetached(broker, req, socket, serving);
  });

  async function close(): Promise<void> {
    await broker.shutdown();
    // Sockets that did not finish the closing handshake in time.
    signaling.close();
    await closeServer(server);
  }

  // The main listener; an error before it listens fails the start.
  function listenMain(): Promise<{ close(): Promise<void> }> {
    return new Promise((resolve, reject) => {
      let listening = false;
      server.on("error", (error) => {
        if (listening) {
          logger("error", "HTTP server error", { error });
          return;
        }
        reject(error);
      });
      server.listen({
        port: resolved.port,
        host: resolved.hostname,
        backlog: LISTEN_BACKLOG,
      }, () => {
        listening = true;
        resolve({ close });
      });
    });
  }

  let closed: Promise<void> | undefined;
  return startListeners(broker, resolved, listenMain).then((
    { main, metrics },
  ) => {
    const address = server.address() as AddressInfo;
    return {
      port: address.port,
      hostname: address.address,
      metricsPort: metrics?.port ?? null,
      close(): Promise<void> {
        closed ??= main.close().then(async () => {
          await metrics?.close();
          broker.metrics?.close();
        });
        return closed;
      },
    };
  }, (error) => {
    signaling.close();
    throw error;
  });
}

/** What an upgrade request is answered with. */
interface UpgradeParts {
  broker: ReturnType<typeof createBroker>;
  signaling: ReturnType<typeof createNodeSignaling>;
  serving: ServeOptions;
  logger: ResolvedOptions["logger"];
}

/**
 * Answers a WebSocket upgrade request: the broker's refusal written raw,
 * or the admitted socket handed to the signaling.
 */
async function upgrade(
  { broker, signaling, serving, logger }: UpgradeParts,
  req: IncomingMessage,
  socket: Duplex,
  head: Buffer,
): Promise<void> {
  let request: Request;
  try {
    await loadBridge();
    request = toRequest(req, null);
  } catch (error) {
    logger("debug", "Cannot bridge the request", { error });
    socket.destroy();
    return;
  }
  let answer: Response | Admission;
  try {
    answer = await broker.handle(request, req.socket.remoteAddress);
  } catch (error) {
    logger("debug", "Cannot answer the upgrade request", { error });
    socket.destroy();
    return;
  }
  if (answer instanceof Response) {
    // A refusal (426, 403, 503...): answered as Deno.serve would, then
    // the connection is closed.
    void writeRawResponse(socket, answer, req.method, serving);
  } else {
    signaling.upgrade(req, socket, head, answer);
  }
}

/**
 * Closes a `node:http` server: idle connections now and as they become idle
 * (a response that ends while closing), the rest after `CLOSE_GRACE_MS`.
 */
function closeServer(server: Server): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    const cut = setTimeout(
      () => server.closeAllConnections(),
      CLOSE_GRACE_MS,
    );
    // A connection whose response ends while closing becomes idle then:
    // close idle connections until the server is closed.
    const idle = setInterval(() => server.closeIdleConnections(), 50);
    server.close((error) => {
      clearTimeout(cut);
      clearInterval(idle);
      if (error) reject(error);
      else resolve();
    });
    server.closeIdleConnections();
  });
}
