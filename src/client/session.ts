/**
 * A room's defaults: its session (the URL fragment, or a fresh one) and
 * the broker's signaling URL (`/signal` on the page's own host).
 *
 * @module
 */

import { ALPHABET } from "./negotiation.ts";
import { freshSecret, PRIVATE } from "./private.ts";

/** A valid session: 1 to 128 characters of `[A-Za-z0-9_-]`. */
export const SESSION: RegExp = /^[\w-]{1,128}$/;

function freshSession(): string {
  // 64 symbols: `byte & 63` picks uniformly.
  return Array.from(
    crypto.getRandomValues(new Uint8Array(16)),
    (byte) => ALPHABET[byte & 63],
  ).join("");
}

/**
 * A private room's secret: the fragment's when it is a private link
 * (`#k_<secret>`), else, when `make`, a fresh one written to the fragment
 * (replacing the history entry, so no entry holds another room's secret).
 *
 * @param make Whether to make a secret when the fragment has none.
 * @returns The secret, or undefined for an open room.
 */
export function privateSecret(make?: boolean): string | undefined {
  const hash = location.hash.slice(1);
  if (PRIVATE.test(hash)) return hash.slice(2);
  if (!make) return;
  const secret = freshSecret();
  location.replace(`#k_${secret}`);
  return secret;
}

/** The URL fragment when it is a session; else a fresh one, written to it. */
export function defaultSession(): string {
  const hash = location.hash.slice(1);
  if (SESSION.test(hash)) return hash;
  return location.hash = freshSession();
}

/**
 * `/signal` on the page's own host, `wss:` under `https:`.
 *
 * @throws {Error} In a page opened from a file (`file:`), which has no
 * broker: the message, also written at the top of the page (an author who
 * opened the built file sees why nothing happens), says to run
 * `pod-broker dev`.
 */
export function defaultUrl(): string {
  if (location.protocol === "file:") {
    const why =
      "Cannot join from a file: run `pod-broker dev` in the pod's folder (or publish it) and open the URL it prints.";
    document.body?.prepend(why);
    throw new Error(why);
  }
  // A sandboxed pod's origin is opaque ("null"), but its href is real.
  const url = new URL("/signal", location.href);
  url.protocol = url.protocol === "https:" ? "wss:" : "ws:";
  return url.href;
}
