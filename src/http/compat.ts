/**
 * The routes of signaling for apps written for other libraries: `/y-webrtc`,
 * `/peerjs` and `/nostr` (WebSockets, admitted as `/signal` is), `/peerjs/id` (a
 * fresh PeerJS id) and `/ice` (the broker's ICE servers with fresh TURN
 * credentials, src/http/routes/ice.ts). The `compat` option chooses the
 * dialects; `/ice` is there while one is on (it exists for their clients).
 * A socket's namespace is its page's origin, wherever it arrived. This
 * module owns the dialect hubs and hands each admitted socket to its own.
 *
 * @module
 */

import { heldResponse } from "../_util/held_body.ts";
import type { ResolvedOptions } from "../config/options.ts";
import type { CompatClient, CompatObserver } from "../signaling/compat/base.ts";
import { type CompatDialect, namespaceOf } from "../signaling/compat/limits.ts";
import { NostrHub } from "../signaling/compat/nostr.ts";
import { PeerJsHub } from "../signaling/compat/peerjs.ts";
import { createCompatRelays } from "../signaling/compat/relays.ts";
import { YWebrtcHub } from "../signaling/compat/y_webrtc.ts";
import type { SocketHub } from "../signaling/socket_hub.ts";
import type { PeerSocket } from "../signaling/types.ts";
import { createIceRoute } from "./routes/ice.ts";
import type {
  Admission,
  CompatAdmission,
  Route,
  RouteRequest,
} from "./router.ts";

/** The broker's upgrade decision for `path` (426, 403, 503 or admitted). */
export type AdmitSocket = (
  request: Request,
  path: string,
) => Response | Admission;

/** How the broker admits what the dialects serve, and who holds them. */
export interface CompatGate {
  /** The broker's upgrade decision. */
  readonly admit: AdmitSocket;
  /**
   * The broker's socket hub: it holds the dialect sockets, and its origin
   * rule (`--allowed-origin`) is the one `/ice` follows.
   */
  readonly sockets: SocketHub;
}

/** The dialects of one broker. */
export interface Compat {
  /** The routes: the broker host's and a pod host's alike. */
  readonly routes: Route[];
  /** Open sockets of each dialect that is on. */
  counts(): Partial<Record<CompatDialect, number>>;
  /** Each dialect that is on, with its live figures (for `/health`). */
  health(): Partial<Record<CompatDialect, Record<string, number>>>;
  /** Gives an admitted dialect socket to its hub. */
  connect(
    socket: PeerSocket,
    origin: string | null,
    admission: CompatAdmission,
  ): CompatClient;
}

/**
 * Builds the dialects that `options.compat` names, and their routes.
 *
 * @param options The resolved options.
 * @param gate The broker's upgrade decision and origin rule.
 * @param observer The metrics, once they are made (or null).
 * @returns The dialects.
 */
export function createCompat(
  options: ResolvedOptions,
  { admit, sockets }: CompatGate,
  observer: () => CompatObserver | null,
): Compat {
  const common = {
    sockets,
    limits: options.signaling,
    logger: options.logger,
    observer: {
      compatRelayed: (...args) => observer()?.compatRelayed(...args),
      compatRefused: (...args) => observer()?.compatRefused(...args),
    } satisfies CompatObserver,
  };
  const on = new Set(options.compat);
  // With a bus that has a compat part, topics and ids are shared.
  const shared = options.bus?.compat;
  const relays = shared === undefined || on.size === 0
    ? null
    : createCompatRelays(shared, options.logger);
  const yWebrtc = on.has("y-webrtc")
    ? new YWebrtcHub({ ...common, relay: relays?.topics })
    : null;
  const peerjs = on.has("peerjs")
    ? new PeerJsHub({ ...common, relay: relays?.ids })
    : null;
  const nostr = on.has("nostr") ? new NostrHub(common) : null;
  const hubs = [yWebrtc, peerjs, nostr].filter((hub) => hub !== null);

  const upgrade =
    (dialect: CompatDialect, path: string) =>
    ({ request }: RouteRequest): Response | Admission => {
      const answer = admit(request, path);
      if (answer instanceof Response) return answer;
      const params: Record<string, string> = {};
      if (dialect === "peerjs") {
        const query = new URL(request.url).searchParams;
        for (const name of ["key", "id", "token"]) {
          const value = query.get(name);
          if (value !== null) params[name] = value;
        }
      }
      // The page's origin, never the Host: any page may open a socket to
      // a pod's host, but only the pod's own pages carry its origin.
      const namespace = namespaceOf(answer.origin);
      return { ...answer, compat: { dialect, namespace, params } };
    };

  const routes: Route[] = on.size === 0
    ? []
    : [createIceRoute(options, (origin) => sockets.isOriginAllowed(origin))];
  if (yWebrtc !== null) {
    routes.push({
      pattern: "/y-webrtc",
      cors: false,
      upgrade: true,
      methods: { GET: upgrade("y-webrtc", "/y-webrtc") },
    });
  }

  if (peerjs !== null) {
    routes.push(
      {
        pattern: "/peerjs",
        cors: false,
        upgrade: true,
        methods: { GET: upgrade("peerjs", "/peerjs") },
      },
      { pattern: "/peerjs/id", cors: true, methods: { GET: peerJsId } },
    );
  }

  if (nostr !== null) {
    routes.push({
      pattern: "/nostr",
      cors: false,
      upgrade: true,
      methods: { GET: upgrade("nostr", "/nostr") },
    });
  }

  return {
    routes,
    counts() {
      const counts: Partial<Record<CompatDialect, number>> = {};
      for (const hub of hubs) counts[hub.dialect] = hub.sockets;
      return counts;
    },
    health() {
      const figures: Partial<Record<CompatDialect, Record<string, number>>> =
        {};
      for (const hub of hubs) figures[hub.dialect] = hub.stats;
      return figures;
    },
    connect(socket, origin, { dialect, namespace, params }) {
      if (dialect === "y-webrtc" && yWebrtc !== null) {
        return yWebrtc.connect(socket, origin, namespace);
      }
      if (dialect === "peerjs" && peerjs !== null) {
        return peerjs.connect(socket, origin, namespace, params);
      }
      if (dialect === "nostr" && nostr !== null) {
        return nostr.connect(socket, origin, namespace);
      }
      throw new RangeError(`Cannot connect a '${dialect}' socket: it is off`);
    },
  };
}

/**
 * `GET /peerjs/id`: a fresh id, as the PeerJS server gives one (text, and
 * any origin may read it: a pod's is `null`). The id is not held: the
 * socket that opens with it claims it.
 */
function peerJsId(input: RouteRequest): Response {
  const body = new TextEncoder().encode(crypto.randomUUID());
  input.bodyBytes = body.length;
  return heldResponse(body, {
    headers: {
      "Content-Type": "text/plain; charset=utf-8",
      "Content-Length": String(body.length),
      "Cache-Control": "no-store",
      "X-Content-Type-Options": "nosniff",
    },
  });
}
