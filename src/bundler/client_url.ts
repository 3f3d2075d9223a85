/**
 * Where the browser client (`pod-broker/client`) is: the module `build`
 * bundles for it, and the module a pod folder's `deno.json` maps it to,
 * so that `deno check` finds its types (on npm, each compiled module names
 * its `.d.ts` with `@ts-self-types`). One place decides both.
 *
 * @module
 */

import { resolve } from "node:path";
import { pathToFileURL } from "node:url";

/** Whether this is the npm build (compiled `.js` beside `.d.ts`). */
const COMPILED = import.meta.url.endsWith(".js");

/**
 * The browser client, beside this folder (`.ts` from source, `.js` on npm,
 * where this module is in the bundled server's flat folder, `esm/server/`,
 * one level down as here: see tests/support/npm_layout.ts).
 */
export const DEFAULT_CLIENT: URL = new URL(
  `../client/mod.${COMPILED ? "js" : "ts"}`,
  import.meta.url,
);

/**
 * The client a build uses.
 *
 * @param client A path, a `file:`/`http(s):` URL, or undefined for
 * {@linkcode DEFAULT_CLIENT}.
 * @returns Its URL.
 */
export function clientUrl(client: string | URL | undefined): URL {
  if (client === undefined) return DEFAULT_CLIENT;
  if (client instanceof URL) return client;
  return /^(?:file|https?):/i.test(client)
    ? new URL(client)
    : pathToFileURL(resolve(client));
}
