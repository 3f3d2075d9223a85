/**
 * `GET /health`: liveness and the live signaling figures.
 *
 * @module
 */

import type { HubStats } from "../../signaling/hub.ts";
import { VERSION } from "../../version.ts";
import { jsonParts, jsonResponse } from "../problem.ts";
import type { ReadyParts } from "../../serving/pod_cache.ts";

/** The most origins `/health` lists; the rest are counted in `originsOmitted`. */
export const HEALTH_MAX_ORIGINS = 100;
/** The longest origin `/health` lists, in characters; longer ones are counted. */
export const HEALTH_MAX_ORIGIN_CHARS = 256;

/** The health report: what `/health` answers. */
export interface HealthReport {
  /** "ok", or "draining" (then the answer is a 503). */
  readonly status: "ok" | "draining";
  /** The rest of the report's fields. */
  readonly [field: string]: unknown;
}

/**
 * Builds the health report. Its size is bounded whatever the sockets sent:
 * at most {@linkcode HEALTH_MAX_ORIGINS} origins of at most
 * {@linkcode HEALTH_MAX_ORIGIN_CHARS} characters are listed (in the hub's
 * sorted order), and `originsOmitted` counts the others.
 *
 * With a pod domain, the origins of pod hosts are counted in `podOrigins`,
 * never named: a pod host names its pod (its label is the id), and the
 * report is readable by any page (CORS `*`), so naming them would list the
 * unlisted pods open now.
 *
 * @param stats The hub's live figures (this broker's own, with a bus too).
 * @param startedAt When the broker started (ms since the epoch).
 * @param compat The live figures of each dialect that is on
 * (`/y-webrtc`: sockets and topics; `/peerjs`: sockets and ids), reported
 * as `compat` when any is.
 * @param isPodOrigin With a pod domain: whether an origin is a pod host's.
 * @param draining Whether the broker is draining: then the status is
 * `"draining"`, so that a load balancer sends it no more.
 * @returns `{status,version,uptimeSeconds,sessions,peers,origins}`, plus
 * `podOrigins` with a pod domain, `originsOmitted` when origins were left
 * out, and `bus` (`"up"` or `"down"`) when a signaling bus is configured.
 */
export function healthReport(
  stats: HubStats,
  startedAt: number,
  compat: Record<string, Record<string, number>> = {},
  isPodOrigin?: (origin: string) => boolean,
  draining = false,
): HealthReport {
  const origins: string[] = [];
  let omitted = 0;
  let pods = 0;
  for (const origin of stats.origins) {
    if (isPodOrigin?.(origin)) {
      pods++;
    } else if (
      origins.length < HEALTH_MAX_ORIGINS &&
      origin.length <= HEALTH_MAX_ORIGIN_CHARS
    ) {
      origins.push(origin);
    } else {
      omitted++;
    }
  }
  return {
    status: draining ? "draining" : "ok",
    version: VERSION,
    uptimeSeconds: Math.floor((Date.now() - startedAt) / 1000),
    sessions: stats.sessions,
    peers: stats.peers,
    origins,
    ...(isPodOrigin === undefined ? {} : { podOrigins: pods }),
    ...(omitted === 0 ? {} : { originsOmitted: omitted }),
    ...(Object.keys(compat).length === 0 ? {} : { compat }),
    ...(stats.bus === undefined ? {} : { bus: stats.bus }),
  };
}

const NO_STORE = { "Cache-Control": "no-store" };

/**
 * `/health`'s answer: 200 with the report, 503 while draining.
 *
 * @param report From {@linkcode healthReport}.
 * @returns The response.
 */
export function handleHealth(report: HealthReport): Response {
  const status = report.status === "ok" ? 200 : 503;
  return jsonResponse(report, NO_STORE, status);
}

/**
 * The same answer in parts when it is a `200` (not draining), for an
 * adapter that writes answers itself: a start's first `/health` then makes
 * no web `Response` (on Node, the first one loads its Fetch implementation).
 *
 * @param report From {@linkcode healthReport}.
 * @returns The header list and bytes, or null while draining.
 */
export function readyHealth(report: HealthReport): ReadyParts | null {
  return report.status === "ok" ? jsonParts(report, NO_STORE) : null;
}
