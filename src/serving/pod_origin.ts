/**
 * What differs in a pod's headers when it is served at its own origin (the
 * `podDomain` option): the sandbox policy gains `allow-same-origin`, so the
 * pod runs at its own origin and has storage (under `storage: "granted"`,
 * `sandboxOf` in `pod_headers.ts` takes it away from a pod granted
 * nothing); and a taken-down pod's 410 asks the browser to clear that
 * origin's storage.
 *
 * @module
 */

import { DEFAULT_SANDBOX, type PodHeaderOptions } from "./pod_headers.ts";

/**
 * `Clear-Site-Data` on the 410 of a deleted pod served at its own origin:
 * the visitor's stored data for it (localStorage, IndexedDB, Cache API,
 * service workers) is cleared on the next visit.
 */
export const CLEAR_POD_STORAGE = { "Clear-Site-Data": '"storage"' } as const;

/**
 * The pod header options for pods served at their own origin: the
 * operator's (or the default) sandbox tokens plus `allow-same-origin`.
 * The option itself refuses that token, since on the broker's host it would
 * give every pod the broker's origin; on a pod host the origin is the pod's.
 *
 * @param options The broker's `podHeaderOptions`.
 * @returns The same options with the sandbox widened.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { podOriginHeaderOptions } from "./pod_origin.ts";
 *
 * assert.equal(
 *   podOriginHeaderOptions({ sandbox: "allow-scripts" }).sandbox,
 *   "allow-scripts allow-same-origin",
 * );
 * ```
 */
export function podOriginHeaderOptions(
  options: PodHeaderOptions,
): PodHeaderOptions {
  const sandbox = (options.sandbox ?? DEFAULT_SANDBOX).trim();
  return {
    ...options,
    sandbox: sandbox === ""
      ? "allow-same-origin"
      : `${sandbox} allow-same-origin`,
  };
}

/**
 * Whether the pod domain is on the Public Suffix List, as the operator says
 * (the `podDomainPsl` option).
 */
export type PodDomainListing = "listed" | "unlisted";

/** The choices of `podDomainPsl`. */
export const POD_DOMAIN_LISTINGS: readonly PodDomainListing[] = [
  "listed",
  "unlisted",
];

/**
 * Top-level names reserved by RFC 6761 that the public internet never
 * resolves: a pod domain under one of them has no visitors but those who
 * set it up for themselves.
 */
const PRIVATE_TLDS = ["localhost", "test", "example", "invalid"];

/**
 * Why a pod domain cannot be served as configured, or null. Until the pod
 * domain is on the Public Suffix List, browsers take it for one site: any
 * pod may set cookies on the domain itself, which every pod host then
 * receives. That is cookie tossing, and a denial of service no broker can
 * undo: a pod sets about 600 KB of cookies (Chromium keeps up to 180 a
 * domain, 4 KiB each) and every pod host answers that visitor 431 or 400
 * from `node:http` (16 KiB of headers), `Deno.serve` (64 KB in one header)
 * or the front (nginx, 8 KiB a line), before any route runs, until the
 * cookies expire or the visitor clears them. So the operator must say whether the domain is
 * listed; `"unlisted"` serves pods anyway, with that risk accepted.
 * `localhost` and the other names of {@linkcode PRIVATE_TLDS} are exempt.
 *
 * @param domain The `podDomain` option (null: none).
 * @param listing The `podDomainPsl` option (null: not given).
 * @returns The reason to refuse, worded for the `podDomainPsl` option.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { podDomainListingConflict } from "./pod_origin.ts";
 *
 * assert.equal(podDomainListingConflict("pods.example.com", "listed"), null);
 * assert.equal(podDomainListingConflict("localhost", null), null);
 * assert.match(podDomainListingConflict("pods.example.com", null)!, /Public Suffix List/);
 * ```
 */
export function podDomainListingConflict(
  domain: string | null,
  listing: PodDomainListing | null,
): string | null {
  if (domain === null || listing !== null) return null;
  if (PRIVATE_TLDS.includes(domain.slice(domain.lastIndexOf(".") + 1))) {
    return null;
  }
  return `must say whether ${domain} is on the Public Suffix List: "listed", or "unlisted" to serve pods before it is (until then any pod can set cookies for every pod, and with them make every pod host refuse that visitor)`;
}
