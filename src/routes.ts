/**
 * The route table: each path pattern once, with its methods, their handlers
 * and whether CORS applies. Matching, 404, 405 with `Allow`, and the
 * preflight's allowed methods are all derived from it.
 *
 * @module
 */

/** A `/signal` request the adapter should upgrade to a WebSocket. */
export interface Admission {
  /** The `Origin` header, or null when absent. */
  origin: string | null;
}

/** What a handler gets: the request, its parsed URL and the path parameter. */
export interface RouteRequest {
  /** The request. */
  request: Request;
  /** Its URL, parsed once. */
  url: URL;
  /** The public base URL for it, without a trailing slash (found once). */
  baseUrl: string;
  /** The `:id` segment, or "" for routes without one. */
  id: string;
}

/** Answers one method of one route. `/signal` may answer with an admission. */
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
}

/** A matched route and its `:id`. */
export interface RouteMatch {
  /** The route. */
  route: Route;
  /** The `:id` segment, or "". */
  id: string;
}

/**
 * Finds the route of `path`: exact patterns first, then those with `:id`
 * (one path segment).
 *
 * @param routes The table.
 * @param path The URL's pathname.
 * @returns The match, or null for an unknown path.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { matchRoute } from "./routes.ts";
 *
 * const routes = [{ pattern: "/:id/meta", methods: {}, cors: true }];
 * assert.equal(matchRoute(routes, "/abc/meta")?.id, "abc");
 * assert.equal(matchRoute(routes, "/abc"), null);
 * ```
 */
export function matchRoute(
  routes: readonly Route[],
  path: string,
): RouteMatch | null {
  for (const route of routes) {
    if (route.pattern === path) return { route, id: "" };
  }
  const segments = path.split("/");
  for (const route of routes) {
    const parts = partsOf(route);
    if (parts.length !== segments.length || !parts.includes(":id")) continue;
    let id = "";
    const matches = parts.every((part, i) => {
      const segment = segments[i]!;
      if (part !== ":id") return part === segment;
      id = segment;
      return segment !== "";
    });
    if (matches) return { route, id };
  }
  return null;
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

/** Each route's pattern split into segments, once. */
const PARTS = new WeakMap<Route, readonly string[]>();

function partsOf(route: Route): readonly string[] {
  let parts = PARTS.get(route);
  if (parts === undefined) {
    parts = route.pattern.split("/");
    PARTS.set(route, parts);
  }
  return parts;
}
