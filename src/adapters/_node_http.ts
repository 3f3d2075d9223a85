/**
 * The Node request/response bridge: `IncomingMessage` to web `Request` (with
 * `100 Continue` sent only once the body is read), web `Response` back to
 * `ServerResponse` under a send deadline, the lingering close of a refused
 * upload, and responses written to a socket that took the upgrade path.
 *
 * @module
 */

import { Buffer } from "node:buffer";
import { type IncomingMessage, ServerResponse, STATUS_CODES } from "node:http";
import type { Socket } from "node:net";
import type { Duplex } from "node:stream";
import { clearTimeout, setImmediate, setTimeout } from "node:timers";
import { NodeRequest, sendNodeResponse } from "srvx/node";
import type { Broker } from "../http/broker.ts";
import { requestTarget } from "../http/request_url.ts";
import type { Logger } from "../_util/log.ts";
import { expireIfStillIdle } from "./_node_idle.ts";

/**
 * A response sent before its request body was read whole (an upload refused
 * with 413) is followed by a lingering close, as nginx does: what still
 * arrives of the body is read and dropped, so that the client sees the
 * response rather than a reset, for at most this long in all (nginx's
 * `lingering_time`)...
 */
const LINGER_SECONDS = 30;
/** ... with at most this long between two reads (`lingering_timeout`). */
const LINGER_IDLE_SECONDS = 5;

/** What {@linkcode serveHttp} needs besides the request. */
export interface ServeOptions {
  /** Log sink. */
  logger: Logger;
  /** The most a lingering close reads and drops (`maxBlobBytes`). */
  lingerBytes: number;
  /** How long a response may go without a byte read by its client. */
  sendTimeoutMs: number;
}

/**
 * Answers one HTTP request through the broker. `detached` is a request
 * answered on a socket taken off the HTTP server (see
 * {@linkcode serveDetached}): its body, which the server no longer reads,
 * is left out.
 */
export async function serveHttp(
  broker: Broker,
  req: IncomingMessage,
  res: ServerResponse,
  options: ServeOptions,
  detached = false,
): Promise<void> {
  const { logger } = options;
  let response: Response;
  try {
    response = await broker.fetch(
      toRequest(req, detached ? null : res),
      req.socket.remoteAddress,
    );
  } catch (error) {
    // Only a request the Fetch API refuses to represent lands here (the
    // broker has its own error boundary), such as TRACE: answered from the
    // route table as any other method the path does not allow.
    logger("debug", "Cannot bridge the request", { error });
    response = broker.refuseMethod(
      new URL(req.url ?? "/", "http://x").pathname,
      req.headers.host ?? null,
    );
  }
  if (!detached && !req.complete) drainBody(req, options.lingerBytes);
  armUntilSent(res, options);
  try {
    await sendNodeResponse(res, forNode(response));
  } catch (error) {
    logger("debug", "Cannot send the response", { error });
    res.destroy();
  }
}

/**
 * Answers, as plain HTTP, a request that reached the upgrade path without
 * being a WebSocket upgrade (a runtime without `shouldUpgradeCallback`,
 * Node before 22.21, sends every request with an `Upgrade` header there):
 * on its own socket, without its body, streamed under the same send
 * deadline as any response; then the connection is closed.
 */
export function serveDetached(
  broker: Broker,
  req: IncomingMessage,
  socket: Duplex,
  options: ServeOptions,
): void {
  const res = new ServerResponse(req);
  res.shouldKeepAlive = false;
  res.assignSocket(socket as Socket);
  res.once("finish", () => {
    res.detachSocket(socket as Socket);
    socket.once("finish", () => socket.destroy());
    socket.end();
  });
  void serveHttp(broker, req, res, options, true);
}

/**
 * Whether `req` may take the upgrade path: a `GET` to a WebSocket route
 * (the broker's route tables say which). Any other request with an
 * `Upgrade` header is answered as plain HTTP, as RFC 9110 allows.
 */
export function isUpgradeRequest(
  broker: Broker,
  req: IncomingMessage,
): boolean {
  if (req.method !== "GET") return false;
  const url = req.url ?? "/";
  try {
    const { path } = requestTarget(
      url.startsWith("/") ? `http://h${url}` : url,
    );
    return broker.isUpgradePath(path);
  } catch {
    return false;
  }
}

/** Arms the send deadline of `res` until it is sent (or its socket goes). */
export function armUntilSent(res: ServerResponse, options: ServeOptions): void {
  if (res.socket === null) return;
  const disarm = armSendDeadline(
    res.socket,
    options.sendTimeoutMs,
    options.logger,
  );
  res.once("finish", disarm);
  res.once("close", disarm);
}

/**
 * Drops the connection of a client that reads nothing of a response for
 * `timeoutMs` (nginx's `send_timeout`): the socket's idle timer runs while
 * a write waits on the client, and each byte the client takes restarts it.
 *
 * @returns What stops it, once the response is sent; the socket's timer
 * is left to the server, which sets its keep-alive timeout next.
 */
function armSendDeadline(
  socket: Duplex,
  timeoutMs: number,
  logger: Logger,
): () => void {
  const expire = () =>
    expireIfStillIdle(socket, () => {
      logger("debug", "Cut off a response its client stopped reading");
      socket.destroy();
    });
  socket.on("timeout", expire);
  (socket as Socket).setTimeout(timeoutMs);
  return () => void socket.off("timeout", expire);
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
export function toRequest(
  req: IncomingMessage,
  res: ServerResponse | null,
): Request {
  // A fully qualified Host ("pod.example.", RFC 3986 allows the dot) names
  // the same host; srvx would take it for an invalid one.
  const host = req.headers.host;
  if (host?.includes(".:") || host?.endsWith(".")) {
    req.headers.host = host.replace(/\.(?=:\d+$|$)/, "");
  }
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
    cancel() {
      // Not awaited: Node queues return() behind a pending next(), which a
      // stalled client never settles.
      void chunks.return?.();
    },
  }, new CountQueuingStrategy({ highWaterMark: 0 }));
}

/**
 * `response` as it goes out: with the standard reason phrase (the status
 * line reads `404 Not Found`, not `404 `).
 */
function forNode(response: Response): Response {
  return new Response(response.body, {
    status: response.status,
    statusText: response.statusText || STATUS_CODES[response.status] || "",
    headers: response.headers,
  });
}

/**
 * The lingering close of a response sent before its request body was read
 * whole (an upload refused with 413), as nginx does: closing the connection
 * while the client is still sending resets it, and a client that gets the
 * reset before it has read the response fails without it ("fetch failed").
 * So what still arrives of the body is read and dropped, and the connection
 * goes on once it is all there. Past `maxBytes` more, reading stops (the
 * client's sending stalls, and it can still read the response) unless the
 * body has all arrived; after
 * {@linkcode LINGER_IDLE_SECONDS} without a byte read, or {@linkcode LINGER_SECONDS}
 * in all, the connection is destroyed. No `Connection: close`: Deno's
 * `node:http` closes such a connection at once, whatever is still arriving.
 */
function drainBody(req: IncomingMessage, maxBytes: number): void {
  const stop = () => {
    clearTimeout(deadline);
    clearTimeout(idle);
  };
  // A request whose body has all arrived is finished, never cut: the
  // client has sent it whole and may send its next request on this
  // connection (a body that ends right at the bound, such as a declared
  // limit + 1 refused at once, is paused on its last chunk).
  const finishIfComplete = () => {
    if (!req.complete) return false;
    stop();
    req.resume();
    return true;
  };
  const destroy = () => {
    if (finishIfComplete()) return;
    stop();
    req.socket.destroy();
  };
  const deadline = setTimeout(destroy, LINGER_SECONDS * 1000);
  const idle = setTimeout(
    () => expireIfStillIdle(req.socket, destroy),
    LINGER_IDLE_SECONDS * 1000,
  );
  deadline.unref();
  idle.unref();
  let dropped = 0;
  req.on("data", (chunk: Uint8Array) => {
    dropped += chunk.length;
    if (dropped <= maxBytes) {
      idle.refresh();
      return;
    }
    req.pause();
    // The parser marks the request complete just after its last chunk.
    setImmediate(finishIfComplete);
  });
  req.once("end", stop);
  req.once("close", stop);
  req.resume();
}

/**
 * Writes a refusal of an upgrade (a small problem+json) to a socket that is
 * not upgraded, then ends it; a client that does not read it within
 * `sendTimeoutMs` is dropped.
 */
export async function writeRawResponse(
  socket: Duplex,
  response: Response,
  method: string | undefined,
  options: ServeOptions,
): Promise<void> {
  armSendDeadline(socket, options.sendTimeoutMs, options.logger);
  try {
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
    options.logger("debug", "Cannot refuse the upgrade", { error });
    socket.destroy();
  }
}
