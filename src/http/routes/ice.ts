/**
 * `GET /ice`: the ICE servers a peer gets in `joined`, with TURN
 * credentials minted for this request, for the dialects' clients (they do
 * not speak the broker's own protocol). A credential is a grant of the
 * operator's TURN relay, so it is given as a socket is: only to an origin
 * the sockets admit (`--allowed-origin`, else 403 `origin_not_allowed`),
 * and at most `iceRequestsPerMinute` to one client address (else 429
 * `rate_limited`, with `Retry-After`).
 *
 * @module
 */

import { randomAlphanumeric } from "../../_util/id.ts";
import type { ResolvedOptions } from "../../config/options.ts";
import { clientAddress } from "../../operator/access_log.ts";
import { AddressRate } from "../address_rate.ts";
import { jsonResponse, problem } from "../problem.ts";
import type { Route, RouteRequest } from "../router.ts";

/**
 * Builds the `/ice` route.
 *
 * @param options The resolved options: the ICE servers, the rate, and
 * whether `X-Forwarded-For` names the client.
 * @param isOriginAllowed The sockets' origin rule (the hub's).
 * @returns The route (CORS `*`: a pod on the broker host has the origin
 * `null`).
 */
export function createIceRoute(
  options: ResolvedOptions,
  isOriginAllowed: (origin: string | null) => boolean,
): Route {
  const rate = new AddressRate(options.iceRequestsPerMinute);
  const ice = (input: RouteRequest): Response => {
    const { request, peerAddress } = input;
    const origin = request.headers.get("Origin");
    if (!isOriginAllowed(origin)) {
      return problem(
        "origin_not_allowed",
        `Cannot give ICE servers to origin '${origin}'`,
      );
    }
    const address = clientAddress(
      peerAddress,
      request.headers.get("X-Forwarded-For"),
      options.trustProxy,
    );
    if (!rate.take(address ?? "")) {
      return problem(
        "rate_limited",
        `Cannot give more ICE servers to this address: at most ${options.iceRequestsPerMinute} a minute`,
        { "Retry-After": `${rate.retryAfterSeconds}` },
      );
    }
    const iceServers = options.iceServersFor(randomAlphanumeric(16));
    const response = jsonResponse({ iceServers }, {
      "Cache-Control": "no-store",
    });
    input.bodyBytes = Number(response.headers.get("Content-Length"));
    return response;
  };
  return { pattern: "/ice", cors: true, methods: { GET: ice } };
}
