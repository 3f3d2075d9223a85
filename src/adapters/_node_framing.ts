/**
 * Requests whose framing RFC 9112 (section 6.1) calls faulty: an HTTP/1.0
 * request with `Transfer-Encoding`, which HTTP/1.0 does not have. Deno.serve
 * refuses one before it reaches the broker; `node:http` reads its body as
 * chunked and would answer a request hidden after it on a kept-alive
 * connection, where a front that frames it otherwise sees one request (a
 * smuggled one). Here such a request gets `400` as `node:http` answers a
 * head it cannot parse, its connection is closed, and no request that came
 * after it on that connection reaches the broker.
 *
 * @module
 */

import type { IncomingMessage, ServerResponse } from "node:http";

/** Connections that carried a request with faulty framing. */
const faulty = new WeakSet<object>();

/**
 * Refuses `req` when its framing is faulty, or when it follows such a
 * request on its connection (never answered: the connection closes).
 *
 * @param req The request.
 * @param res Its response, written here when refused.
 * @returns Whether `req` was refused and must not reach the broker.
 */
export function refuseFaultyFraming(
  req: IncomingMessage,
  res: ServerResponse,
): boolean {
  if (followsFaultyFraming(req)) return true;
  if (
    req.httpVersion !== "1.0" || req.headers["transfer-encoding"] === undefined
  ) {
    return false;
  }
  faulty.add(req.socket);
  res.shouldKeepAlive = false;
  res.writeHead(400, { "Content-Length": "0", Connection: "close" });
  res.end();
  return true;
}

/**
 * Whether `req` came on a connection after a request with faulty framing
 * (the upgrade path asks this: such a request is dropped with its socket).
 *
 * @param req The request.
 * @returns Whether it must be dropped.
 */
export function followsFaultyFraming(req: IncomingMessage): boolean {
  return faulty.has(req.socket);
}
