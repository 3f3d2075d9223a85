/**
 * A hot pod answered from its cached parts, for an adapter that writes
 * them itself (`node:http`: one `writeHead` with the header list, one
 * `end` with the bytes). On that stack a web `Request`, a `Response`, its
 * clone and the stream of its body cost more per request than everything
 * else the broker does for a hot pod.
 *
 * It answers exactly when the broker would answer `200` from its ready
 * response: a `GET` or `HEAD` of `/:id` (or of `/` on a pod's host) with a
 * valid `Host`, without `If-None-Match`, for a pod whose ready answer is
 * kept and that the deny list lets through. Anything else is null, and
 * the adapter takes the request through `handle` as usual. The answer's
 * headers are the ready response's, plus `Strict-Transport-Security` over
 * https, as `handle` adds it; the request is counted and logged as any.
 *
 * @module
 */

import type { ResolvedOptions } from "../config/options.ts";
import type { ReadyParts } from "../serving/pod_cache.ts";
import type { Observe, ObservedRequest } from "./observe.ts";
import type { PodHosts } from "./pod_host.ts";
import { baseUrlOf, isValidHost, requestTarget } from "./request_url.ts";
import type { RouteMatcher } from "./router.ts";
import { type PodContext, readyPodParts } from "./routes/pod.ts";

/**
 * `Strict-Transport-Security` for requests that reached the broker over
 * https (an `https:` base URL, or `X-Forwarded-Proto: https` with
 * `trustProxy`): one year, as the HTTP Observatory asks for an A+.
 */
export const HSTS: string = `max-age=${365 * 24 * 60 * 60}`;

/** A request's head, as an adapter that answers from parts sees it. */
export interface RequestHead extends ObservedRequest {
  /** The request target as sent (origin form: path and query). */
  readonly url: string;
}

/** A hot pod's `200`, in parts. */
export interface ReadyAnswer {
  /** Header names and values, flat: `[name, value, name, value, ...]`. */
  readonly head: readonly string[];
  /** The body (left out for `HEAD`). */
  readonly body: Uint8Array;
}

/** What {@linkcode createReadyPod} needs from the broker. */
export interface ReadyPodDeps {
  /** The base URL option and whether proxies are trusted. */
  options: Pick<ResolvedOptions, "baseUrl" | "trustProxy">;
  /** The pod domain's hosts, or null. */
  podHosts: PodHosts | null;
  /** The broker host's pod routes' state. */
  pods: PodContext;
  /** The broker host's route table. */
  matchRoute: RouteMatcher;
  /** Metrics and access log, or null. */
  observe: Observe | null;
}

/** The route a ready pod is served on, on the broker's host and a pod's. */
const POD_ROUTE = "/:id";
const POD_HOST_ROUTE = "/";

/**
 * The ready-answer function of one broker.
 *
 * @param deps The broker's routes, caches and observer.
 * @returns The answer to a request for a hot pod, or null.
 */
export function createReadyPod(
  deps: ReadyPodDeps,
): (head: RequestHead, peerAddress?: string) => ReadyAnswer | null {
  const { options, podHosts, pods, matchRoute, observe } = deps;
  // The pod, its route and its parts for one request, or null.
  const find = (
    origin: string,
    path: string,
    baseUrl: string,
    method: string,
  ) => {
    const podId = podHosts?.idOf(origin) ?? null;
    if (podId !== null) {
      if (path !== "/" || podId === "") return null;
      const parts = podHosts!.readyParts(baseUrl, podId, method);
      return parts && { route: POD_HOST_ROUTE, id: podId, parts };
    }
    // With a pod domain, the broker host redirects /:id to the pod's host.
    if (podHosts !== null) return null;
    const match = matchRoute(path);
    if (match === null || match.route.pattern !== POD_ROUTE) return null;
    const parts = readyPodParts(pods, match.id, baseUrl, method);
    return parts && { route: POD_ROUTE, id: match.id, parts };
  };
  return (head, peerAddress) => {
    const { method, url, headers } = head;
    if (method !== "GET" && method !== "HEAD") return null;
    if (url.charCodeAt(0) !== 0x2f || headers.get("If-None-Match") !== null) {
      return null;
    }
    // A fully qualified or invalid Host goes the long way (it is
    // normalized, or refused, there).
    const host = headers.get("Host");
    if (host === null || !isValidHost(host) || /\.(?::|$)/.test(host)) {
      return null;
    }
    const started = performance.now();
    let found: ReturnType<typeof find>;
    let baseUrl: string;
    try {
      const target = requestTarget(`http://${host}${url}`);
      baseUrl = baseUrlOf(head, target.origin, options);
      found = find(target.origin, target.path, baseUrl, method);
    } catch {
      return null;
    }
    if (found === null) return null;
    const { parts } = found;
    observe?.(head, {
      route: found.route,
      id: found.id,
      started,
      status: 200,
      length: parts.body.length,
      peerAddress,
    });
    return withHsts(baseUrl, parts);
  };
}

function withHsts(baseUrl: string, parts: ReadyParts): ReadyAnswer {
  if (!baseUrl.startsWith("https:")) return parts;
  return {
    head: [...parts.head, "Strict-Transport-Security", HSTS],
    body: parts.body,
  };
}
