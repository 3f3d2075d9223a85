/**
 * What differs in a pod's headers when it is served at its own origin (the
 * `podDomain` option): the sandbox policy gains `allow-same-origin`, so the
 * pod runs at its own origin and has storage; and a taken-down pod's 410
 * asks the browser to clear that origin's storage.
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
