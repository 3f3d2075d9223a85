/**
 * Hot pods as ready responses: a `200` for a pod is built once (headers
 * validated once, the bytes held) and each request gets a `clone()` of it,
 * which copies the validated header list instead of checking every value
 * again. In the HTTP benchmark this took a 10 KiB `GET` from about 28k to
 * about 53k responses a second on a bare `Deno.serve`.
 *
 * The cache only skips building the response: the record is still read
 * (and the deny list and tombstones checked) on every request, so a pod
 * deleted or denied stops being served at once. Entries are keyed by the
 * pod's id and its bytes (`sha256`), so a pod whose bytes change is never
 * answered with the old ones; within an entry there is one response per
 * base URL (the content policy names the signaling URL), a few at most.
 *
 * @module
 */

import { Lru } from "../_util/lru.ts";

/** Largest pod kept (larger ones are streamed from the registry). */
export const POD_CACHE_MAX_ENTRY_BYTES: number = 1024 * 1024;

/** Base URLs (Host names) one pod keeps a ready response for. */
export const POD_CACHE_BASE_URLS_PER_POD = 4;

interface Entry {
  /** Ready responses by base URL, the least recently added first. */
  responses: Map<string, Response>;
  /** Body bytes of one response. */
  bytes: number;
}

/**
 * A byte-budgeted LRU of ready `200` responses, keyed by pod id and blob
 * digest, one response per base URL. A broker owns one.
 *
 * @example Keep a pod's response, answer copies of it
 * ```ts
 * import assert from "node:assert/strict";
 * import { PodResponseCache } from "./pod_cache.ts";
 *
 * const cache = new PodResponseCache(1024);
 * const sent = cache.put("id", "digest", "http://a", new Response("hi"), 2);
 * assert.equal(await sent.text(), "hi");
 * assert.equal(await cache.get("id", "digest", "http://a")!.text(), "hi");
 * assert.equal(cache.get("id", "other-digest", "http://a"), null);
 * assert.equal(cache.get("id", "digest", "http://b"), null);
 * // A second Host name adds a response; the first one stays.
 * cache.put("id", "digest", "http://b", new Response("hi"), 2);
 * assert.equal(await cache.get("id", "digest", "http://a")!.text(), "hi");
 * ```
 */
export class PodResponseCache {
  readonly #entries: Lru<string, Entry>;
  readonly #budget: number;

  /**
   * @param budget Bytes of pods kept at once, least recently used dropped
   * first (the `podCacheBytes` option); 0 keeps none.
   */
  constructor(budget: number) {
    this.#budget = budget;
    this.#entries = new Lru({
      maxWeight: budget,
      weigh: (entry) => entry.bytes * entry.responses.size,
    });
  }

  /** A fresh copy of the cached `200` of these bytes for `baseUrl`, or null. */
  get(id: string, sha256: string, baseUrl: string): Response | null {
    const response = this.#entries.get(`${id} ${sha256}`)?.responses.get(
      baseUrl,
    );
    return response === undefined ? null : response.clone();
  }

  /**
   * Keeps `response` (a `200` with a byte body of `bytes`) for these bytes
   * and `baseUrl`, when it fits, and returns a copy to send.
   */
  put(
    id: string,
    sha256: string,
    baseUrl: string,
    response: Response,
    bytes: number,
  ): Response {
    if (bytes > POD_CACHE_MAX_ENTRY_BYTES || bytes > this.#budget) {
      return response;
    }
    const key = `${id} ${sha256}`;
    const entry = this.#entries.get(key) ?? { responses: new Map(), bytes };
    entry.responses.delete(baseUrl);
    entry.responses.set(baseUrl, response);
    if (entry.responses.size > POD_CACHE_BASE_URLS_PER_POD) {
      entry.responses.delete(entry.responses.keys().next().value!);
    }
    // Set again: its weight grows with its responses.
    this.#entries.set(key, entry);
    return response.clone();
  }
}
