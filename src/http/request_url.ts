/**
 * The origin and pathname of a request's URL, without a full URL parse for
 * the common case. A path of only letters, digits, `-`, `_` and `/` (every
 * pod URL) is the same before and after WHATWG URL parsing, so it is cut
 * out of the string; the origin is parsed once per distinct
 * `scheme://host` and reused while it repeats. Anything else (dots,
 * percent-escapes, backslashes) goes through `new URL`, which normalizes.
 *
 * @module
 */

/** The parts of a request URL the broker routes on. */
export interface RequestTarget {
  /** `scheme://host[:port]`, normalized as `URL.origin` is. */
  origin: string;
  /** The pathname, as `URL.pathname` is. */
  path: string;
}

const PLAIN_PATH = /^\/[A-Za-z0-9_/-]*$/;

let lastPrefix = "";
let lastOrigin = "";

/**
 * Splits an absolute `http:` or `https:` URL (a `Request`'s `url`) into
 * its origin and pathname, as `new URL(href)` would.
 *
 * @param href The request's URL.
 * @returns Its origin and pathname.
 * @throws {TypeError} When `href` is not a valid URL.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { requestTarget } from "./request_url.ts";
 *
 * assert.deepEqual(requestTarget("http://EXAMPLE.com:80/AbCd1234wxyz?x=1"), {
 *   origin: "http://example.com",
 *   path: "/AbCd1234wxyz",
 * });
 * assert.equal(requestTarget("http://a.test/x/../pods").path, "/pods");
 * ```
 */
export function requestTarget(href: string): RequestTarget {
  const authority = href.indexOf("//");
  const slash = authority < 0 ? -1 : href.indexOf("/", authority + 2);
  if (slash > 0) {
    let end = href.length;
    for (let i = slash; i < href.length; i++) {
      const c = href.charCodeAt(i);
      if (c === 0x3f || c === 0x23) { // ? or #
        end = i;
        break;
      }
    }
    const path = href.slice(slash, end);
    if (PLAIN_PATH.test(path)) {
      const prefix = href.slice(0, slash);
      if (prefix !== lastPrefix) {
        lastOrigin = new URL(prefix).origin;
        lastPrefix = prefix;
      }
      return { origin: lastOrigin, path };
    }
  }
  const url = new URL(href);
  return { origin: url.origin, path: url.pathname };
}
