/**
 * What both adapters wire the same way: a WebSocket to the hub, the
 * `/metrics` listener (on `node:http`, which both runtimes have), and the
 * order of start-up, so that a port that cannot be had fails `listen`
 * with nothing left listening.
 *
 * @module
 */

import type { IncomingMessage, Server, ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import type { Admission, Broker } from "../http/broker.ts";
import { OptionError, type ResolvedOptions } from "../config/options.ts";
import { METRICS_CONTENT_TYPE } from "../operator/metrics.ts";
import type { PeerSocket } from "../signaling/types.ts";

/** What an adapter tells the hub about one upgraded socket. */
export interface SocketEvents {
  /** A message arrived: text, or the bytes of a binary frame. */
  message(data: string | Uint8Array): void;
  /** The socket closed with `code`. */
  closed(code: number): void;
}

/**
 * Hands an upgraded socket to its hub and counts its close in the metrics.
 *
 * @param broker The broker whose hub takes the socket.
 * @param socket How the hub sends to and closes the socket.
 * @param admission What the upgrade was admitted with.
 * @returns What the adapter calls on each message and on close.
 */
export function connectSocket(
  broker: Broker,
  socket: PeerSocket,
  admission: Admission,
): SocketEvents {
  const client = broker.connect(socket, admission);
  return {
    message: (data) => client.message(data),
    closed(code) {
      client.closed(code);
      broker.metrics?.socketClosed(code);
    },
  };
}

/** The `/metrics` listener, once it listens. */
export interface MetricsListener {
  /** The port it listens on. */
  port: number;
  /** Stops it, cutting the connections it has open. */
  close(): Promise<void>;
}

/** What an adapter's main listener gives {@linkcode startListeners}. */
export interface MainListener {
  /** Stops it and releases what the adapter holds. */
  close(): Promise<void>;
}

/**
 * Starts the `/metrics` listener (when `options.metrics` asks for one), then
 * the adapter's main listener. When either cannot listen, what was started
 * is closed again, the broker is shut down, and the promise rejects: an
 * address in use becomes an {@linkcode OptionError} for `metrics.port` or
 * `port` (the CLI prints it as one line).
 *
 * @param broker The broker both listeners serve.
 * @param options The resolved options (`metrics`).
 * @param listenMain Starts the main listener; rejects when it cannot.
 * @returns The main listener and the metrics listener (or null).
 * @throws {OptionError} When a port is in use.
 */
export async function startListeners<Main extends MainListener>(
  broker: Broker,
  options: Pick<ResolvedOptions, "metrics">,
  listenMain: () => Promise<Main>,
): Promise<{ main: Main; metrics: MetricsListener | null }> {
  const release = async (metrics: MetricsListener | null) => {
    await metrics?.close();
    await broker.shutdown(0);
    broker.metrics?.close();
  };
  let metrics: MetricsListener | null = null;
  if (options.metrics !== null && broker.metrics !== null) {
    try {
      metrics = await listenMetrics(broker, options.metrics);
    } catch (error) {
      await release(null);
      throw portError(error, "metrics.port");
    }
  }
  try {
    return { main: await listenMain(), metrics };
  } catch (error) {
    await release(metrics);
    throw portError(error, "port");
  }
}

/** Serves `broker.metrics` at `/metrics` on `port` and `hostname`. */
async function listenMetrics(
  broker: Broker,
  at: { port: number; hostname: string },
): Promise<MetricsListener> {
  // Loaded here: a broker without metrics never loads node:http on Deno.
  const { createServer } = await import("node:http");
  const server: Server = createServer(
    (req: IncomingMessage, res: ServerResponse) => {
      const found = req.url?.split("?")[0] === "/metrics";
      res.writeHead(found ? 200 : 404, {
        "Content-Type": found ? METRICS_CONTENT_TYPE : "text/plain",
      });
      res.end(found ? broker.metrics!.render() : "Not Found");
    },
  );
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen({ port: at.port, host: at.hostname }, () => {
      server.off("error", reject);
      resolve();
    });
  });
  let closed: Promise<void> | undefined;
  return {
    port: (server.address() as AddressInfo).port,
    close() {
      closed ??= new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
      return closed;
    },
  };
}

/**
 * `error` as an {@linkcode OptionError} for `key` when the operator can fix
 * it: the address is in use (Node's `EADDRINUSE`, Deno's `AddrInUse`), the
 * port needs privileges, or the address is not this machine's; else `error`
 * itself.
 */
function portError(error: unknown, key: string): unknown {
  const { code, name } = (error ?? {}) as { code?: unknown; name?: unknown };
  if (code === "EADDRINUSE" || name === "AddrInUse") {
    return new OptionError(key, "is in use by another program: choose another");
  }
  if (code === "EACCES" || name === "PermissionDenied") {
    return new OptionError(key, "needs privileges: choose one above 1023");
  }
  if (code === "EADDRNOTAVAIL" || name === "AddrNotAvailable") {
    return new OptionError(
      "hostname",
      "is not an address of this machine: choose another",
    );
  }
  return error;
}
