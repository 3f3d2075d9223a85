/**
 * The runtime-neutral core of the broker: `handle()` turns a `Request` into
 * a `Response` through the route table (CORS, 404/405 and the single error
 * boundary), or into an admission when it is a `/signal` upgrade that may go
 * ahead. The adapters only listen, upgrade and feed the hub.
 *
 * @module
 */

import type { ResolvedOptions } from "../config/options.ts";
import { BrokerError, problem, PROBLEM_CODES } from "./problem.ts";
import {
  notAllowed,
  notFound,
  preflight,
  toProblem,
  upgradeRequired,
} from "./answers.ts";
import { createFrontPage } from "./routes/front.ts";
import { handleHealth } from "./routes/health.ts";
import { createPodContext, handleMeta, handlePod } from "./routes/pod.ts";
import { handleUpload, type UploadContext } from "./routes/upload.ts";
import { handleUpdate } from "./routes/update.ts";
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
import { type HubClient, SignalingHub } from "../signaling/hub.ts";
import type { PeerSocket } from "../signaling/types.ts";
import { createCompat } from "./compat.ts";
import { UploadBudget } from "./upload_budget.ts";
import { PodHosts } from "./pod_host.ts";
import { Metrics, type MetricsStats } from "../operator/metrics.ts";
import { clientAddress } from "../operator/access_log.ts";
import { createObserve } from "./observe.ts";
import {
  createReadyPod,
  HSTS,
  type ReadyAnswer,
  type RequestHead,
} from "./ready_pod.ts";

export type { Admission, ReadyAnswer, RequestHead };

/** The request-to-response core that both adapters wrap. */
export interface Broker {
  /**
   * Answers a request, or admits a `/signal` WebSocket upgrade for the
   * adapter to perform. This is the one place that decides upgrades.
   * Answers without a promise when it can (a hot pod). `peerAddress` is
   * the connection's remote address, for the access log's `ip`.
   */
  handle(
    request: Request,
    peerAddress?: string,
  ): Response | Admission | Promise<Response | Admission>;
  /**
   * Whether `path` (a request target's path) is a WebSocket route's, on the
   * broker's host or a pod host: the only requests an adapter may take onto
   * an upgrade path before the broker answers them. Read from the route
   * tables' `upgrade` mark.
   */
  isUpgradePath(path: string): boolean;
  /**
   * Answers a request with a response; an admitted upgrade, which only an
   * adapter can perform, gets 426.
   */
  fetch(request: Request, peerAddress?: string): Promise<Response>;
  /**
   * A hot pod's `200` in parts (header list and bytes), for an adapter
   * that writes them itself without a web `Request` or `Response`; or null,
   * and the request goes through `handle`. Answers exactly when `handle`
   * would answer from the pod's ready response, and counts and logs the
   * request as `handle` does.
   */
  ready(head: RequestHead, peerAddress?: string): ReadyAnswer | null;
  /**
   * The answer to a request the Fetch API cannot represent on `path`: a
   * method such as TRACE or CONNECT (405 with the route's `Allow`, or 404
   * for an unknown path), or a `Host` that makes no URL (400
   * `host_invalid`, when the adapter passes `host`).
   */
  refuseMethod(path: string, host?: string | null): Response;
  /** The signaling hub that upgraded `/signal` sockets are given to. */
  readonly hub: SignalingHub;
  /**
   * Gives an upgraded socket to its hub: `/signal`'s, or a dialect's.
   *
   * @param socket How the hub sends to and closes the socket.
   * @param admission What `handle` admitted the upgrade with.
   * @returns What the adapter calls on each message and on close.
   */
  connect(socket: PeerSocket, admission: Admission): HubClient;
  /** The metrics the adapters feed and the metrics listener renders, or null. */
  readonly metrics: Metrics | null;
  /** Refuses new sockets, closes open ones with 1001 and waits for them. */
  shutdown(timeoutMs?: number): Promise<void>;
}

const CORS_HEADERS = {
  "Access-Control-Allow-Origin": "*",
  "Access-Control-Expose-Headers": "Location, ETag",
} as const;

/**
 * Builds the broker core from resolved options.
 *
 * @param options Options with defaults applied (see `resolveOptions`).
 * @returns The broker.
 */
export function createBroker(options: ResolvedOptions): Broker {
  // Every hit the registry is told of, on the broker host or a pod host.
  const onHit = () => metrics?.podHit();
  const podHosts = options.podDomain === null
    ? null
    : new PodHosts(options.podDomain, { ...options, onHit });
  const podUrl = podHosts?.urlOf.bind(podHosts);
  if (podHosts && options.podDomainPsl === "unlisted") {
    options.logger(
      "warn",
      "The pod domain is not on the Public Suffix List yet: any pod can set cookies for every pod, and with them make every pod host refuse a visitor",
      { podDomain: options.podDomain },
    );
  }

  const isPodOrigin = podHosts?.isPodOrigin.bind(podHosts);
  const health = () =>
    handleHealth(
      compat.withOrigins(hub.stats),
      startedAt,
      compat.health(),
      isPodOrigin,
    );
  // The broker's pod caches (headers, ready responses, script hashes).
  const { permissions } = podHosts ?? {};
  const pods = createPodContext({ ...options, podUrl, onHit, permissions });
  const pod = (input: RouteRequest) =>
    podHosts?.redirect(input) ?? handlePod(input, pods);
  const meta = (input: RouteRequest) => handleMeta(input, pods);

  const update = (input: RouteRequest) =>
    counted(
      handleUpdate(input.request, input.id, uploadContext(input)),
      () => metrics?.updateAccepted(),
      (code) => metrics?.updateRefused(code),
    );

  function uploadContext(
    { request, baseUrl, peerAddress }: RouteRequest,
  ): UploadContext {
    return {
      registry: options.registry,
      maxBlobBytes: options.maxBlobBytes,
      budget,
      uploadTimeoutMs: options.uploadTimeoutMs,
      baseUrl,
      denyList: options.denyList,
      podUrl: podHosts?.urlOf.bind(podHosts, baseUrl),
      address: options.maxUploadsPerAddress > 0
        ? clientAddress(
          peerAddress,
          request.headers.get("X-Forwarded-For"),
          options.trustProxy,
        )
        : undefined,
    };
  }

  /** Counts an upload or an update as accepted, or refused by its code. */
  async function counted(
    answer: Promise<Response>,
    accepted: () => void,
    refused: (code: string) => void,
  ): Promise<Response> {
    try {
      const response = await answer;
      accepted();
      return response;
    } catch (error) {
      refused(
        error instanceof BrokerError ? error.code : "internal_error",
      );
      throw error;
    }
  }

  const admit = ({ request }: RouteRequest) => admitSocket(request, "/signal");
  // The metrics are made from the routes: the dialects reach them later.
  const compat = createCompat(options, admitSocket, () => metrics);

  /** The route table: matching, 405s, preflights and metrics labels. */
  const front = createFrontPage(options);
  const routes: Route[] = [
    { pattern: "/", cors: false, methods: { GET: front, HEAD: front } },
    {
      pattern: "/pods",
      cors: true,
      methods: {
        POST: (input) =>
          counted(
            handleUpload(input.request, uploadContext(input)),
            () => metrics?.uploadAccepted(),
            (code) => metrics?.uploadRefused(code),
          ),
      },
    },
    { pattern: "/health", cors: true, methods: { GET: health, HEAD: health } },
    { pattern: "/signal", cors: false, upgrade: true, methods: { GET: admit } },
    ...compat.routes,
    { pattern: "/:id/meta", cors: true, methods: { GET: meta, HEAD: meta } },
    {
      pattern: "/:id",
      cors: false,
      // PUT only on a registry that can update (else 405, Allow: GET, HEAD).
      methods: options.registry.updatePod
        ? { GET: pod, HEAD: pod, PUT: update }
        : { GET: pod, HEAD: pod },
    },
  ];
  const matchRoute = createRouteMatcher(routes);
  const podRoutes = podHosts?.routes(admit, compat.routes) ?? [];
  const matchPodRoute = podHosts && createRouteMatcher(podRoutes);
  const matchUpgrade = createRouteMatcher(
    [...routes, ...podRoutes].filter((route) => route.upgrade === true),
  );
  const metrics: Metrics | null = options.metrics === null
    ? null
    : new Metrics({
      stats: (): MetricsStats => ({ ...hub.counts, compat: compat.counts() }),
      // A pod host's routes (`/`, `/signal`) are labelled as they are named.
      routes: [...new Set([...routes, ...podRoutes].map((r) => r.pattern))],
      problemCodes: Object.keys(PROBLEM_CODES),
    });
  const observer = createObserve(options, metrics);
  const hub = new SignalingHub({
    limits: options.signaling,
    logger: options.logger,
    iceServers: options.iceServersFor,
    bus: options.bus,
    observer: metrics ?? undefined,
  });
  const budget = new UploadBudget(
    options.maxUploadBytesInFlight,
    options.maxUploadsPerAddress,
  );
  const startedAt = Date.now();
  let closing = false;

  // The upgrade decision: 426 without a WebSocket upgrade, then 403, 503.
  function admitSocket(request: Request, path: string): Response | Admission {
    if (request.headers.get("Upgrade")?.toLowerCase() !== "websocket") {
      return upgradeRequired(
        `Cannot serve ${path} without a WebSocket upgrade`,
      );
    }
    const origin = request.headers.get("Origin");
    if (!hub.isOriginAllowed(origin)) {
      return problem(
        "origin_not_allowed",
        `Cannot accept WebSockets from origin '${origin}'`,
      );
    }
    if (closing) {
      return problem(
        "shutting_down",
        "Cannot accept WebSockets: shutting down",
      );
    }
    if (hub.counts.sockets + compat.sockets() >= options.signaling.maxSockets) {
      return problem(
        "too_many_sockets",
        "Cannot accept more WebSockets: the broker is full",
      );
    }
    if (!hub.busUp) {
      return problem(
        "bus_down",
        "Cannot accept WebSockets: the signaling bus is down",
      );
    }
    return { origin };
  }

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

  // One place sees every answered request: metrics and the access log.
  function observe(
    request: Request,
    route: string | null,
    id: string,
    started: number,
    answer: Response | Admission,
    bodyBytes?: number,
    peerAddress?: string,
  ): Response | Admission {
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
  }

  const ready = createReadyPod({
    options,
    podHosts,
    pods,
    matchRoute,
    observe: observer,
  });

  async function fetch(
    request: Request,
    peerAddress?: string,
  ): Promise<Response> {
    const answer = await handle(request, peerAddress);
    if (answer instanceof Response) return answer;
    return upgradeRequired("Cannot upgrade this request to a WebSocket");
  }

  async function shutdown(timeoutMs = 5_000): Promise<void> {
    closing = true;
    hub.closeAll();
    let timer: ReturnType<typeof setTimeout> | undefined;
    await Promise.race([
      Promise.all([hub.drained(), compat.closeAll()]),
      new Promise((resolve) => (timer = setTimeout(resolve, timeoutMs))),
    ]);
    clearTimeout(timer);
  }

  function withHsts(baseUrl: string, response: Response) {
    if (baseUrl.startsWith("https:")) {
      response.headers.set("Strict-Transport-Security", HSTS);
    }
    return response;
  }

  function refuseMethod(path: string, host?: string | null): Response {
    if (typeof host === "string" && !isValidHost(host)) {
      return toProblem(hostInvalid("Host"), options.logger);
    }
    const match = matchRoute(path);
    return match === null ? notFound(path) : notAllowed(match.route);
  }

  const isUpgradePath = (path: string) => matchUpgrade(path) !== null;

  function connect(socket: PeerSocket, admission: Admission): HubClient {
    return admission.compat === undefined
      ? hub.connect(socket, admission.origin)
      : compat.connect(socket, admission.origin, admission.compat);
  }

  return {
    handle,
    fetch,
    ready,
    isUpgradePath,
    refuseMethod,
    hub,
    connect,
    metrics,
    shutdown,
  };
}
