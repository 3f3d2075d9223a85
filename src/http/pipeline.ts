/**
 * The request pipeline every request goes through, in order: the target
 * and base URL (or 400 `host_invalid`), the route (or 404), the preflight
 * or the method (or 405), the handler, CORS and HSTS headers on the answer,
 * the single error boundary (`toProblem`), and the one place that sees
 * every answer (metrics and the access log). The route tables it runs come
 * from `createBroker`.
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
  type RouteRequest,
} from "./router.ts";
import {
  baseUrlOf,
  hostInvalid,
  isValidHost,
  targetOf,
} from "./request_url.ts";
import type { PodHosts } from "./pod_host.ts";
import type { Metrics } from "../operator/metrics.ts";
import type { PodContext } from "./routes/pod.ts";
import { createObserve, type Observe } from "./observe.ts";
import {
  createReadyPod,
  HSTS,
  type ReadyAnswer,
  type RequestHead,
} from "./ready_pod.ts";

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
  /** The broker host's pod routes' state (its ready answers). */
  readonly pods: PodContext;
  /** The metrics, or null when off. */
  readonly metrics: Metrics | null;
}

const CORS_HEADERS = {
  "Access-Control-Allow-Origin": "*",
  "Access-Control-Expose-Headers": "Location, ETag",
} as const;

/**
 * Builds the pipeline over the route tables.
 *
 * @param options Options with defaults applied.
 * @param parts The route tables, pod hosts and metrics.
 * @returns The pipeline.
 */
export function createPipeline(
  options: ResolvedOptions,
  { routes, podRoutes, podHosts, pods, metrics }: PipelineParts,
): Pipeline {
  const matchRoute = createRouteMatcher(routes);
  const matchPodRoute = podHosts && createRouteMatcher(podRoutes);
  const matchUpgrade = createRouteMatcher(
    [...routes, ...podRoutes].filter((route) => route.upgrade === true),
  );
  const observer = createObserve(options, metrics);
  const observe = observeAnswers(observer);
  const ready = createReadyPod({
    options,
    podHosts,
    pods,
    matchRoute,
    observe: observer,
  });

  // Synchronous whenever the handler is (a hot pod): a Response returned
  // as is, not in a promise, keeps Deno.serve on its fastest path.
  function handle(
    request: Request,
    peerAddress?: string,
  ): Response | Admission | Promise<Response | Admission> {
    const started = performance.now();
    let path: string;
    let baseUrl: string;
    let podId: string | null;
    try {
      const target = targetOf(request);
      path = target.path;
      baseUrl = baseUrlOf(request, target.origin, options);
      // With podDomain, a request to a pod's own host has its own routes.
      podId = podHosts?.idOf(target.origin) ?? null;
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
    const match = podId === null ? matchRoute(path) : matchPodRoute!(path);
    if (match === null) {
      return observe(
        request,
        null,
        "",
        started,
        withHsts(baseUrl, notFound(path)),
        undefined,
        peerAddress,
      );
    }
    const { route } = match;
    const id = podId ?? match.id;
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

function withHsts(baseUrl: string, response: Response): Response {
  if (baseUrl.startsWith("https:")) {
    response.headers.set("Strict-Transport-Security", HSTS);
  }
  return response;
}
