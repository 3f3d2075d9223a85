/**
 * The request pipeline every request goes through, in order: the target
 * and base URL (or 400 `host_invalid`), the route (or 404), the preflight
 * or the method (or 405), the handler, CORS and HSTS headers on the answer,
 * the single error boundary (`toProblem`), and the one place that sees
 * every answer (metrics and the access log). The route tables it runs come
 * from `createBroker`.
 *
 * A request comes in one of two ways, and both take the same decision
 * (`locate`: target, base URL, pod host, route): as a web `Request`
 * (`handle`), or, for an adapter that writes answers itself (`node:http`),
 * as a bare head (`ready`), answered only when its route holds a ready
 * `200` in parts for it (a hot pod, `/health`; `Route.ready`), with the
 * headers `handle` would add (CORS, HSTS); anything else is null, and the
 * adapter calls `handle`.
 *
 * @module
 */

import type { ResolvedOptions } from "../config/options.ts";
import { notAllowed, notFound, preflight, toProblem } from "./answers.ts";
import {
  type Admission,
  createRouteMatcher,
  type Route,
  type RouteHandler,
  type RouteMatch,
  type RouteMatcher,
  type RouteRequest,
} from "./router.ts";
import {
  baseUrlOf,
  type HeaderSource,
  hostInvalid,
  isValidHost,
  requestTarget,
  targetOf,
} from "./request_url.ts";
import type { PodHosts } from "./pod_host.ts";
import type { Metrics } from "../operator/metrics.ts";
import {
  createObserve,
  type Observe,
  type ObservedRequest,
} from "./observe.ts";
import type { ReadyParts } from "../serving/pod_cache.ts";

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

/** The ways in: a request, a request the Fetch API cannot make, an upgrade path. */
export interface Pipeline {
  /**
   * Answers a request, or admits a `/signal` WebSocket upgrade for the
   * adapter to perform; without a promise when the handler answers so.
   */
  handle(
    request: Request,
    peerAddress?: string,
  ): Response | Admission | Promise<Response | Admission>;
  /** The answer to a method the Fetch API cannot represent on `path`. */
  refuseMethod(path: string, host?: string | null): Response;
  /** Whether `path` is a WebSocket route's, on the broker's host or a pod host. */
  isUpgradePath(path: string): boolean;
  /** A hot pod's answer in parts, or null (see `Broker.ready`). */
  ready(head: RequestHead, peerAddress?: string): ReadyAnswer | null;
}

/** What the pipeline runs: the route tables and who watches. */
export interface PipelineParts {
  /** The broker's route table. */
  readonly routes: readonly Route[];
  /** A pod host's own routes (with `podDomain`). */
  readonly podRoutes: readonly Route[];
  /** The pod hosts, or null without `podDomain`. */
  readonly podHosts: PodHosts | null;
  /** The metrics, or null when off. */
  readonly metrics: Metrics | null;
}

const CORS_HEADERS = {
  "Access-Control-Allow-Origin": "*",
  "Access-Control-Expose-Headers": "Location, ETag",
} as const;
/** The same, flat, for an answer in parts. */
const CORS_HEAD = Object.entries(CORS_HEADERS).flat();

/**
 * Builds the pipeline over the route tables.
 *
 * @param options Options with defaults applied.
 * @param parts The route tables, pod hosts and metrics.
 * @returns The pipeline.
 */
export function createPipeline(
  options: ResolvedOptions,
  { routes, podRoutes, podHosts, metrics }: PipelineParts,
): Pipeline {
  const matchRoute = createRouteMatcher(routes);
  const locate = createLocate(options, matchRoute, podRoutes, podHosts);
  const matchUpgrade = createRouteMatcher(
    [...routes, ...podRoutes].filter((route) => route.upgrade === true),
  );
  const observer = createObserve(options, metrics);
  const observe = observeAnswers(observer);
  const ready = createReady(locate, observer);

  // Synchronous whenever the handler is (a hot pod): a Response returned
  // as is, not in a promise, keeps Deno.serve on its fastest path.
  function handle(
    request: Request,
    peerAddress?: string,
  ): Response | Admission | Promise<Response | Admission> {
    const started = performance.now();
    let destination: Destination;
    try {
      destination = locate(request, targetOf(request));
    } catch (error) {
      return observe(
        request,
        null,
        "",
        started,
        toProblem(error, options.logger),
        undefined,
        peerAddress,
      );
    }
    const { baseUrl, match, id } = destination;
    if (match === null) {
      return observe(
        request,
        null,
        "",
        started,
        withHsts(baseUrl, notFound(destination.path)),
        undefined,
        peerAddress,
      );
    }
    const { route } = match;
    const input: RouteRequest = { request, baseUrl, id, peerAddress };
    const finish = (answer: Response | Admission) => {
      if (!(answer instanceof Response) && route.upgrade !== true) {
        answer = toProblem(
          new Error(`An admission from '${route.pattern}'`),
          options.logger,
        );
      }
      if (answer instanceof Response) {
        if (route.cors) {
          for (const [name, value] of Object.entries(CORS_HEADERS)) {
            answer.headers.set(name, value);
          }
        }
        withHsts(baseUrl, answer);
      }
      return observe(
        request,
        route.pattern,
        id,
        started,
        answer,
        input.bodyBytes,
        peerAddress,
      );
    };
    const fail = (error: unknown) => {
      delete input.bodyBytes;
      return finish(toProblem(error, options.logger));
    };
    const handler = route.methods[request.method];
    if (route.cors && request.method === "OPTIONS") {
      return finish(preflight(request, route));
    }
    if (handler === undefined) return finish(notAllowed(route));
    let answer: ReturnType<RouteHandler>;
    try {
      answer = handler(input);
    } catch (error) {
      return fail(error);
    }
    return answer instanceof Promise
      ? answer.then(finish, fail)
      : finish(answer);
  }

  function refuseMethod(path: string, host?: string | null): Response {
    if (typeof host === "string" && !isValidHost(host)) {
      return toProblem(hostInvalid("Host"), options.logger);
    }
    const match = matchRoute(path);
    return match === null ? notFound(path) : notAllowed(match.route);
  }

  const isUpgradePath = (path: string) => matchUpgrade(path) !== null;

  return { handle, ready, refuseMethod, isUpgradePath };
}

/**
 * Where a request goes, decided once for both ways in: its base URL, and
 * its route on the broker's host or on a pod's (null: 404).
 */
function createLocate(
  options: ResolvedOptions,
  matchRoute: RouteMatcher,
  podRoutes: readonly Route[],
  podHosts: PodHosts | null,
): Locate {
  const matchPodRoute = podHosts && createRouteMatcher(podRoutes);
  // A forwarded host that is not host[:port] throws `host_invalid`.
  return (head, target) => {
    const baseUrl = baseUrlOf(head, target.origin, options);
    // With podDomain, a request to a pod's own host has its own routes.
    const podId = podHosts?.idOf(target.origin) ?? null;
    const match = podId === null
      ? matchRoute(target.path)
      : matchPodRoute!(target.path);
    return { baseUrl, path: target.path, match, id: podId ?? match?.id ?? "" };
  };
}

/** What `locate` decides for a request. */
type Locate = (
  head: HeaderSource,
  target: { origin: string; path: string },
) => Destination;

/**
 * The pipeline's way in for a bare head: a request's ready `200` in parts,
 * when its route holds one for it (see `Route.ready`), with the headers
 * `handle` adds; counted and logged as any answer. Only a `GET` or `HEAD`
 * that needs no normalizing is taken: an origin-form target and a `Host` as
 * it is valid; any other goes the long way, where it is normalized or
 * refused.
 */
function createReady(
  locate: Locate,
  observer: Observe | null,
): Pipeline["ready"] {
  return (head: RequestHead, peerAddress?: string): ReadyAnswer | null => {
    const { url, headers, method } = head;
    const host = headers.get("Host");
    if (
      (method !== "GET" && method !== "HEAD") ||
      url.charCodeAt(0) !== 0x2f || host === null || !isValidHost(host) ||
      /\.(?::|$)/.test(host)
    ) {
      return null;
    }
    const started = performance.now();
    let destination: Destination;
    let parts: ReadyParts | null;
    // Whatever fails here (a Host the long way refuses, a registry that
    // throws) is answered the long way.
    try {
      destination = locate(head, requestTarget(`http://${host}${url}`));
      parts = destination.match?.route.ready?.({
        method: head.method,
        headers,
        id: destination.id,
        baseUrl: destination.baseUrl,
      }) ?? null;
    } catch {
      return null;
    }
    if (parts === null) return null;
    const { baseUrl, match, id } = destination;
    observer?.(head, {
      route: match!.route.pattern,
      id,
      started,
      status: 200,
      length: parts.body.length,
      peerAddress,
    });
    const { cors } = match!.route;
    if (!cors && !hsts(baseUrl)) return parts;
    const answer = [...parts.head];
    if (cors) answer.push(...CORS_HEAD);
    if (hsts(baseUrl)) answer.push("Strict-Transport-Security", HSTS);
    return { head: answer, body: parts.body };
  };
}

/**
 * What the pipeline calls with each answer before returning it: the
 * observer (metrics and the access log) told of its status and size.
 */
function observeAnswers(observer: Observe | null) {
  return (
    request: Request,
    route: string | null,
    id: string,
    started: number,
    answer: Response | Admission,
    bodyBytes?: number,
    peerAddress?: string,
  ): Response | Admission => {
    observer?.(request, {
      route,
      id,
      started,
      // An admitted upgrade is counted as the 101 the adapter will send.
      status: answer instanceof Response ? answer.status : 101,
      // Never `answer.body`: reading it turns a byte body into a stream,
      // which takes Deno.serve off its fast path.
      length: bodyBytes ??
        (answer instanceof Response
          ? answer.headers.get("Content-Length")
          : null),
      peerAddress,
    });
    return answer;
  };
}

/** Where a request goes: see `locate`. */
interface Destination {
  /** Its public base URL. */
  readonly baseUrl: string;
  /** Its path. */
  readonly path: string;
  /** Its route, or null for a 404. */
  readonly match: RouteMatch | null;
  /** The path's `:id`, or the pod its host names; "" for neither. */
  readonly id: string;
}

/** Whether answers for `baseUrl` carry `Strict-Transport-Security`. */
function hsts(baseUrl: string): boolean {
  return baseUrl.startsWith("https:");
}

function withHsts(baseUrl: string, response: Response): Response {
  if (hsts(baseUrl)) response.headers.set("Strict-Transport-Security", HSTS);
  return response;
}
