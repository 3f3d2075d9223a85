/**
 * The origin and pathname of a request's URL, without a full URL parse for
 * the common case. A path of only letters, digits, `-`, `_` and `/` (every
 * pod URL) is the same before and after WHATWG URL parsing, so it is cut
 * out of the string; the origin is parsed once per distinct
 * `scheme://host` and reused while it repeats. Anything else (dots,
 * percent-escapes, backslashes) goes through `new URL`, which normalizes.
 * Also the checks on the authority (`Host`, a trusted `X-Forwarded-Host`)
 * and the public base URL a request is answered with.
 *
 * @module
 */

import type { ResolvedOptions } from "../config/options.ts";
import { lastListValue } from "../_util/text.ts";
import { BrokerError } from "./problem.ts";

/**
 * What the broker reads of a request's headers: a web `Request` is one;
 * so is the `node:http` adapter's view of an `IncomingMessage`.
 */
export interface HeaderSource {
  /** The request's headers. */
  readonly headers: {
    /** A header's value (repeated ones joined with ", "), or null. */
    get(name: string): string | null;
  };
}

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

/**
 * RFC 3986 `host [ ":" port ]`: an IP literal (`[` IPv6 `]`), or a
 * registered name or IPv4 address made of unreserved characters,
 * percent-escapes and sub-delimiters, then an optional port of digits.
 */
const HOST_PORT =
  /^(?:\[[0-9A-Fa-f:.]+\]|(?:[A-Za-z0-9\-._~!$&'()*+,;=]|%[0-9A-Fa-f]{2})+)(?::[0-9]{0,5})?$/;

let lastValidHost: string | undefined;

/**
 * Whether a `Host` (or `X-Forwarded-Host`) value is `host[:port]` per
 * RFC 3986 that also makes a valid URL origin (a port up to 65535, a name
 * whose escapes decode to a valid one). Anything else, such as `h/pods?`,
 * `a:99999`, `x@y` or an empty value, would change or break the URL the
 * broker routes on and writes into `Location`.
 *
 * @param value The header's value.
 * @returns Whether it is a valid authority without user information.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { isValidHost } from "./request_url.ts";
 *
 * assert.ok(isValidHost("pods.example:8080"));
 * assert.ok(isValidHost("[::1]:80"));
 * assert.ok(!isValidHost("h/pods?"));
 * assert.ok(!isValidHost("a:99999"));
 * assert.ok(!isValidHost(""));
 * ```
 */
export function isValidHost(value: string): boolean {
  // One Host repeats across requests: checked once while it does.
  if (value === lastValidHost) return true;
  if (!HOST_PORT.test(value) || !URL.canParse(`http://${value}/`)) {
    return false;
  }
  lastValidHost = value;
  return true;
}

/**
 * The origin and path a request is routed on, once its `Host` is known to
 * be `host[:port]`: a `Host` such as `h/pods?` would otherwise move the
 * path (Deno builds `request.url` from it verbatim), and one such as
 * `a:99999` makes no URL at all.
 *
 * @throws {BrokerError} `host_invalid`.
 */
export function targetOf(request: Request): { origin: string; path: string } {
  const host = request.headers.get("Host");
  if (host !== null && !isValidHost(host)) throw hostInvalid("Host");
  try {
    return requestTarget(request.url);
  } catch {
    // The path is the runtime's own: what failed is the authority (an
    // absolute-form request target's).
    throw hostInvalid("request target's host");
  }
}

/**
 * The public base URL for `request`: the `baseUrl` option, else the
 * request's own origin (`X-Forwarded-*` honoured only with `trustProxy`,
 * each list's last value: the one the nearest proxy appended).
 *
 * @throws {BrokerError} `host_invalid` for a trusted `X-Forwarded-Host`
 * that is not `host[:port]`.
 */
export function baseUrlOf(
  request: HeaderSource,
  origin: string,
  options: Pick<ResolvedOptions, "baseUrl" | "trustProxy">,
): string {
  if (options.baseUrl !== null) return options.baseUrl;
  if (!options.trustProxy) return origin;
  const proto = lastListValue(request.headers.get("X-Forwarded-Proto"));
  const host = lastListValue(request.headers.get("X-Forwarded-Host"));
  if (host !== undefined && !isValidHost(host)) {
    throw hostInvalid("X-Forwarded-Host");
  }
  const [ownScheme, ownHost] = origin.split("://") as [string, string];
  const scheme = proto === "http" || proto === "https" ? proto : ownScheme;
  return new URL(`${scheme}://${host ?? ownHost}`).origin;
}

/** `host_invalid`, naming what was not `host[:port]`. */
export function hostInvalid(what: string): BrokerError {
  return new BrokerError(
    "host_invalid",
    `Cannot route the request: its ${what} is not host[:port]`,
  );
}
