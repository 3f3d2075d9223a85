/**
 * The Node request/response bridge: `IncomingMessage` to web `Request` (with
 * `100 Continue` sent only once the body is read), web `Response` back to
 * `ServerResponse`, the lingering close of a refused upload, and raw
 * responses written to a socket that is not upgraded.
 *
 * @module
 */

import { Buffer } from "node:buffer";
import {
  type IncomingMessage,
  type ServerResponse,
  STATUS_CODES,
} from "node:http";
import type { Duplex } from "node:stream";
import { clearTimeout, setTimeout } from "node:timers";
import { NodeRequest, sendNodeResponse } from "srvx/node";
import type { Broker } from "../http/broker.ts";
import type { Logger } from "../_util/log.ts";

/**
 * How long a connection closed with a body still arriving keeps reading and
 * dropping it, so that the client sees the response rather than a reset.
 */
const LINGER_MS = 2_000;

/** Answers one HTTP request through the broker. */
export async function serveHttp(
  broker: Broker,
  req: IncomingMessage,
  res: ServerResponse,
  logger: Logger,
): Promise<void> {
  let response: Response;
  try {
    response = await broker.fetch(
      toRequest(req, res),
      req.socket.remoteAddress,
    );
  } catch (error) {
    // Only a request the Fetch API refuses to represent lands here (the
    // broker has its own error boundary), such as TRACE: answered from the
    // route table as any other method the path does not allow.
    logger("debug", "Cannot bridge the request", { error });
    response = broker.refuseMethod(
      new URL(req.url ?? "/", "http://x").pathname,
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
export async function writeRawResponse(
  socket: Duplex,
  response: Response,
  method: string | undefined,
  logger: Logger,
): Promise<void> {
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
    logger("debug", "Cannot refuse the upgrade", { error });
    socket.destroy();
  }
}
