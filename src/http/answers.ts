/**
 * The broker's fixed answers: a CORS preflight, 404, 405, 426, and the
 * problem a thrown error becomes at the single error boundary.
 *
 * @module
 */

import type { Logger } from "../_util/log.ts";
import { BrokerError, problem } from "./problem.ts";
import { isUnavailable } from "../registries/types.ts";
import { allowedMethods, type Route } from "./router.ts";

/** 426 with `Upgrade: websocket`: the one way `/signal` says it needs one. */
export function upgradeRequired(detail: string): Response {
  return problem("upgrade_required", detail, { Upgrade: "websocket" });
}

/** 204 to a CORS preflight, naming the route's methods. */
export function preflight(request: Request, route: Route): Response {
  return new Response(null, {
    status: 204,
    headers: {
      "Access-Control-Allow-Methods": allowedMethods(route),
      "Access-Control-Allow-Headers":
        request.headers.get("Access-Control-Request-Headers") ??
          "Content-Type",
      "Access-Control-Max-Age": "86400",
    },
  });
}

/** 404 `not_found` for a path no route serves (its first 200 characters). */
export function notFound(path: string): Response {
  return problem(
    "not_found",
    `Cannot find '${path.slice(0, 200)}' on this broker`,
  );
}

/** 405 `method_not_allowed` with the route's `Allow`. */
export function notAllowed(route: Route): Response {
  const allow = allowedMethods(route);
  return problem(
    "method_not_allowed",
    `Cannot use this method here; allowed: ${allow}`,
    {
      Allow: allow,
    },
  );
}

/**
 * The single error boundary's answer: a registry that cannot be reached is
 * 503, a `BrokerError` its own status and code, anything else 500 (logged).
 */
export function toProblem(error: unknown, logger: Logger): Response {
  // The one place that reads a registry's `unavailable` (on the error or
  // its cause): 503 and Retry-After, not 500.
  if (isUnavailable(error)) {
    logger("warn", "The registry is unreachable", { error });
    return problem(
      "storage_failed",
      "Cannot answer now: the registry is unreachable, try again shortly",
      undefined,
      503,
    );
  }
  if (error instanceof BrokerError) {
    if (error.status >= 500 && error.code !== "busy") {
      logger("error", error.message, { code: error.code, error: error.cause });
    } else if (error.cause !== undefined) {
      // A refusal with a cause is the client's doing (an aborted upload):
      // normal, so only for debugging.
      logger("debug", error.message, { code: error.code, error: error.cause });
    }
    return problem(error.code, error.message, undefined, error.status);
  }
  logger("error", "Unexpected error", { error });
  return problem(
    "internal_error",
    "Cannot answer: an unexpected error happened",
  );
}
