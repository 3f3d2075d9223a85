/**
 * Hot pods on `node:http`, written from the broker's cached parts: one
 * `writeHead` with the header list, one `end` with the bytes; no web
 * `Request`, `Response`, header object or stream on the way. Any request
 * the broker does not answer so (see `Broker.ready`) goes through
 * `serveHttp`.
 *
 * @module
 */

import type { IncomingMessage, ServerResponse } from "node:http";
import type { Broker, RequestHead } from "../http/broker.ts";
import { armUntilSent, type ServeOptions } from "./_node_http.ts";

/** An `IncomingMessage` as the broker reads a request's head. */
class NodeHead implements RequestHead {
  readonly method: string;
  readonly url: string;
  readonly headers: { get(name: string): string | null };

  constructor(req: IncomingMessage) {
    this.method = req.method ?? "GET";
    this.url = req.url ?? "/";
    const headers = req.headers;
    this.headers = {
      get(name: string): string | null {
        const value = headers[name.toLowerCase()];
        if (value === undefined) return null;
        return typeof value === "string" ? value : value.join(", ");
      },
    };
  }
}

/**
 * Writes the broker's ready answer to `req`, when it has one.
 *
 * @param broker The broker.
 * @param req The request (a `GET` or `HEAD` without a body, to be one).
 * @param res Its response.
 * @param options The send deadline and logger.
 * @returns Whether it was answered; if not, nothing was written.
 */
export function serveReady(
  broker: Broker,
  req: IncomingMessage,
  res: ServerResponse,
  options: ServeOptions,
): boolean {
  const { headers } = req;
  // A body, even on a GET, is read and dropped the long way.
  if (
    headers["transfer-encoding"] !== undefined ||
    (headers["content-length"] ?? "0") !== "0"
  ) {
    return false;
  }
  const answer = broker.ready(new NodeHead(req), req.socket.remoteAddress);
  if (answer === null) return false;
  res.writeHead(200, "OK", answer.head as string[]);
  res.end(req.method === "HEAD" ? undefined : answer.body);
  // Most often the connection took it all at once: no deadline to keep.
  if (res.socket?.writableLength) armUntilSent(res, options);
  return true;
}
