/**
 * An origin per pod (the `podDomain` option): the pod with id `ID` lives at
 * `SCHEME://LABEL.DOMAIN[:PORT]/`, LABEL being the lowercase RFC 4648
 * base32 (no padding) of the id's 12 ASCII bytes. This module owns the
 * label, the host → id decision, the pod hosts' route table (`/` and
 * `/signal`, nothing else), the broker host's 302 and the per-pod contexts.
 *
 * @module
 */

import { isPodId, POD_ID_LENGTH } from "../_util/id.ts";
import { PodResponseCache } from "../serving/pod_cache.ts";
import {
  CLEAR_POD_STORAGE,
  podOriginHeaderOptions,
} from "../serving/pod_origin.ts";
import type { PodHeaderOptions } from "../serving/pod_headers.ts";
import { BrokerError, problem } from "./problem.ts";
import { handlePod, type PodContext } from "./routes/pod.ts";
import type { Route, RouteHandler, RouteRequest } from "./router.ts";

const BASE32 = "abcdefghijklmnopqrstuvwxyz234567";

/** Characters of a pod's label: 12 bytes of base32, unpadded. */
export const POD_LABEL_LENGTH: number = Math.ceil(POD_ID_LENGTH * 8 / 5);

/** Pod contexts kept (each holds its pod's headers, built once). */
const MAX_CONTEXTS = 1024;

/**
 * A pod domain as the option takes it: a DNS name of letters, digits and
 * hyphens, lower-cased, a trailing dot dropped, short enough that
 * `LABEL.DOMAIN` is a valid name; or null.
 *
 * @param value What the caller passed.
 * @returns The domain, or null when it is not one.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { podDomainOf } from "./pod_host.ts";
 *
 * assert.equal(podDomainOf("Pods.Example.com."), "pods.example.com");
 * assert.equal(podDomainOf("localhost"), "localhost");
 * assert.equal(podDomainOf("*.example.com"), null);
 * ```
 */
export function podDomainOf(value: unknown): string | null {
  if (typeof value !== "string") return null;
  const domain = value.toLowerCase().replace(/\.$/, "");
  const label = /^(?!-)[a-z0-9-]{1,63}(?<!-)$/;
  if (domain.length > 253 - POD_LABEL_LENGTH - 1) return null;
  return domain.split(".").every((part) => label.test(part)) ? domain : null;
}

/**
 * The DNS label of a pod: lowercase base32 of its id's bytes.
 *
 * @param id A pod id (12 ASCII characters).
 * @returns 20 characters of `[a-z2-7]`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { podIdOfLabel, podLabel } from "./pod_host.ts";
 *
 * assert.equal(podLabel("foobar"), "mzxw6ytboi");
 * assert.equal(podIdOfLabel(podLabel("AbCdEf123456")), "AbCdEf123456");
 * ```
 */
export function podLabel(id: string): string {
  let out = "";
  let bits = 0;
  let value = 0;
  for (let i = 0; i < id.length; i++) {
    value = (value << 8) | (id.charCodeAt(i) & 0xff);
    bits += 8;
    while (bits >= 5) {
      bits -= 5;
      out += BASE32[(value >>> bits) & 31];
    }
    value &= (1 << bits) - 1;
  }
  if (bits > 0) out += BASE32[(value << (5 - bits)) & 31];
  return out;
}

/**
 * The pod id a label names, or null when it names none (not 20 base32
 * characters, not the canonical encoding, or not a pod id's shape).
 *
 * @param label A DNS label, lower case.
 * @returns The id, or null.
 */
export function podIdOfLabel(label: string): string | null {
  if (label.length !== POD_LABEL_LENGTH || !/^[a-z2-7]+$/.test(label)) {
    return null;
  }
  let id = "";
  let bits = 0;
  let value = 0;
  for (const char of label) {
    value = (value << 5) | BASE32.indexOf(char);
    bits += 5;
    if (bits >= 8) {
      bits -= 8;
      id += String.fromCharCode((value >>> bits) & 0xff);
      value &= (1 << bits) - 1;
    }
  }
  // Leftover bits must be zero: one label per id.
  return value === 0 && isPodId(id) ? id : null;
}

/** The routing and URLs of pods served at their own origins. */
export class PodHosts {
  readonly #suffix: string;
  readonly #headerOptions: PodHeaderOptions;
  // One cache for every pod host: it is keyed by pod id, and each id has
  // one origin (per base URL), so the broker's memory bound holds.
  readonly #cache: PodResponseCache;
  readonly #contexts = new Map<string, PodContext>();

  /**
   * @param domain The pod domain (checked by the option).
   * @param headerOptions The broker's `podHeaderOptions`.
   * @param podCacheBytes The broker's `podCacheBytes`.
   */
  constructor(
    domain: string,
    headerOptions: PodHeaderOptions,
    podCacheBytes: number,
  ) {
    this.#suffix = `.${domain}`;
    this.#headerOptions = podOriginHeaderOptions(headerOptions);
    this.#cache = new PodResponseCache(podCacheBytes);
  }

  /**
   * Which pod host a request arrived at.
   *
   * @param origin The origin the request was sent to (`scheme://host[:port]`,
   * lower case, as `URL.origin` has it; with `trustProxy` the forwarded one).
   * @returns The pod's id; "" for a name under the pod domain that names no
   * pod; null when the host is not under the pod domain.
   */
  idOf(origin: string): string | null {
    const start = origin.indexOf("//") + 2;
    let end = origin.lastIndexOf(":");
    if (end < start || origin.includes("]", end)) end = origin.length;
    let host = origin.slice(start, end);
    if (host.endsWith(".")) host = host.slice(0, -1);
    if (!host.endsWith(this.#suffix)) return null;
    const label = host.slice(0, -this.#suffix.length);
    return label.includes(".") ? "" : podIdOfLabel(label) ?? "";
  }

  /**
   * A pod's origin: the base URL's scheme and port, the pod's host.
   *
   * @param baseUrl The broker's public base URL for the request.
   * @param id The pod id.
   * @returns `SCHEME://LABEL.DOMAIN[:PORT]`.
   */
  originOf(baseUrl: string, id: string): string {
    const url = new URL(baseUrl);
    url.hostname = `${podLabel(id)}${this.#suffix}`;
    return url.origin;
  }

  /**
   * A pod's URL, `SCHEME://LABEL.DOMAIN[:PORT]/`, for the upload envelope
   * and `/meta`'s `podUrl`.
   */
  urlOf(baseUrl: string, id: string): string {
    return `${this.originOf(baseUrl, id)}/`;
  }

  /**
   * `GET`/`HEAD /:id` on the broker host: 302 to the pod's origin (the
   * query kept); a malformed id is 404 `pod_not_found`.
   */
  redirect({ request, baseUrl, id }: RouteRequest): Response {
    if (!isPodId(id)) {
      throw new BrokerError(
        "pod_not_found",
        `Cannot find a pod with id '${id.slice(0, 64)}'`,
      );
    }
    const query = request.url.indexOf("?");
    const search = query < 0 ? "" : request.url.slice(query);
    return new Response(null, {
      status: 302,
      headers: { Location: `${this.urlOf(baseUrl, id)}${search}` },
    });
  }

  /**
   * The route table of a pod host: `/` serves the pod, `/signal` is the
   * broker's; every other path is 404. A deleted pod's 410 carries
   * `Clear-Site-Data`.
   *
   * @param brokerContext The broker's pod context for a base URL.
   * @param admit The broker's `/signal` handler.
   */
  routes(
    brokerContext: (baseUrl: string) => PodContext,
    admit: RouteHandler,
  ): Route[] {
    const serve = (input: RouteRequest): Response | Promise<Response> => {
      const context = this.#contextOf(brokerContext(input.baseUrl), input.id);
      try {
        const answer = handlePod(input, context);
        return answer instanceof Promise ? answer.catch(clearingGone) : answer;
      } catch (error) {
        return clearingGone(error);
      }
    };
    return [
      { pattern: "/", cors: false, methods: { GET: serve, HEAD: serve } },
      { pattern: "/signal", cors: false, methods: { GET: admit } },
    ];
  }

  /** The context of one pod at its origin, kept for the next request. */
  #contextOf(broker: PodContext, id: string): PodContext {
    const origin = this.originOf(broker.baseUrl, id);
    let context = this.#contexts.get(origin);
    if (context === undefined) {
      context = {
        ...broker,
        baseUrl: origin,
        signalUrl: `${origin.replace(/^http/, "ws")}/signal`,
        podHeaderOptions: this.#headerOptions,
        responseCache: this.#cache,
      };
      if (this.#contexts.size >= MAX_CONTEXTS) {
        this.#contexts.delete(this.#contexts.keys().next().value!);
      }
      this.#contexts.set(origin, context);
    }
    return context;
  }
}

/** A deleted pod's 410 with `Clear-Site-Data`; any other error rethrown. */
function clearingGone(error: unknown): Response {
  if (error instanceof BrokerError && error.code === "pod_deleted") {
    return problem(error.code, error.message, { ...CLEAR_POD_STORAGE });
  }
  throw error;
}
