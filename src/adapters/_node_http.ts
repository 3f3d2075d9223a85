/**
 * The Node request/response bridge: `IncomingMessage` to web `Request` (with
 * `100 Continue` sent only once the body is read), web `Response` back to
 * `ServerResponse` under a send deadline, the lingering close of a refused
 * upload, and responses written to a socket that took the upgrade path.
 *
 * @module
 */

import type { Buffer } from "node:buffer";
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Socket } from "node:net";
import type { Duplex } from "node:stream";
import type { Broker } from "../http/broker.ts";
import { requestTarget } from "../http/request_url.ts";
import {
  heldBody,
  type HeldRequestBody,
  holdRequestBody,
} from "../_util/held_body.ts";
import type { Logger } from "../_util/log.ts";
import { expireIfStillIdle } from "./_node_idle.ts";
import { nodeBuiltin } from "../_util/host.ts";

const http = nodeBuiltin("node:http");
const timers = nodeBuiltin("node:timers");
const { Buffer: NodeBuffer } = nodeBuiltin("node:buffer");

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

/**
 * srvx, the bridge between `node:http` and the Fetch API, loaded with the
 * first request that needs it: a start and its `/health` answered from
 * parts do without it, and on Node without the Fetch implementation it
 * brings in (together about 50 ms of a start on Node 22).
 */
let srvx: typeof import("srvx/node") | undefined;
let srvxLoading: Promise<unknown> | undefined;

/**
 * Loads the bridge that {@linkcode toRequest} and a streamed response need.
 *
 * @returns What settles once it is loaded, or undefined when it is already.
 */
export function loadBridge(): Promise<unknown> | undefined {
  if (srvx !== undefined) return undefined;
  return srvxLoading ??= import("srvx/node").then((module) => {
    srvx = module;
  });
}

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
  try {
    await loadBridge();
  } catch (error) {
    // An install without its dependencies: every such request fails.
    logger("error", "Cannot load srvx", { error });
    res.writeHead(500).end();
    return;
  }
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
    await send(res, response);
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
  const res = new http.ServerResponse(req);
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
 * the headers. The body of an upload (`POST`, `PUT`) is held beside it (see
 * {@linkcode nodeBody}); any other body comes from
 * {@linkcode createBodyStream}. With `res` null (an upgrade request) the
 * body is left out.
 *
 * @throws {TypeError} For a method that the Fetch API forbids, such as
 * TRACE, on a request with a body; or when the bridge is not loaded yet
 * (await {@linkcode loadBridge} first).
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
  if (srvx === undefined) throw new TypeError("The bridge is not loaded");
  const request = new srvx.NodeRequest({ req });
  const method = request.method;
  if (method === "GET" || method === "HEAD") return request;
  const hasBody = req.headers["transfer-encoding"] !== undefined ||
    (req.headers["content-length"] ?? "0") !== "0";
  if (res !== null && !hasBody) return request;
  if (res !== null && (method === "POST" || method === "PUT")) {
    return holdRequestBody(request, nodeBody(req, res));
  }
  const init: RequestInit & { duplex?: "half" } = {
    method,
    headers: request.headers,
  };
  if (res !== null) {
    init.body = createBodyStream(req, continueOnce(req, res));
    init.duplex = "half";
  }
  return new Request(request.url, init);
}

/**
 * An upload's body, read straight from `req` by the broker, whole or as a
 * stream: a small upload never goes through a web stream. Nothing is read,
 * and no `100 Continue` sent, until the broker asks.
 */
function nodeBody(req: IncomingMessage, res: ServerResponse): HeldRequestBody {
  const sendContinue = continueOnce(req, res);
  return {
    whole: () => {
      sendContinue();
      return readWhole(req);
    },
    stream: () => createBodyStream(req, sendContinue),
  };
}

/** Sends `100 Continue` the first time it is called, if the client asked. */
function continueOnce(req: IncomingMessage, res: ServerResponse): () => void {
  let expectsContinue = /^100-continue$/i.test(req.headers.expect ?? "");
  return () => {
    if (!expectsContinue) return;
    expectsContinue = false;
    res.writeContinue();
  };
}

/**
 * The body of `req` in one buffer of its own (a small body with a known
 * length: the broker's choice). It fails when the connection ends first.
 */
function readWhole(req: IncomingMessage): Promise<Uint8Array> {
  return new Promise((resolve, reject) => {
    const chunks: Uint8Array[] = [];
    let size = 0;
    const onData = (chunk: Uint8Array) => {
      chunks.push(chunk);
      size += chunk.length;
    };
    const onEnd = () => {
      stop();
      // Every byte is written below. A zeroed buffer cost 20 µs here where
      // the broker holds many pods (a memory registry), this one 10 µs.
      const body = new Uint8Array(
        NodeBuffer.allocUnsafeSlow(size).buffer,
        0,
        size,
      );
      let at = 0;
      for (const chunk of chunks) {
        body.set(chunk, at);
        at += chunk.length;
      }
      resolve(body);
    };
    const onClose = (error?: Error) => {
      stop();
      reject(error ?? new Error("The connection ended before the body did"));
    };
    const stop = () => {
      req.off("data", onData);
      req.off("end", onEnd);
      req.off("close", onClose);
      req.off("error", onClose);
    };
    req.on("data", onData);
    req.once("end", onEnd);
    req.once("close", onClose);
    req.once("error", onClose);
  });
}

/**
 * The request body as a web stream that reads nothing until asked (and only
 * then sends `100 Continue` when the client expects it). Cancelling it (the
 * broker stops reading an upload over the limit) leaves the socket open,
 * unlike `Readable.toWeb`, so that the refusal can still be sent.
 */
function createBodyStream(
  req: IncomingMessage,
  sendContinue: () => void,
): ReadableStream<Uint8Array> {
  const chunks = req.iterator({ destroyOnReturn: false });
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      sendContinue();
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
 * Writes `response` to `res`, with the standard reason phrase (the status
 * line reads `404 Not Found`, not `404 `). A body the broker holds (see
 * `heldResponse`), or none, goes out with one `writeHead` and one `end`;
 * any other body is read from its stream as the client takes it.
 */
function send(res: ServerResponse, response: Response): Promise<void> | void {
  const body = response.body === null ? null : heldBody(response);
  if (body === undefined) return srvx!.sendNodeResponse(res, forNode(response));
  const head: string[] = [];
  let sized = false;
  for (const [name, value] of response.headers) {
    head.push(name, value);
    if (name === "content-length") sized = true;
  }
  if (body !== null && !sized) head.push("content-length", `${body.length}`);
  res.writeHead(
    response.status,
    http.STATUS_CODES[response.status] ?? "",
    head,
  );
  res.end(body === null || res.req.method === "HEAD" ? undefined : body);
}

/** `response` with the standard reason phrase, for srvx to send. */
function forNode(response: Response): Response {
  return new Response(response.body, {
    status: response.status,
    statusText: response.statusText || http.STATUS_CODES[response.status] || "",
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
    timers.clearTimeout(deadline);
    timers.clearTimeout(idle);
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
  const deadline = timers.setTimeout(destroy, LINGER_SECONDS * 1000);
  const idle = timers.setTimeout(
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
    timers.setImmediate(finishIfComplete);
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
      http.STATUS_CODES[response.status] ?? ""
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
      socket.end(NodeBuffer.concat([NodeBuffer.from(head, "latin1"), body]));
    } else {
      socket.destroy();
    }
  } catch (error) {
    options.logger("debug", "Cannot refuse the upgrade", { error });
    socket.destroy();
  }
}
