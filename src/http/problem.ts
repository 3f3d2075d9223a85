/**
 * RFC 9457 problem details: the table of stable error codes, the
 * {@linkcode BrokerError} that core code throws, and {@linkcode problem},
 * which turns a code into an `application/problem+json` response; and
 * {@linkcode jsonResponse}, which every JSON answer of the broker goes
 * through, so that each carries its `Content-Length` (which the access log
 * and metrics read).
 *
 * @module
 */

import { heldResponse } from "../_util/held_body.ts";

/** Status and title of every stable error code the HTTP API answers with. */
export const PROBLEM_CODES = {
  blob_too_large: { status: 413, title: "Payload Too Large" },
  unsupported_media_type: { status: 415, title: "Unsupported Media Type" },
  manifest_missing: { status: 400, title: "Bad Request" },
  manifest_malformed: { status: 400, title: "Bad Request" },
  signature_invalid: { status: 422, title: "Unprocessable Content" },
  content_mismatch: { status: 422, title: "Unprocessable Content" },
  storage_failed: { status: 500, title: "Internal Server Error" },
  pod_not_found: { status: 404, title: "Not Found" },
  not_found: { status: 404, title: "Not Found" },
  method_not_allowed: { status: 405, title: "Method Not Allowed" },
  upgrade_required: { status: 426, title: "Upgrade Required" },
  origin_not_allowed: { status: 403, title: "Forbidden" },
  too_many_sockets: { status: 503, title: "Service Unavailable" },
  shutting_down: { status: 503, title: "Service Unavailable" },
  internal_error: { status: 500, title: "Internal Server Error" },
  busy: { status: 503, title: "Service Unavailable" },
  upload_timeout: { status: 408, title: "Request Timeout" },
  owner_denied: { status: 403, title: "Forbidden" },
  content_denied: { status: 403, title: "Forbidden" },
  pod_deleted: { status: 410, title: "Gone" },
  bus_down: { status: 503, title: "Service Unavailable" },
  owner_mismatch: { status: 403, title: "Forbidden" },
  stale_update: { status: 409, title: "Conflict" },
  update_unauthorized: { status: 403, title: "Forbidden" },
  created_at_future: { status: 422, title: "Unprocessable Content" },
  host_invalid: { status: 400, title: "Bad Request" },
  upload_aborted: { status: 400, title: "Bad Request" },
  rate_limited: { status: 429, title: "Too Many Requests" },
} as const;

/** Seconds a client refused with `busy` is asked to wait (`Retry-After`). */
export const BUSY_RETRY_AFTER_SECONDS = 2;

/** A stable, machine-readable error code of the HTTP API. */
export type ProblemCode = keyof typeof PROBLEM_CODES;

/**
 * An error with a stable {@linkcode ProblemCode}; the broker converts it into
 * a problem response at a single boundary.
 *
 * @example Catch a coded error
 * ```ts
 * import assert from "node:assert/strict";
 * import { BrokerError } from "./problem.ts";
 *
 * const error = new BrokerError("manifest_missing", "No manifest slot");
 * assert.equal(error.status, 400);
 * ```
 */
export class BrokerError extends Error {
  /** The stable error code. */
  readonly code: ProblemCode;
  /** The HTTP status that the code maps to. */
  readonly status: number;

  /**
   * Makes an error for `code` with a human-readable `detail`.
   *
   * @param code The stable error code.
   * @param detail What went wrong, for a human.
   * @param options Standard error options (`cause`).
   */
  constructor(
    code: ProblemCode,
    detail: string,
    options?: ErrorOptions & { status?: number },
  ) {
    super(detail, options);
    this.name = "BrokerError";
    this.code = code;
    this.status = options?.status ?? PROBLEM_CODES[code].status;
  }
}

/** Titles of the statuses a code may be sent with besides its own. */
const STATUS_TITLES: Record<number, string> = { 503: "Service Unavailable" };

/**
 * Builds an RFC 9457 `application/problem+json` response.
 *
 * @param code The stable error code; it fixes the status and title.
 * @param detail What went wrong, for a human.
 * @param headers Extra response headers (for example `Allow`).
 * @param status The status, when not the code's own (`storage_failed` is 503
 * while the registry is unreachable).
 * @returns The problem response.
 *
 * @example A 404 problem
 * ```ts
 * import assert from "node:assert/strict";
 * import { problem } from "./problem.ts";
 *
 * const response = problem("pod_not_found", "No pod has this id");
 * assert.equal(response.status, 404);
 * assert.equal((await response.json()).code, "pod_not_found");
 * ```
 */
export function problem(
  code: ProblemCode,
  detail: string,
  headers?: Record<string, string>,
  status: number = PROBLEM_CODES[code].status,
): Response {
  const title = status === PROBLEM_CODES[code].status
    ? PROBLEM_CODES[code].title
    : STATUS_TITLES[status] ?? PROBLEM_CODES[code].title;
  if (code === "busy" || status === 503) {
    headers = { "Retry-After": `${BUSY_RETRY_AFTER_SECONDS}`, ...headers };
  }
  return jsonResponse(
    { type: "about:blank", title, status, code, detail },
    { ...headers, "Cache-Control": "no-store" },
    status,
    "application/problem+json",
  );
}

const encoder = new TextEncoder();

/**
 * A JSON response with its `Content-Length` set, unlike `Response.json`
 * (whose length only the runtime learns, as it sends).
 *
 * @param value What to send, as JSON.
 * @param headers Extra response headers.
 * @param status The status.
 * @param contentType The media type.
 * @returns The response.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { jsonResponse } from "./problem.ts";
 *
 * const response = jsonResponse({ ok: true }, {}, 201);
 * assert.equal(response.headers.get("Content-Length"), "11");
 * assert.equal(response.headers.get("Content-Type"), "application/json");
 * ```
 */
export function jsonResponse(
  value: unknown,
  headers: Record<string, string> = {},
  status = 200,
  contentType = "application/json",
): Response {
  const { head, body } = jsonParts(value, headers, contentType);
  const pairs: [string, string][] = [];
  for (let i = 0; i < head.length; i += 2) pairs.push([head[i]!, head[i + 1]!]);
  return heldResponse(body, { status, headers: pairs });
}

/**
 * The header list and bytes of {@linkcode jsonResponse}'s answer, for an
 * adapter that writes answers itself (see `Route.ready`).
 *
 * @param value Serialized with `JSON.stringify`.
 * @param headers Extra headers, before `Content-Type` and `Content-Length`.
 * @param contentType The media type.
 * @returns Header names and values, flat, and the body.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { jsonParts } from "./problem.ts";
 *
 * const { head, body } = jsonParts({ ok: true }, { "Cache-Control": "no-store" });
 * assert.deepEqual(head, [
 *   "Cache-Control", "no-store",
 *   "Content-Type", "application/json",
 *   "Content-Length", "11",
 * ]);
 * assert.equal(body.length, 11);
 * ```
 */
export function jsonParts(
  value: unknown,
  headers: Record<string, string> = {},
  contentType = "application/json",
): { head: string[]; body: Uint8Array<ArrayBuffer> } {
  const body = encoder.encode(JSON.stringify(value));
  const head: string[] = [];
  for (const [name, text] of Object.entries(headers)) head.push(name, text);
  head.push("Content-Type", contentType, "Content-Length", `${body.length}`);
  return { head, body };
}
