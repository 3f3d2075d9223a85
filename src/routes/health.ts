/**
 * `GET /health`: liveness and the live signaling figures.
 *
 * @module
 */

import type { HubStats } from "../signaling/hub.ts";
import { VERSION } from "../version.ts";

/**
 * Builds the health report.
 *
 * @param stats The hub's live figures.
 * @param startedAt When the broker started (ms since the epoch).
 * @returns 200 `{status,version,uptimeSeconds,sessions,peers,origins}`.
 */
export function handleHealth(stats: HubStats, startedAt: number): Response {
  return Response.json({
    status: "ok",
    version: VERSION,
    uptimeSeconds: Math.floor((Date.now() - startedAt) / 1000),
    sessions: stats.sessions,
    peers: stats.peers,
    origins: stats.origins,
  }, { headers: { "Cache-Control": "no-store" } });
}
