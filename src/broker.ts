/**
 * The runtime-neutral core of the broker: `fetch()` turns a `Request` into a
 * `Response` (routing, CORS, 404/405 and the single error boundary), and
 * `admit()` judges a `/signal` upgrade. The adapters only listen and upgrade.
 *
 * @module
 */

import type { Logger } from "./log.ts";
import type { ResolvedOptions } from "./options.ts";
import { BrokerError, problem } from "./problem.ts";
import { handleHealth } from "./routes/health.ts";
import { handleMeta, handlePod, type PodContext } from "./routes/pod.ts";
import { handleUpload } from "./routes/upload.ts";
import { SignalingHub } from "./signaling/hub.ts";

/** A `/signal` request that may be upgraded, with its origin. */
export interface Admission {
  /** The `Origin` header, or null when absent. */
  origin: string | null;
}

/** The request-to-response core that both adapters wrap. */
export interface Broker {
  /** Answers every HTTP request except a `/signal` upgrade. */
  fetch(request: Request): Promise<Response>;
  /**
   * Judges a `/signal` request: a refusal (426, 403, 503) as a problem
   * response, or an admission for the adapter to upgrade.
   */
  admit(request: Request): Response | Admission;
  /** The signaling hub that upgraded sockets are given to. */
  readonly hub: SignalingHub;
  /** Refuses new sockets, closes open ones with 1001 and waits for them. */
  shutdown(timeoutMs?: number): Promise<void>;
}

const CORS_PATHS = /^\/(pods|health|[^/]+\/meta)$/;
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
  const hub = new SignalingHub(options.signaling, options.logger);
  const startedAt = Date.now();
  let closing = false;

  async function route(request: Request, path: string): Promise<Response> {
    const method = request.method;
    if (path === "/pods") {
      if (method !== "POST") return notAllowed("POST, OPTIONS");
      return await handleUpload(request, {
        registry: options.registry,
        maxBlobBytes: options.maxBlobBytes,
        baseUrl: baseUrlOf(request, options),
      });
    }
    if (path === "/health") {
      if (method !== "GET" && method !== "HEAD") {
        return notAllowed("GET, HEAD, OPTIONS");
      }
      return handleHealth(hub.stats, startedAt);
    }
    if (path === "/signal") {
      if (method !== "GET") return notAllowed("GET");
      const refusal = admit(request);
      if (refusal instanceof Response) return refusal;
      // An admitted upgrade is the adapter's to perform; reaching here means
      // the adapter did not.
      return problem(
        "upgrade_required",
        "Cannot upgrade this request to a WebSocket",
        {
          Upgrade: "websocket",
        },
      );
    }
    const match = /^\/([^/]+)(\/meta)?$/.exec(path);
    if (match) {
      const [, id, meta] = match as unknown as [
        string,
        string,
        string | undefined,
      ];
      if (method !== "GET" && method !== "HEAD") {
        return notAllowed(meta ? "GET, HEAD, OPTIONS" : "GET, HEAD");
      }
      const context = podContext(request);
      return meta
        ? await handleMeta(id, context)
        : await handlePod(request, id, context);
    }
    return problem(
      "not_found",
      `Cannot find '${path.slice(0, 200)}' on this broker`,
    );
  }

  function podContext(request: Request): PodContext {
    const baseUrl = baseUrlOf(request, options);
    return {
      registry: options.registry,
      podHeaderOptions: options.podHeaderOptions,
      baseUrl,
      signalUrl: `${baseUrl.replace(/^http/, "ws")}/signal`,
      logger: options.logger,
    };
  }

  function admit(request: Request): Response | Admission {
    if (request.headers.get("Upgrade")?.toLowerCase() !== "websocket") {
      return problem(
        "upgrade_required",
        "Cannot serve /signal without a WebSocket upgrade",
        {
          Upgrade: "websocket",
        },
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
    if (!hub.hasRoom()) {
      return problem(
        "too_many_sockets",
        "Cannot accept more WebSockets: the broker is full",
      );
    }
    return { origin };
  }

  async function fetch(request: Request): Promise<Response> {
    const path = new URL(request.url).pathname;
    const cors = CORS_PATHS.test(path);
    let response: Response;
    if (cors && request.method === "OPTIONS") {
      response = preflight(request);
    } else {
      try {
        response = await route(request, path);
      } catch (error) {
        response = toProblem(error, options.logger);
      }
    }
    if (cors) {
      for (const [name, value] of Object.entries(CORS_HEADERS)) {
        response.headers.set(name, value);
      }
    }
    return response;
  }

  async function shutdown(timeoutMs = 5_000): Promise<void> {
    closing = true;
    hub.closeAll();
    let timer: ReturnType<typeof setTimeout> | undefined;
    await Promise.race([
      hub.drained(),
      new Promise((resolve) => (timer = setTimeout(resolve, timeoutMs))),
    ]);
    clearTimeout(timer);
  }

  return { fetch, admit, hub, shutdown };
}

/**
 * The public base URL for `request`: the `baseUrl` option, else the
 * request's own origin (`X-Forwarded-*` honoured only with `trustProxy`).
 */
function baseUrlOf(request: Request, options: ResolvedOptions): string {
  if (options.baseUrl !== null) return options.baseUrl;
  const url = new URL(request.url);
  if (!options.trustProxy) return url.origin;
  const proto = firstValue(request.headers.get("X-Forwarded-Proto"));
  const host = firstValue(request.headers.get("X-Forwarded-Host"));
  const scheme = proto === "http" || proto === "https"
    ? proto
    : url.protocol.slice(0, -1);
  try {
    return new URL(`${scheme}://${host ?? url.host}`).origin;
  } catch {
    return url.origin;
  }
}

function firstValue(header: string | null): string | undefined {
  return header?.split(",")[0]?.trim() || undefined;
}

function preflight(request: Request): Response {
  return new Response(null, {
    status: 204,
    headers: {
      "Access-Control-Allow-Methods": "GET, HEAD, POST, OPTIONS",
      "Access-Control-Allow-Headers":
        request.headers.get("Access-Control-Request-Headers") ??
          "Content-Type",
      "Access-Control-Max-Age": "86400",
    },
  });
}

function notAllowed(allow: string): Response {
  return problem(
    "method_not_allowed",
    `Cannot use this method here; allowed: ${allow}`,
    {
      Allow: allow,
    },
  );
}

function toProblem(error: unknown, logger: Logger): Response {
  if (error instanceof BrokerError) {
    if (error.status >= 500) {
      logger("error", error.message, { code: error.code, error: error.cause });
    }
    return problem(error.code, error.message);
  }
  logger("error", "Unexpected error", { error });
  return problem(
    "internal_error",
    "Cannot answer: an unexpected error happened",
  );
}
