/**
 * `GET /health`: liveness and the live signaling figures.
 *
 * @module
 */

import type { HubStats } from "../../signaling/hub.ts";
import { VERSION } from "../../version.ts";

/**
 * Builds the health report.
 *
 * @param stats The hub's live figures (this broker's own, with a bus too).
 * @param startedAt When the broker started (ms since the epoch).
 * @returns 200 `{status,version,uptimeSeconds,sessions,peers,origins}`,
 * plus `bus` (`"up"` or `"down"`) when a signaling bus is configured.
 */
export function handleHealth(stats: HubStats, startedAt: number): Response {
  return Response.json({
    status: "ok",
    version: VERSION,
    uptimeSeconds: Math.floor((Date.now() - startedAt) / 1000),
    sessions: stats.sessions,
    peers: stats.peers,
    origins: stats.origins,
    ...(stats.bus === undefined ? {} : { bus: stats.bus }),
  }, { headers: { "Cache-Control": "no-store" } });
}
