/**
 * The runtime-neutral core of the broker, and its composition root:
 * `createBroker` makes the pod hosts, the route table, the metrics, the hub
 * and the upload budget, and hands the route tables to the request pipeline
 * (pipeline.ts), which turns a `Request` into a `Response` or into an
 * admission when it is a `/signal` upgrade that may go ahead. The adapters
 * only listen, upgrade and feed the hub.
 *
 * @module
 */

import type { ResolvedOptions } from "../config/options.ts";
import { BrokerError, problem, PROBLEM_CODES } from "./problem.ts";
import { upgradeRequired } from "./answers.ts";
import { createFrontPage } from "./routes/front.ts";
import {
  handleHealth,
  type HealthReport,
  healthReport,
  readyHealth,
} from "./routes/health.ts";
import {
  createPodContext,
  handleMeta,
  handlePod,
  type PodContext,
  readyPodParts,
} from "./routes/pod.ts";
import { handleUpload, type UploadContext } from "./routes/upload.ts";
import { handleUpdate } from "./routes/update.ts";
import type { Admission, Route, RouteHandler, RouteRequest } from "./router.ts";
import { createPipeline } from "./pipeline.ts";
import { type HubClient, SignalingHub } from "../signaling/hub.ts";
import { SocketHub } from "../signaling/socket_hub.ts";
import { CLOSE_CODES, CLOSE_DEADLINE_MS } from "../signaling/close.ts";
import type { PeerSocket } from "../signaling/types.ts";
import { Dialects } from "../signaling/compat/dialects.ts";
import { dialectRoutes } from "./routes/dialects.ts";
import { UploadBudget } from "./upload_budget.ts";
import { PodHosts } from "./pod_host.ts";
import { Metrics, type MetricsStats } from "../operator/metrics.ts";
import { clientAddress } from "../operator/access_log.ts";

import type { ReadyAnswer, RequestHead } from "./pipeline.ts";

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
  /**
   * Drains: `/health` answers 503 `draining` and new sockets are refused
   * (503 `shutting_down`) from now on; open ones are told to reconnect and
   * closed with 1012, spread over the window (see `SocketHub.drain`).
   * Resolves once none is left, or a little after the window's end (the
   * last closing handshakes get their deadline), whichever comes first.
   *
   * @param windowMs The window. @default {drainSeconds, in milliseconds}
   */
  shutdown(windowMs?: number): Promise<void>;
}

/**
 * Builds the broker core from resolved options.
 *
 * @param options Options with defaults applied (see `resolveOptions`).
 * @returns The broker.
 */
export function createBroker(options: ResolvedOptions): Broker {
  // The metrics come first: the pod hosts, hubs and routes report to them;
  // once those exist, the metrics are shown what to read.
  const metrics = options.metrics === null
    ? null
    : new Metrics({ problemCodes: Object.keys(PROBLEM_CODES) });
  // Every hit the registry is told of, on the broker host or a pod host.
  const onHit = metrics === null ? undefined : () => metrics.podHit();
  const podHosts = options.podDomain === null
    ? null
    : new PodHosts(options.podDomain, { ...options, onHit });
  if (podHosts && options.podDomainPsl === "unlisted") {
    options.logger(
      "warn",
      "The pod domain is not on the Public Suffix List yet: any pod can set cookies for every pod, and with them make every pod host refuse a visitor",
      { podDomain: options.podDomain },
    );
  }
  const state = { closing: false };
  const { sockets, hub, dialects } = createHubs(options, metrics);
  const admitSocket = (request: Request, path: string) =>
    admitSocketTo(request, path, { hub, sockets, state });
  const admit = ({ request }: RouteRequest) => admitSocket(request, "/signal");
  const dialectPaths = dialectRoutes(
    options,
    admitSocket,
    (origin) => sockets.isOriginAllowed(origin),
  );
  const budget = new UploadBudget(
    options.maxUploadBytesInFlight,
    options.maxUploadsPerAddress,
  );
  const startedAt = Date.now();
  const isPodOrigin = podHosts?.isPodOrigin.bind(podHosts);
  const health = () =>
    healthReport(
      hub.stats,
      startedAt,
      dialects.health(),
      isPodOrigin,
      state.closing,
    );
  // The broker host's pod caches (headers, ready responses, script hashes).
  const pods = createPodContext({
    ...options,
    podUrl: podHosts?.urlOf.bind(podHosts),
    onHit,
    permissions: podHosts?.permissions,
  });
  const routes = routeTable(options, {
    pods,
    podHosts,
    budget,
    health,
    admit,
    dialectRoutes: dialectPaths,
    metrics,
  });
  const podRoutes = podHosts?.routes(admit, dialectPaths) ?? [];
  metrics?.watch({
    // A pod host's routes (`/`, `/signal`) are labelled as they are named.
    routes: [...new Set([...routes, ...podRoutes].map((r) => r.pattern))],
    stats: (): MetricsStats => ({ ...hub.counts, compat: dialects.counts() }),
  });
  const { handle, ready, refuseMethod, isUpgradePath } = createPipeline(
    options,
    {
      routes,
      podRoutes,
      podHosts,
      metrics,
    },
  );

  async function fetch(
    request: Request,
    peerAddress?: string,
  ): Promise<Response> {
    const answer = await handle(request, peerAddress);
    if (answer instanceof Response) return answer;
    return upgradeRequired("Cannot upgrade this request to a WebSocket");
  }

  const shutdown = (windowMs = options.drainSeconds * 1000) =>
    drain(sockets, state, windowMs);

  function connect(socket: PeerSocket, admission: Admission): HubClient {
    return admission.compat === undefined
      ? hub.connect(socket, admission.origin, admission.host)
      : dialects.connect(socket, admission.origin, admission.compat);
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

/** The socket hub, and on it `/signal`'s hub and the dialects'. */
function createHubs(options: ResolvedOptions, metrics: Metrics | null): {
  sockets: SocketHub;
  hub: SignalingHub;
  dialects: Dialects;
} {
  // Every socket of every dialect, and the rules they share.
  const sockets = new SocketHub({
    limits: options.signaling,
    logger: options.logger,
  });
  const shared = {
    limits: options.signaling,
    logger: options.logger,
    observer: metrics ?? undefined,
    sockets,
  };
  const hub = new SignalingHub({
    ...shared,
    iceServers: options.iceServersFor,
    bus: options.bus,
  });
  const dialects = new Dialects({
    ...shared,
    on: options.compat,
    bus: options.bus?.compat,
  });
  return { sockets, hub, dialects };
}

/**
 * Refuses new sockets from now on (`/health` says draining), drains the
 * open ones over `windowMs`, closes any left at its end, and resolves once
 * none is left or their closing handshakes' deadline passed.
 */
async function drain(
  sockets: SocketHub,
  state: { closing: boolean },
  windowMs: number,
): Promise<void> {
  state.closing = true;
  sockets.drain(windowMs);
  await drainedWithin(sockets, windowMs);
  // Past the window: whoever is still open goes now.
  sockets.closeAll(CLOSE_CODES.serviceRestart);
  await drainedWithin(sockets, CLOSE_DEADLINE_MS);
}

/** Resolves once `sockets` has none open, or after `ms`. */
async function drainedWithin(sockets: SocketHub, ms: number): Promise<void> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  await Promise.race([
    sockets.drained(),
    new Promise((resolve) => (timer = setTimeout(resolve, ms))),
  ]);
  clearTimeout(timer);
}

/** What the route table is made of besides the options. */
interface RouteParts {
  readonly pods: PodContext;
  readonly podHosts: PodHosts | null;
  readonly budget: UploadBudget;
  readonly health: () => HealthReport;
  readonly admit: (input: RouteRequest) => Response | Admission;
  readonly dialectRoutes: readonly Route[];
  readonly metrics: Metrics | null;
}

/** The route table: matching, 405s, preflights and metrics labels. */
function routeTable(options: ResolvedOptions, parts: RouteParts): Route[] {
  const { pods, podHosts, health, admit, metrics } = parts;
  // With a pod domain, the broker host redirects a pod to its own host;
  // without, it serves the pod, from its ready parts when it can.
  const pod: Pick<Route, "ready"> & { serve: RouteHandler } = podHosts === null
    ? {
      serve: (input) => handlePod(input, pods),
      ready: (request) => readyPodParts(pods, request),
    }
    : { serve: (input) => podHosts.redirect(input) };
  const meta = (input: RouteRequest) => handleMeta(input, pods);

  const update = (input: RouteRequest) =>
    counted(
      handleUpdate(
        input.request,
        input.id,
        uploadContext(options, parts, input),
      ),
      () => metrics?.updateAccepted(),
      (code) => metrics?.updateRefused(code),
    );

  const front = createFrontPage(options);
  const healthAnswer = () => handleHealth(health());
  return [
    { pattern: "/", cors: false, methods: { GET: front, HEAD: front } },
    {
      pattern: "/pods",
      cors: true,
      methods: {
        POST: (input) =>
          counted(
            handleUpload(input.request, uploadContext(options, parts, input)),
            () => metrics?.uploadAccepted(),
            (code) => metrics?.uploadRefused(code),
          ),
      },
    },
    {
      pattern: "/health",
      cors: true,
      methods: { GET: healthAnswer, HEAD: healthAnswer },
      ready: () => readyHealth(health()),
    },
    { pattern: "/signal", cors: false, upgrade: true, methods: { GET: admit } },
    ...parts.dialectRoutes,
    { pattern: "/:id/meta", cors: true, methods: { GET: meta, HEAD: meta } },
    {
      pattern: "/:id",
      cors: false,
      // PUT only on a registry that can update (else 405, Allow: GET, HEAD).
      methods: options.registry.updatePod
        ? { GET: pod.serve, HEAD: pod.serve, PUT: update }
        : { GET: pod.serve, HEAD: pod.serve },
      ...pod,
    },
  ];
}

/** What an upload or an update of one request may use. */
function uploadContext(
  options: ResolvedOptions,
  { podHosts, budget }: RouteParts,
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

/** What the upgrade decision looks at. */
interface SocketGate {
  /** For whether the bus is up. */
  readonly hub: SignalingHub;
  /** The origin rule and the socket cap, for every dialect. */
  readonly sockets: SocketHub;
  readonly state: { readonly closing: boolean };
}

// The upgrade decision: 426 without a WebSocket upgrade, then 403, 503.
function admitSocketTo(
  request: Request,
  path: string,
  { hub, sockets, state }: SocketGate,
): Response | Admission {
  if (request.headers.get("Upgrade")?.toLowerCase() !== "websocket") {
    return upgradeRequired(
      `Cannot serve ${path} without a WebSocket upgrade`,
    );
  }
  const origin = request.headers.get("Origin");
  if (!sockets.isOriginAllowed(origin)) {
    return problem(
      "origin_not_allowed",
      `Cannot accept WebSockets from origin '${origin}'`,
    );
  }
  if (state.closing) {
    return problem(
      "shutting_down",
      "Cannot accept WebSockets: shutting down",
    );
  }
  if (!sockets.hasRoom()) {
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
  return { origin, host: new URL(request.url).host };
}
