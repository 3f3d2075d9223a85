/**
 * `createSignalServer` on Node.js 22.13+: `node:http` for HTTP, srvx's
 * Request/Response bridge, and `ws` (with `noServer`) for `/signal`, feeding
 * the same runtime-neutral broker as the Deno adapter.
 *
 * @module
 */

import { Buffer } from "node:buffer";
import {
  createServer,
  type IncomingMessage,
  type ServerResponse,
  STATUS_CODES,
} from "node:http";
import type { AddressInfo } from "node:net";
import type { Duplex } from "node:stream";
import {
  clearInterval,
  clearTimeout,
  setInterval,
  setTimeout,
} from "node:timers";
import { NodeRequest, sendNodeResponse } from "srvx/node";
// @ts-types="@types/ws"
import { type RawData, type WebSocket, WebSocketServer } from "ws";
import { type Broker, createBroker } from "../broker.ts";
import type { Logger } from "../log.ts";
import { resolveOptions } from "../options.ts";
import { problem } from "../problem.ts";
import type { HubClient } from "../signaling/hub.ts";
import type { SignalServer, SignalServerOptions } from "../types.ts";

/** How long `close()` lets in-flight requests finish before cutting them. */
const CLOSE_GRACE_MS = 5_000;
/**
 * How long a connection closed with a body still arriving keeps reading and
 * dropping it, so that the client sees the response rather than a reset.
 */
const LINGER_MS = 2_000;

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
 * A response that is ready before its request body was read whole (an upload
 * refused with 413 or 415) goes out with `Connection: close`; what still
 * arrives of the body is dropped for up to 2 seconds, then the connection
 * closes. A request sent with `Expect: 100-continue` gets its `100 Continue`
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
  const connections = new Map<WebSocket, Connection>();
  const wss = new WebSocketServer({
    noServer: true,
    clientTracking: false,
    maxPayload: resolved.signaling.maxFrameBytes,
  });

  // serveHttp and writeRawResponse handle their own errors.
  const server = createServer((req, res) => {
    void serveHttp(broker, req, res, logger);
  });
  server.on("checkContinue", (req: IncomingMessage, res: ServerResponse) => {
    void serveHttp(broker, req, res, logger);
  });
  server.on("upgrade", (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    socket.on("error", (error) => {
      logger("debug", "Socket error during upgrade", { error });
      socket.destroy();
    });
    let request: Request;
    try {
      request = toRequest(req, null);
    } catch (error) {
      logger("debug", "Cannot bridge the request", { error });
      socket.destroy();
      return;
    }
    if (req.method !== "GET" || new URL(request.url).pathname !== "/signal") {
      // Not a signaling upgrade: answer as Deno.serve would, then close.
      void writeRawResponse(socket, broker.fetch(request), req.method, logger);
      return;
    }
    const verdict = broker.admit(request);
    if (verdict instanceof Response) {
      void writeRawResponse(
        socket,
        Promise.resolve(verdict),
        req.method,
        logger,
      );
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

  let closed: Promise<void> | undefined;
  return new Promise<SignalServer>((resolve, reject) => {
    let listening = false;
    server.on("error", (error) => {
      if (listening) {
        logger("error", "HTTP server error", { error });
        return;
      }
      clearInterval(pinger);
      reject(error);
    });
    server.listen({ port: resolved.port, host: resolved.hostname }, () => {
      listening = true;
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
  let response: Response;
  try {
    response = await broker.fetch(toRequest(req, res));
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
  const unreadBody = !req.complete;
  if (unreadBody) lingerOnClose(req);
  try {
    await sendNodeResponse(res, forNode(response, unreadBody));
  } catch (error) {
    logger("debug", "Cannot send the response", { error });
    res.destroy();
  }
}

/**
 * The web `Request` for `req`. srvx derives the URL (validating `Host`) and
 * the headers; a body, when there is one, comes from
 * {@linkcode createBodyStream}. With `res` null (an upgrade request) the
 * body is left out.
 *
 * @throws {TypeError} For a method that the Fetch API forbids, such as
 * TRACE, on a request with a body.
 */
function toRequest(req: IncomingMessage, res: ServerResponse | null): Request {
  const request = new NodeRequest({ req });
  const method = request.method;
  if (method === "GET" || method === "HEAD") return request;
  const hasBody = req.headers["transfer-encoding"] !== undefined ||
    (req.headers["content-length"] ?? "0") !== "0";
  if (res !== null && !hasBody) return request;
  const init: RequestInit & { duplex?: "half" } = {
    method,
    headers: request.headers,
  };
  if (res !== null) {
    init.body = createBodyStream(req, res);
    init.duplex = "half";
  }
  return new Request(request.url, init);
}

/**
 * The request body as a web stream that reads nothing until asked (and only
 * then sends `100 Continue` when the client expects it). Cancelling it (the
 * broker stops reading an upload over the limit) leaves the socket open,
 * unlike `Readable.toWeb`, so that the refusal can still be sent.
 */
function createBodyStream(
  req: IncomingMessage,
  res: ServerResponse,
): ReadableStream<Uint8Array> {
  let expectsContinue = /^100-continue$/i.test(req.headers.expect ?? "");
  const chunks = req.iterator({ destroyOnReturn: false });
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      if (expectsContinue) {
        expectsContinue = false;
        res.writeContinue();
      }
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
 * `response` as it goes out: with the standard reason phrase (the status
 * line reads `404 Not Found`, not `404 `), and with `Connection: close` when
 * `unreadBody`, so the client neither reuses the connection nor waits for
 * the rest of its body to be read.
 */
function forNode(response: Response, unreadBody: boolean): Response {
  const headers = new Headers(response.headers);
  if (unreadBody) headers.set("Connection", "close");
  return new Response(response.body, {
    status: response.status,
    statusText: response.statusText || STATUS_CODES[response.status] || "",
    headers,
  });
}

/**
 * Closes the connection of a response sent before its request body was read
 * whole, as HTTP servers do ("lingering close"): Node would destroy it at
 * once, resetting a connection whose client is still sending, and a client
 * that gets the reset before it has read the response fails without it. So
 * end our side, drop what still arrives until the client closes its side
 * (or {@linkcode LINGER_MS} passed), then destroy.
 */
function lingerOnClose(req: IncomingMessage): void {
  const socket = req.socket;
  // Node ends a `Connection: close` response with `socket.destroySoon()`.
  socket.destroySoon = () => {
    const timer = setTimeout(() => socket.destroy(), LINGER_MS);
    timer.unref();
    socket.once("close", () => clearTimeout(timer));
    req.resume();
    socket.end(() => {
      if (socket.readableEnded) socket.destroy();
      else socket.once("end", () => socket.destroy());
    });
  };
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

/** The bytes of a `ws` message, whatever shape `ws` gave them. */
function toBytes(data: RawData): Buffer {
  if (Buffer.isBuffer(data)) return data;
  if (Array.isArray(data)) return Buffer.concat(data);
  return Buffer.from(data);
}
