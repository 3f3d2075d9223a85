/**
 * `createSignalServer` on Node.js 22.13+: `node:http` for HTTP, srvx's
 * Request/Response bridge, and `ws` (with `noServer`) for `/signal`, feeding
 * the same runtime-neutral broker as the Deno adapter.
 *
 * @module
 */

import {
  createServer,
  type IncomingMessage,
  type ServerResponse,
  STATUS_CODES,
} from "node:http";
import { Buffer } from "node:buffer";
import type { AddressInfo } from "node:net";
import type { Duplex } from "node:stream";
import { clearInterval, clearTimeout, setInterval, setTimeout } from "node:timers";
import { NodeRequest, sendNodeResponse } from "srvx/node";
// @ts-types="@types/ws"
import { type RawData, type WebSocket, WebSocketServer } from "ws";
import { type Broker, createBroker } from "../broker.ts";
import type { Logger } from "../log.ts";
import { resolveOptions } from "../options.ts";
import { problem } from "../problem.ts";
import type { HubClient } from "../signaling/hub.ts";
import type { SignalServer, SignalServerOptions } from "../types.ts";

/**
 * After a response is sent before its request body was read (an early 413 or
 * 415), the rest of the body is read and dropped, up to these bounds, so that
 * the client gets to read the response; past them the connection is closed.
 */
const DRAIN_MAX_BYTES = 1024 * 1024;
const DRAIN_MAX_MS = 1_000;
/** How long `close()` lets in-flight requests finish before cutting them. */
const CLOSE_GRACE_MS = 5_000;

/** One open WebSocket: its hub callbacks and whether it answered the last ping. */
interface Connection {
  client: HubClient;
  alive: boolean;
}

/**
 * Starts a broker on Node.js and resolves once it listens.
 *
 * Dead peers are found with WebSocket pings: every `signaling.pingIntervalMs`
 * each socket is pinged, and one that has sent neither a pong nor a message
 * since the previous ping is terminated. Frames over
 * `signaling.maxFrameBytes` are refused by `ws` itself with close code 1009.
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
  const connections = new Map<WebSocket, Connection>();
  const wss = new WebSocketServer({
    noServer: true,
    clientTracking: false,
    maxPayload: resolved.signaling.maxFrameBytes,
  });

  const server = createServer((req, res) => {
    serveHttp(broker, req, res, logger);
  });
  server.on("upgrade", (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    socket.on("error", (error) => {
      logger("debug", "Socket error during upgrade", { error });
      socket.destroy();
    });
    let request: Request;
    try {
      request = toRequest(req, false);
    } catch (error) {
      logger("debug", "Cannot bridge the request", { error });
      socket.destroy();
      return;
    }
    if (req.method !== "GET" || new URL(request.url).pathname !== "/signal") {
      // Not a signaling upgrade: answer as Deno.serve would, then close.
      writeRawResponse(socket, broker.fetch(request), req.method, logger);
      return;
    }
    const verdict = broker.admit(request);
    if (verdict instanceof Response) {
      writeRawResponse(socket, Promise.resolve(verdict), req.method, logger);
      return;
    }
    wss.handleUpgrade(req, socket, head, (ws) => {
      const client = broker.hub.connect({
        send: (text) => ws.send(text),
        close: (code, reason) => ws.close(code, reason),
      }, verdict.origin);
      const connection: Connection = { client, alive: true };
      connections.set(ws, connection);
      ws.on("pong", () => (connection.alive = true));
      ws.on("message", (data: RawData, isBinary: boolean) => {
        connection.alive = true;
        client.message(isBinary ? toBytes(data) : toBytes(data).toString());
      });
      ws.on("error", (error) => {
        logger("debug", "WebSocket error", { error });
      });
      ws.on("close", () => {
        connections.delete(ws);
        client.closed();
      });
    });
  });

  const pinger = setInterval(() => {
    for (const [ws, connection] of connections) {
      if (!connection.alive) {
        ws.terminate();
        continue;
      }
      connection.alive = false;
      ws.ping();
    }
  }, resolved.signaling.pingIntervalMs);
  // The listening server keeps the process alive; the pinger need not.
  pinger.unref();

  let closed: Promise<void> | undefined;
  async function close(): Promise<void> {
    await broker.shutdown();
    // Sockets that did not finish the closing handshake in time.
    for (const ws of connections.keys()) ws.terminate();
    clearInterval(pinger);
    wss.close();
    await new Promise<void>((resolve, reject) => {
      const cut = setTimeout(
        () => server.closeAllConnections(),
        CLOSE_GRACE_MS,
      );
      server.close((error) => {
        clearTimeout(cut);
        if (error) reject(error);
        else resolve();
      });
      server.closeIdleConnections();
    });
  }

  return new Promise<SignalServer>((resolve, reject) => {
    server.once("error", (error) => {
      clearInterval(pinger);
      reject(error);
    });
    server.listen({ port: resolved.port, host: resolved.hostname }, () => {
      const address = server.address() as AddressInfo;
      resolve({
        port: address.port,
        hostname: address.address,
        close(): Promise<void> {
          closed ??= close();
          return closed;
        },
      });
    });
  });
}

/** Answers one HTTP request through the broker. */
async function serveHttp(
  broker: Broker,
  req: IncomingMessage,
  res: ServerResponse,
  logger: Logger,
): Promise<void> {
  res.once("finish", () => {
    if (!req.complete) discardBody(req);
  });
  let response: Response;
  try {
    response = await broker.fetch(toRequest(req, true));
  } catch (error) {
    // Only a request the Fetch API refuses to represent lands here (the
    // broker has its own error boundary), such as a TRACE with a body.
    logger("debug", "Cannot bridge the request", { error });
    response = problem(
      "method_not_allowed",
      `Cannot use method '${req.method}' here`,
      { Allow: "GET, HEAD, POST, OPTIONS" },
    );
  }
  try {
    await sendNodeResponse(res, withReasonPhrase(response));
  } catch (error) {
    logger("debug", "Cannot send the response", { error });
    res.destroy();
  }
}

/**
 * The web `Request` for `req`. srvx derives the URL (validating `Host`) and
 * the headers; a body, when `withBody` and the request has one, comes from
 * {@linkcode createBodyStream}. An upgrade request never gets its body.
 *
 * @throws {TypeError} For a method the Fetch API forbids, such as TRACE,
 * on a request that cannot go through srvx's lazy request.
 */
function toRequest(req: IncomingMessage, withBody: boolean): Request {
  const request = new NodeRequest({ req });
  const method = request.method;
  if (method === "GET" || method === "HEAD") return request;
  const hasBody = req.headers["transfer-encoding"] !== undefined ||
    (req.headers["content-length"] ?? "0") !== "0";
  if (withBody && !hasBody) return request;
  const init: RequestInit & { duplex?: "half" } = {
    method,
    headers: request.headers,
  };
  if (withBody) {
    init.body = createBodyStream(req);
    init.duplex = "half";
  }
  return new Request(request.url, init);
}

/**
 * The request body as a web stream that reads nothing until asked.
 * Cancelling it (the broker stops reading an upload over the limit) leaves
 * the socket open, unlike `Readable.toWeb`, so the refusal can still be sent.
 */
function createBodyStream(req: IncomingMessage): ReadableStream<Uint8Array> {
  const chunks = req.iterator({ destroyOnReturn: false });
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      const { done, value } = await chunks.next();
      if (done) controller.close();
      else controller.enqueue(value as Buffer);
    },
    async cancel() {
      await chunks.return?.();
    },
  }, new CountQueuingStrategy({ highWaterMark: 0 }));
}

/**
 * Reads and drops what is left of a request body after its response went
 * out, within {@linkcode DRAIN_MAX_BYTES} and {@linkcode DRAIN_MAX_MS}.
 * Closing at once could reset the connection before the client has read
 * the response (the "lingering close" of HTTP servers).
 */
function discardBody(req: IncomingMessage): void {
  let bytes = 0;
  const stop = () => {
    clearTimeout(timer);
    req.off("data", count);
    req.socket.destroy();
  };
  const count = (chunk: Buffer) => {
    bytes += chunk.length;
    if (bytes > DRAIN_MAX_BYTES) stop();
  };
  const timer = setTimeout(stop, DRAIN_MAX_MS);
  timer.unref();
  req.removeAllListeners("data");
  req.on("data", count);
  req.once("end", () => {
    clearTimeout(timer);
    req.off("data", count);
  });
  req.resume();
}

/** Writes a refusal (or any response) to a socket that is not upgraded, then ends it. */
async function writeRawResponse(
  socket: Duplex,
  pending: Promise<Response>,
  method: string | undefined,
  logger: Logger,
): Promise<void> {
  try {
    const response = await pending;
    const body = method === "HEAD"
      ? new Uint8Array(0)
      : new Uint8Array(await response.arrayBuffer());
    let head = `HTTP/1.1 ${response.status} ${
      STATUS_CODES[response.status] ?? ""
    }\r\n`;
    for (const [name, value] of response.headers) {
      head += `${name}: ${value}\r\n`;
    }
    if (!response.headers.has("Content-Length")) {
      head += `Content-Length: ${body.length}\r\n`;
    }
    head += "Connection: close\r\n\r\n";
    if (socket.writable) {
      socket.once("finish", () => socket.destroy());
      socket.end(Buffer.concat([Buffer.from(head, "latin1"), body]));
    } else {
      socket.destroy();
    }
  } catch (error) {
    logger("debug", "Cannot refuse the upgrade", { error });
    socket.destroy();
  }
}

/**
 * `response`, with the standard reason phrase when it has none, so the
 * status line reads `HTTP/1.1 404 Not Found` rather than `HTTP/1.1 404 `.
 */
function withReasonPhrase(response: Response): Response {
  const reason = STATUS_CODES[response.status];
  if (response.statusText || reason === undefined) return response;
  return new Response(response.body, {
    status: response.status,
    statusText: reason,
    headers: response.headers,
  });
}

/** The bytes of a `ws` message, whatever shape `ws` gave them. */
function toBytes(data: RawData): Buffer {
  if (Buffer.isBuffer(data)) return data;
  if (Array.isArray(data)) return Buffer.concat(data);
  return Buffer.from(data);
}
