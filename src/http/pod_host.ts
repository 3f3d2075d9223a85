/**
 * An origin per pod (the `podDomain` option): the pod with id `ID` lives at
 * `SCHEME://LABEL.DOMAIN[:PORT]/` (LABEL: see `_util/pod_label.ts`). This
 * module owns the host → id decision, the pod hosts' route table (`/` and
 * `/signal`, nothing else), the broker host's 302 and the per-pod contexts.
 *
 * @module
 */

import { PodPermissionCache } from "../serving/permission_cache.ts";
import type { PodPermission } from "../serving/permissions.ts";
import { podIdOfLabel, podLabel } from "../_util/pod_label.ts";
import {
  CLEAR_POD_STORAGE,
  podOriginHeaderOptions,
} from "../serving/pod_origin.ts";
import { BrokerError, problem } from "./problem.ts";
import { checkPodId } from "./find_pod.ts";
import {
  createPodContext,
  handlePod,
  type PodContext,
  type PodContextOptions,
  readyPodParts,
} from "./routes/pod.ts";
import type {
  ReadyRequest,
  Route,
  RouteHandler,
  RouteRequest,
} from "./router.ts";

/** Pod contexts kept (each holds its pod's headers, built once). */

/** The routing and URLs of pods served at their own origins. */
export class PodHosts {
  readonly #suffix: string;
  // The pod hosts' own state (their header lists name each pod's origin and
  // add allow-same-origin), as long-lived as the broker's: the pod routes
  // key their caches by base URL, here the pod's origin.
  readonly #context: PodContext;
  /**
   * What each pod version is granted on its own origin (declared and
   * allowed), read once per version: the pod hosts' Permissions-Policy and
   * the broker's `/meta`.
   */
  readonly permissions: PodPermissionCache;

  /**
   * Serves pods at `LABEL.domain`.
   *
   * @param domain The pod domain (checked by the option).
   * @param options What the broker's pod routes get (`podHeaderOptions`
   * become the pod hosts' own), and `podPermissions`, what a pod may be
   * granted.
   */
  constructor(
    domain: string,
    options: PodContextOptions & {
      podPermissions: readonly PodPermission[];
    },
  ) {
    this.#suffix = `.${domain}`;
    this.permissions = new PodPermissionCache({
      allowed: options.podPermissions,
    });
    this.#context = createPodContext({
      ...options,
      podHeaderOptions: podOriginHeaderOptions(options.podHeaderOptions),
      permissions: this.permissions,
      grantsInHeaders: true,
    });
  }

  /**
   * Which pod host a request arrived at. The broker passes the origin of
   * the request's own `Host`, never a forwarded one, even with
   * `trustProxy`: browsers set `Host` and every cache keys on it, whereas
   * `X-Forwarded-Host` is a header a proxy may pass on from the client and
   * no cache keys on. Decided by it, one request could make the broker's
   * own host answer as a pod host (`allow-same-origin` at the broker's
   * origin), and a shared cache keep that answer for every visitor. A
   * trusted forwarded host still shapes the URLs the broker writes
   * (`baseUrlOf`); the front must pass `Host` through.
   *
   * @param origin The origin of the request's `Host` (`scheme://host[:port]`,
   * lower case, as `URL.origin` has it).
   * @returns The pod's id; "" for a name under the pod domain that names no
   * pod; null when the host is not under the pod domain.
   */
  idOf(origin: string): string | null {
    const start = origin.indexOf("//") + 2;
    let end = origin.lastIndexOf(":");
    if (end < start || origin.includes("]", end)) end = origin.length;
    let host = origin.slice(start, end);
    if (host.endsWith(".")) host = host.slice(0, -1);
    if (!host.endsWith(this.#suffix)) return null;
    const label = host.slice(0, -this.#suffix.length);
    return label.includes(".") ? "" : podIdOfLabel(label) ?? "";
  }

  /**
   * Whether an `Origin` header value names a host under the pod domain
   * (whatever its case, scheme or port): such origins are counted, never
   * named, by `/health`.
   *
   * @param origin The value as a socket sent it.
   */
  isPodOrigin(origin: string): boolean {
    return this.idOf(origin.toLowerCase()) !== null;
  }

  /**
   * A pod's origin: the base URL's scheme and port, the pod's host.
   *
   * @param baseUrl The broker's public base URL for the request.
   * @param id The pod id.
   * @returns `SCHEME://LABEL.DOMAIN[:PORT]`.
   */
  originOf(baseUrl: string, id: string): string {
    const url = new URL(baseUrl);
    url.hostname = `${podLabel(id)}${this.#suffix}`;
    return url.origin;
  }

  /**
   * A pod's URL, `SCHEME://LABEL.DOMAIN[:PORT]/`, for the upload envelope
   * and `/meta`'s `podUrl`.
   */
  urlOf(baseUrl: string, id: string): string {
    return `${this.originOf(baseUrl, id)}/`;
  }

  /**
   * `GET`/`HEAD /:id` on the broker host: 302 to the pod's origin (the
   * query kept); a malformed id is 404 `pod_not_found`.
   */
  redirect({ request, baseUrl, id }: RouteRequest): Response {
    checkPodId(id);
    const query = request.url.indexOf("?");
    const search = query < 0 ? "" : request.url.slice(query);
    return new Response(null, {
      status: 302,
      headers: { Location: `${this.urlOf(baseUrl, id)}${search}` },
    });
  }

  /**
   * The route table of a pod host: `/` serves the pod, `/signal` is the
   * broker's; every other path is 404. A deleted pod's 410 carries
   * `Clear-Site-Data`.
   *
   * @param admit The broker's `/signal` handler.
   * @param more Routes a pod host shares with the broker host (the
   * dialects' `/y-webrtc`, `/peerjs`, `/peerjs/id` and `/ice`).
   */
  routes(admit: RouteHandler, more: readonly Route[] = []): Route[] {
    // The pod's own origin is the base URL of what it is served with.
    const ownOrigin = <T extends { baseUrl: string; id: string }>(input: T) => {
      input.baseUrl = this.originOf(input.baseUrl, input.id);
      return input;
    };
    const ready = (request: ReadyRequest) =>
      readyPodParts(this.#context, ownOrigin(request));
    const serve = (input: RouteRequest): Response | Promise<Response> => {
      ownOrigin(input);
      try {
        const answer = handlePod(input, this.#context);
        return answer instanceof Promise ? answer.catch(clearingGone) : answer;
      } catch (error) {
        return clearingGone(error);
      }
    };
    return [
      {
        pattern: "/",
        cors: false,
        methods: { GET: serve, HEAD: serve },
        ready,
      },
      {
        pattern: "/signal",
        cors: false,
        upgrade: true,
        methods: { GET: admit },
      },
      ...more,
    ];
  }
}

function clearingGone(error: unknown): Response {
  if (error instanceof BrokerError && error.code === "pod_deleted") {
    return problem(error.code, error.message, { ...CLEAR_POD_STORAGE });
  }
  throw error;
}
