/**
 * The one place that sees every answered request: its metrics sample and
 * its access log line, from the request's method and headers, the route,
 * the status and the body size.
 *
 * @module
 */

import type { ResolvedOptions } from "../config/options.ts";
import type { Metrics } from "../operator/metrics.ts";
import {
  type AccessLogEntry,
  clientAddress,
  createAccessLog,
} from "../operator/access_log.ts";
import type { HeaderSource } from "./request_url.ts";

/** What is read of an answered request. */
export interface ObservedRequest extends HeaderSource {
  /** The request method. */
  readonly method: string;
}

/** One answered request, as the broker tells {@linkcode Observe} of it. */
export interface Observed {
  /** The route pattern that matched, or null. */
  route: string | null;
  /** The path's pod id, or "". */
  id: string;
  /** `performance.now()` when the request arrived. */
  started: number;
  /** The status answered (101 for an admitted upgrade). */
  status: number;
  /** The body's size (a `Content-Length` value), or null when unknown. */
  length: number | string | null;
  /** The connection's remote address. */
  peerAddress?: string | undefined;
}

/** Records one answered request in the metrics and the access log. */
export type Observe = (request: ObservedRequest, answered: Observed) => void;

/**
 * The observer of one broker, or null when it has neither metrics nor an
 * access log.
 *
 * @param options The access log's mode and whether proxies are trusted.
 * @param metrics The broker's metrics, or null.
 * @returns What the broker calls once per answered request.
 */
export function createObserve(
  options: Pick<ResolvedOptions, "accessLog" | "trustProxy">,
  metrics: Metrics | null,
): Observe | null {
  const accessLog: ((entry: AccessLogEntry) => void) | null =
    options.accessLog === "off"
      ? null
      : createAccessLog({ includeIp: options.accessLog === "ip" });
  if (metrics === null && accessLog === null) return null;
  return (request, { route, id, started, status, length, peerAddress }) => {
    const durationMs = performance.now() - started;
    const bodiless = request.method === "HEAD" || status === 204 ||
      status === 304;
    const bytes = length === null ? null : bodiless ? 0 : Number(length);
    metrics?.request({
      route,
      method: request.method,
      status,
      durationSeconds: durationMs / 1000,
      bytesIn: Number(request.headers.get("Content-Length")) || 0,
      bytesOut: bytes ?? 0,
    });
    accessLog?.({
      time: performance.timeOrigin + started,
      method: request.method,
      route,
      status,
      bytes,
      durationMs,
      podId: id,
      ip: options.accessLog === "ip"
        ? clientAddress(
          peerAddress,
          request.headers.get("X-Forwarded-For"),
          options.trustProxy,
        )
        : undefined,
    });
  };
}
