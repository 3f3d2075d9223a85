/**
 * `GET /peerjs/id`: a fresh PeerJS id, as the PeerJS server gives one
 * (text, and any origin may read it: a pod's is `null`). The id is not
 * held: the socket that opens with it claims it.
 *
 * @module
 */

import { heldResponse } from "../../_util/held_body.ts";
import type { Route, RouteRequest } from "../router.ts";

function peerJsId(input: RouteRequest): Response {
  const body = new TextEncoder().encode(crypto.randomUUID());
  input.bodyBytes = body.length;
  return heldResponse(body, {
    headers: {
      "Content-Type": "text/plain; charset=utf-8",
      "Content-Length": String(body.length),
      "Cache-Control": "no-store",
      "X-Content-Type-Options": "nosniff",
    },
  });
}

/** The `/peerjs/id` route (CORS `*`). */
export const PEERJS_ID_ROUTE: Route = {
  pattern: "/peerjs/id",
  cors: true,
  methods: { GET: peerJsId },
};
