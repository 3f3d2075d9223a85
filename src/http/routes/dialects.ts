/**
 * The routes of the dialects (`src/signaling/compat/dialects.ts`): each
 * dialect's WebSocket path, admitted as `/signal` is, then `/ice` (the
 * broker's ICE servers with fresh TURN credentials) while any dialect is
 * on, and `/peerjs/id` with PeerJS. A socket's namespace is its page's
 * origin, wherever it arrived.
 *
 * @module
 */

import type { ResolvedOptions } from "../../config/options.ts";
import { DIALECTS } from "../../signaling/compat/dialects.ts";
import {
  type CompatDialect,
  namespaceOf,
} from "../../signaling/compat/limits.ts";
import type { Admission, Route, RouteRequest } from "../router.ts";
import { createIceRoute } from "./ice.ts";
import { PEERJS_ID_ROUTE } from "./peerjs_id.ts";

/** The broker's upgrade decision for `path` (426, 403, 503 or admitted). */
export type AdmitSocket = (
  request: Request,
  path: string,
) => Response | Admission;

/**
 * Builds the routes of the dialects that are on.
 *
 * @param options The resolved options (`compat`, and what `/ice` needs).
 * @param admit The broker's upgrade decision.
 * @param isOriginAllowed The sockets' origin rule, which `/ice` follows.
 * @returns The routes: the broker host's and a pod host's alike.
 */
export function dialectRoutes(
  options: ResolvedOptions,
  admit: AdmitSocket,
  isOriginAllowed: (origin: string | null) => boolean,
): Route[] {
  const on = options.compat;
  if (on.length === 0) return [];
  const routes = on.map((dialect) => upgradeRoute(dialect, admit));
  routes.push(createIceRoute(options, isOriginAllowed));
  if (on.includes("peerjs")) routes.push(PEERJS_ID_ROUTE);
  return routes;
}

function upgradeRoute(dialect: CompatDialect, admit: AdmitSocket): Route {
  const { path, params: names } = DIALECTS[dialect];
  const upgrade = ({ request }: RouteRequest): Response | Admission => {
    const answer = admit(request, path);
    if (answer instanceof Response) return answer;
    const params: Record<string, string> = {};
    const query = names.length === 0 ? null : new URL(request.url).searchParams;
    for (const name of names) {
      const value = query?.get(name);
      if (value != null) params[name] = value;
    }
    // The page's origin, never the Host: any page may open a socket to a
    // pod's host, but only the pod's own pages carry its origin.
    const namespace = namespaceOf(answer.origin);
    return { ...answer, compat: { dialect, namespace, params } };
  };
  return {
    pattern: path,
    cors: false,
    upgrade: true,
    methods: { GET: upgrade },
  };
}
