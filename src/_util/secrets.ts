/**
 * Keeping a connection URL's password out of messages: the one way the
 * registries and the bus find the secrets of a URL and cut them out.
 *
 * @module
 */

/**
 * The secrets in a connection URL: its password (and a `?password=`
 * parameter), each as written and %-decoded, longest first.
 *
 * @param url A `postgres://` or `redis://` URL.
 * @returns The strings to scrub from any text shown about this URL.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { urlSecrets } from "./secrets.ts";
 *
 * assert.deepEqual(urlSecrets(new URL("redis://:p%40ss@h")), ["p%40ss", "p@ss"]);
 * ```
 */
export function urlSecrets(url: URL): string[] {
  const secrets = new Set<string>();
  for (const raw of [url.password, url.searchParams.get("password") ?? ""]) {
    if (raw === "") continue;
    secrets.add(raw);
    try {
      secrets.add(decodeURIComponent(raw));
    } catch {
      // not %-encoded
    }
  }
  return [...secrets].filter((secret) => secret.length > 0)
    .sort((a, b) => b.length - a.length);
}

/**
 * `text` with every occurrence of each secret replaced by `***`.
 *
 * @param text A message that may echo a secret (a server's error, say).
 * @param secrets What to cut out, longest first (as {@linkcode urlSecrets}
 * returns them).
 * @returns The text, safe to log or show.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { scrubSecrets } from "./secrets.ts";
 *
 * assert.equal(scrubSecrets("bad password hunter2", ["hunter2"]), "bad password ***");
 * ```
 */
export function scrubSecrets(text: string, secrets: readonly string[]): string {
  let clean = text;
  for (const secret of secrets) clean = clean.replaceAll(secret, "***");
  return clean;
}
