/**
 * The shape of a route table and what is derived from one: matching a path
 * to its row, and the `Allow` and preflight method lists. The table itself
 * (each path pattern once, with its methods, handlers and whether CORS
 * applies) lives in `createBroker` in src/http/broker.ts, where the
 * handlers' state is; its patterns are also the metrics' route labels.
 *
 * @module
 */

import type { CompatAdmission } from "../signaling/compat/dialects.ts";
import type { ReadyParts } from "../serving/pod_cache.ts";
import type { HeaderSource } from "./request_url.ts";

/** A request to a WebSocket route that the adapter should upgrade. */
export interface Admission {
  /** The `Origin` header, or null when absent. */
  origin: string | null;
  /** The host it connected to (the request URL's, from its `Host`). */
  host: string;
  /** For a dialect's socket (`/y-webrtc`, ...); absent for `/signal`. */
  compat?: CompatAdmission;
}

/** What a handler gets: the request, its base URL and the path parameter. */
export interface RouteRequest {
  /** The request. */
  request: Request;
  /** The public base URL for it, without a trailing slash (found once). */
  baseUrl: string;
  /** The `:id` segment, or "" for routes without one. */
  id: string;
  /** The peer's address, as the adapter gave it. */
  peerAddress?: string | undefined;
  /**
   * Set by a handler that knows its answer's body size, so that the access
   * log and metrics need not read the response's headers (which costs a
   * `Headers` object per request).
   */
  bodyBytes?: number;
}

/**
 * What a route's {@linkcode Route.ready} gets: a request's head, without a
 * `Request` object, as an adapter that writes answers itself reads it.
 */
export interface ReadyRequest extends HeaderSource {
  /** The method. */
  method: string;
  /** The `:id` segment, or the pod a pod host names. */
  id: string;
  /** The public base URL for it (found once). */
  baseUrl: string;
}

/**
 * Answers one method of one route. The `GET` of a route marked `upgrade`
 * may answer with an admission.
 */
export type RouteHandler = (
  input: RouteRequest,
) => Response | Admission | Promise<Response | Admission>;

/** One row of the route table. */
export interface Route {
  /** The path pattern, such as `/pods` or `/:id/meta` (also the metrics label). */
  readonly pattern: string;
  /** Handlers by method (upper case). */
  readonly methods: Readonly<Record<string, RouteHandler>>;
  /** Whether the route answers any origin, preflight included. */
  readonly cors: boolean;
  /**
   * Set on a WebSocket route: its `GET` may answer with an
   * {@linkcode Admission}. The one mark of an upgrade: an adapter that must
   * take the socket before the route answers (`node:http`) lets only a
   * `GET` to such a route onto its upgrade path, and an admission from any
   * other route is refused.
   */
  readonly upgrade?: boolean;
  /**
   * Set on a route whose `GET` or `HEAD` may be answered by a ready `200`
   * held in parts (a hot pod, `/health`): those parts, exactly the `200`
   * its handler would give the same request (the pipeline adds the CORS
   * and HSTS headers to both), or null when the handler must answer. An
   * adapter that writes parts itself (`node:http`) asks for them first.
   */
  readonly ready?: (request: ReadyRequest) => ReadyParts | null;
}

/** A matched route and its `:id`. */
export interface RouteMatch {
  /** The route. */
  route: Route;
  /** The `:id` segment, or "". */
  id: string;
}

/** Finds the route of a path (a URL's pathname), or null. */
export type RouteMatcher = (path: string) => RouteMatch | null;

/**
 * Compiles the route table into a matcher: exact patterns first (one map
 * lookup), then those with one `:id` segment, in table order.
 *
 * @param routes The table.
 * @returns The matcher.
 * @throws {TypeError} When a pattern has more than one `:id`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { createRouteMatcher } from "./router.ts";
 *
 * const match = createRouteMatcher([
 *   { pattern: "/health", methods: {}, cors: true },
 *   { pattern: "/:id/meta", methods: {}, cors: true },
 * ]);
 * assert.equal(match("/abc/meta")?.id, "abc");
 * assert.equal(match("/health")?.id, "");
 * assert.equal(match("/abc"), null);
 * assert.equal(match("//meta"), null);
 * ```
 */
export function createRouteMatcher(routes: readonly Route[]): RouteMatcher {
  const exact = new Map<string, RouteMatch>();
  const withId: { route: Route; prefix: string; suffix: string }[] = [];
  for (const route of routes) {
    const parts = route.pattern.split(":id");
    if (parts.length > 2) {
      throw new TypeError(`Route '${route.pattern}' has more than one :id`);
    }
    if (parts.length === 1) {
      if (!exact.has(route.pattern)) {
        exact.set(route.pattern, Object.freeze({ route, id: "" }));
      }
    } else {
      withId.push({ route, prefix: parts[0]!, suffix: parts[1]! });
    }
  }
  return (path) => {
    const found = exact.get(path);
    if (found !== undefined) return found;
    for (const { route, prefix, suffix } of withId) {
      const end = path.length - suffix.length;
      if (
        end > prefix.length && path.startsWith(prefix) &&
        path.endsWith(suffix)
      ) {
        const id = path.slice(prefix.length, end);
        if (!id.includes("/")) return { route, id };
      }
    }
    return null;
  };
}

/**
 * The methods a route allows, as the `Allow` header and the preflight list
 * them: its handlers' methods, plus `OPTIONS` when CORS applies.
 *
 * @param route The route.
 * @returns A comma-separated list, such as `GET, HEAD, OPTIONS`.
 */
export function allowedMethods(route: Route): string {
  const methods = Object.keys(route.methods);
  if (route.cors) methods.push("OPTIONS");
  return methods.join(", ");
}
