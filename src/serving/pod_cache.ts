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
 * pod's id and hold the digest of their bytes (`sha256`), checked on every
 * read, so a pod whose bytes change is never answered with the old ones
 * (its new bytes replace the entry); within an entry there is one response per
 * base URL (the content policy names the signaling URL), a few at most.
 *
 * Each entry also keeps its parts (the header list and the bytes), which
 * the `node:http` adapter writes with one `writeHead` and one `end`: there,
 * a web `Response`, its clone and the stream of its body cost more per
 * request than everything else the broker does for a hot pod.
 *
 * @module
 */

import { cloneHeld, heldResponse } from "../_util/held_body.ts";
import { Lru } from "../_util/lru.ts";

/** Largest pod kept (larger ones are streamed from the registry). */
export const POD_CACHE_MAX_ENTRY_BYTES: number = 1024 * 1024;

/** Base URLs (Host names) one pod keeps a ready response for. */
export const POD_CACHE_BASE_URLS_PER_POD = 4;

/** A cached `200` as `node:http` writes it. */
export interface ReadyParts {
  /** Header names and values, flat: `[name, value, name, value, ...]`. */
  readonly head: readonly string[];
  /** The body. */
  readonly body: Uint8Array;
}

interface Ready {
  /** The response whose clones `Deno.serve` sends. */
  response: Response;
  /** The same, in parts. */
  parts: ReadyParts;
}

interface Entry {
  /** The digest of the bytes its responses carry. */
  sha256: string;
  /** Ready responses by base URL, the least recently added first. */
  responses: Map<string, Ready>;
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
 * const hi = new TextEncoder().encode("hi");
 * const sent = cache.put("id", "digest", "http://a", [["ETag", '"d"']], hi);
 * assert.equal(await sent.text(), "hi");
 * assert.equal(await cache.get("id", "digest", "http://a")!.text(), "hi");
 * assert.equal(cache.get("id", "other-digest", "http://a"), null);
 * assert.equal(cache.get("id", "digest", "http://b"), null);
 * // A second Host name adds a response; the first one stays.
 * cache.put("id", "digest", "http://b", [], hi);
 * assert.equal(await cache.get("id", "digest", "http://a")!.text(), "hi");
 * // The same 200 in parts, for node:http.
 * assert.deepEqual(cache.parts("id", "digest", "http://a")?.head, [
 *   "ETag",
 *   '"d"',
 * ]);
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
    const ready = this.#ready(id, sha256, baseUrl)?.response;
    return ready === undefined ? null : cloneHeld(ready);
  }

  /**
   * The parts (header list and bytes) of the cached `200` of these bytes
   * for `baseUrl`, or null: nothing is copied.
   */
  parts(id: string, sha256: string, baseUrl: string): ReadyParts | null {
    return this.#ready(id, sha256, baseUrl)?.parts ?? null;
  }

  #ready(id: string, sha256: string, baseUrl: string): Ready | undefined {
    const entry = this.#entries.get(id);
    return entry?.sha256 === sha256 ? entry.responses.get(baseUrl) : undefined;
  }

  /**
   * Builds the `200` of `body` with `headers` and keeps it for these bytes
   * and `baseUrl`, when it fits; returns a copy to send.
   */
  put(
    id: string,
    sha256: string,
    baseUrl: string,
    headers: readonly (readonly [string, string])[],
    body: Uint8Array<ArrayBuffer>,
  ): Response {
    const response = heldResponse(body, {
      status: 200,
      headers: headers as [string, string][],
    });
    const bytes = body.length;
    if (bytes > POD_CACHE_MAX_ENTRY_BYTES || bytes > this.#budget) {
      return response;
    }
    const kept = this.#entries.get(id);
    // New bytes of a pod replace the old ones' responses.
    const entry = kept?.sha256 === sha256
      ? kept
      : { sha256, responses: new Map(), bytes };
    entry.responses.delete(baseUrl);
    entry.responses.set(baseUrl, {
      response,
      parts: { head: headers.flat(), body },
    });
    if (entry.responses.size > POD_CACHE_BASE_URLS_PER_POD) {
      entry.responses.delete(entry.responses.keys().next().value!);
    }
    // Set again: its weight grows with its responses.
    this.#entries.set(id, entry);
    return cloneHeld(response);
  }
}
