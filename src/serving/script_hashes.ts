/**
 * The CSP hash sources of a pod's inline scripts, for the strict script
 * policy (`podHeaderOptions.scriptPolicy: "hashes"`): the pod is parsed
 * with a real HTML parser (parse5, as a browser tokenizes it), and each
 * inline `<script>` that a browser would run gets `'sha256-<base64>'` of its
 * text. A {@linkcode ScriptHashCache} keeps the answers per blob digest, so
 * serving a pod does not parse it again.
 *
 * What a browser hashes is the script element's child text as parsed: the
 * document decoded (UTF-8 as served, unless a byte order mark says
 * otherwise), CR LF and lone CR turned into LF, NUL into U+FFFD, and no
 * character references decoded in HTML script text (they are in SVG
 * scripts, as the parser does). Scripts the browser does not run (a `src`
 * attribute, or a data block such as the pod's `application/pod-manifest`
 * slot or `application/json`) need no hash and get none.
 *
 * Event handler attributes (`onclick="…"`) get the hash of their value, and
 * the sources then start with `'unsafe-hashes'`, which lets a hash match a
 * handler: a pod that works under the default policy works under this one.
 *
 * @module
 */

import { encodeBase64 } from "../_util/encoding.ts";
import { sha256 } from "../_util/hash.ts";
import type { Logger } from "../_util/log.ts";
import { Lru } from "../_util/lru.ts";
import { setImmediate } from "node:timers";
import {
  decodePodText,
  PARSE_SLICE_CHARS,
  parseInSlices,
} from "./inline_scripts.ts";

/** Entries a {@linkcode ScriptHashCache} keeps by default. */
export const DEFAULT_SCRIPT_HASH_CACHE_ENTRIES = 1_024;

/**
 * The CSP hash source of one script text: `'sha256-<base64>'` of its UTF-8
 * bytes.
 *
 * @param text A script's source text.
 * @returns The hash source, quotes included.
 *
 * @example Hash a script
 * ```ts
 * import assert from "node:assert/strict";
 * import { scriptHashSource } from "./script_hashes.ts";
 *
 * assert.equal(
 *   scriptHashSource("alert(1)"),
 *   "'sha256-bhHHL3z2vDgxUt0W3dWQOrprscmda2Y5pLsLg4GF+pI='",
 * );
 * ```
 */
export function scriptHashSource(text: string): string {
  return `'sha256-${encodeBase64(sha256(new TextEncoder().encode(text)))}'`;
}

/**
 * Bytes of `script-src` hash sources a pod may need (16 KiB, about 300
 * scripts). A pod past it is served with `script-src 'none'`: its hashes
 * would make every response's header as large as the pod allows.
 */
export const MAX_SCRIPT_HASH_BYTES: number = 16 * 1024;

/**
 * The hash sources of a pod's executable inline scripts, each once, in
 * document order.
 *
 * @param blob The stored pod.
 * @returns `'sha256-…'` sources for `script-src`.
 */
export function computeScriptHashes(blob: Uint8Array): string[] {
  const hashes = new HashList(Infinity);
  const steps = parseInSlices(
    decodePodText(blob),
    Math.max(blob.length, 1),
    hashes.add,
    hashes.addHandler,
  );
  while (!steps.next().done);
  return hashes.sources;
}

/**
 * {@linkcode computeScriptHashes} without holding the event loop: the
 * parser takes {@linkcode PARSE_SLICE_CHARS} at a time and yields to other
 * work between slices (a large pod takes about a second per 10 MiB to
 * parse), and it stops as soon as the sources pass `maxBytes`.
 *
 * @param blob The stored pod.
 * @param maxBytes Bytes the sources may take, a space between each two.
 * @returns `'sha256-…'` sources for `script-src`, or null past `maxBytes`.
 */
export async function computeScriptHashesAsync(
  blob: Uint8Array,
  maxBytes: number = Infinity,
): Promise<string[] | null> {
  const hashes = new HashList(maxBytes);
  const steps = parseInSlices(
    decodePodText(blob),
    PARSE_SLICE_CHARS,
    hashes.add,
    hashes.addHandler,
  );
  while (!steps.next().done) {
    await new Promise((resolve) => setImmediate(resolve));
  }
  return hashes.over ? null : hashes.sources;
}

/** The source that lets hash sources match event handler attributes. */
const UNSAFE_HASHES = "'unsafe-hashes'";

/** Hash sources, each once, up to a number of bytes. */
class HashList {
  readonly #seen = new Set<string>();
  readonly #max: number;
  #bytes = -1;
  over = false;

  constructor(maxBytes: number) {
    this.#max = maxBytes;
  }

  get sources(): string[] {
    return [...this.#seen];
  }

  /** Adds the hash of `text`; false once the sources pass the limit. */
  add = (text: string): boolean => this.#source(scriptHashSource(text));

  /** Adds the hash of an event handler, after `'unsafe-hashes'`. */
  addHandler = (text: string): boolean =>
    this.#source(UNSAFE_HASHES) && this.add(text);

  #source(source: string): boolean {
    if (this.#seen.has(source)) return true;
    this.#seen.add(source);
    this.#bytes += source.length + 1;
    this.over = this.#bytes > this.#max;
    return !this.over;
  }
}

/**
 * What the strict script policy lists for a pod: its hash sources, or
 * `"too-long"` when they would pass {@linkcode MAX_SCRIPT_HASH_BYTES} (the
 * pod then gets `script-src 'none'`).
 */
export type ScriptHashes = readonly string[] | "too-long";

/** The pod a {@linkcode ScriptHashCache} hashes. */
export interface HashedPod {
  /** Its id, for the log. */
  id: string;
  /** Its blob's SHA-256: the cache key (it names the bytes). */
  sha256: string;
  /** Its blob's size, counted against the bytes hashed at once. */
  blobSize: number;
}

/** Options of {@linkcode ScriptHashCache}. */
export interface ScriptHashCacheOptions {
  /**
   * Pods whose hashes are kept; the least recently used go first.
   * @default {1024}
   */
  maxEntries?: number;
  /**
   * Blob bytes hashed at once; a pod that does not fit waits (one pod is
   * always let in, whatever its size).
   * @default {67108864}
   */
  maxBytesInFlight?: number;
  /** Where a pod served with `script-src 'none'` is reported. */
  logger?: Logger;
}

/**
 * A broker's bounded least-recently-used cache of its pods' script hashes,
 * keyed by the blob's SHA-256 (the record's `sha256`, the ETag value):
 * each pod is parsed once, and concurrent requests for one pod share that
 * parse. Pods are hashed side by side, a slice of each in turn, so a large
 * pod takes its share of the time and never holds another pod's first
 * view until it is done; the blob bytes being hashed at once are bounded.
 *
 * @example Hash once, then answer from the cache
 * ```ts
 * import assert from "node:assert/strict";
 * import { ScriptHashCache } from "./script_hashes.ts";
 *
 * const cache = new ScriptHashCache({ maxEntries: 2 });
 * const blob = new TextEncoder().encode("<script>go()</script>");
 * const pod = { id: "p", sha256: "digest-1", blobSize: blob.length };
 * let loads = 0;
 * const load = () => (loads++, Promise.resolve(blob));
 * const first = await cache.hashesOf(pod, load);
 * assert.deepEqual(await cache.hashesOf(pod, load), first);
 * assert.equal(loads, 1);
 * ```
 */
export class ScriptHashCache {
  readonly #entries: Lru<string, Promise<ScriptHashes | null>>;
  readonly #maxBytesInFlight: number;
  readonly #logger: Logger | undefined;
  #bytesInFlight = 0;
  readonly #waiting: { bytes: number; start: () => void }[] = [];

  /**
   * Makes an empty cache.
   *
   * @param options Its size and logger.
   * @throws {RangeError} For a size that is not a positive integer.
   */
  constructor(options: ScriptHashCacheOptions = {}) {
    const max = options.maxEntries ?? DEFAULT_SCRIPT_HASH_CACHE_ENTRIES;
    const inFlight = options.maxBytesInFlight ?? 64 * 1024 * 1024;
    for (
      const [name, value] of [["maxEntries", max], [
        "maxBytesInFlight",
        inFlight,
      ]]
    ) {
      if (!Number.isSafeInteger(value) || (value as number) < 1) {
        throw new RangeError(
          `Cannot make a script hash cache: ${name} '${value}' is not a positive integer`,
        );
      }
    }
    this.#entries = new Lru({ maxEntries: max });
    this.#maxBytesInFlight = inFlight;
    this.#logger = options.logger;
  }

  /** Pods held now (computed or being computed). */
  get size(): number {
    return this.#entries.size;
  }

  /**
   * The hash sources of `pod`, computed from `load()` on a miss. Requests
   * for a pod being computed wait for that computation. A failed or empty
   * load is not kept.
   *
   * @param pod The pod's id, blob digest and size.
   * @param load Reads the blob; null when it is gone.
   * @returns The hash sources (or `"too-long"`), or null when `load` found
   * no blob.
   */
  async hashesOf(
    pod: HashedPod,
    load: () => Promise<Uint8Array | null> | Uint8Array | null,
  ): Promise<ScriptHashes | null> {
    const held = this.#entries.get(pod.sha256);
    if (held !== undefined) return held;
    const pending = this.#compute(pod, load);
    this.#entries.set(pod.sha256, pending);
    try {
      const hashes = await pending;
      if (hashes === null) this.#forget(pod.sha256, pending);
      return hashes;
    } catch (error) {
      this.#forget(pod.sha256, pending);
      throw error;
    }
  }

  async #compute(
    pod: HashedPod,
    load: () => Promise<Uint8Array | null> | Uint8Array | null,
  ): Promise<ScriptHashes | null> {
    const bytes = Math.max(pod.blobSize, 0);
    await this.#admit(bytes);
    try {
      const blob = await load();
      if (blob === null) return null;
      const hashes = await computeScriptHashesAsync(
        blob,
        MAX_SCRIPT_HASH_BYTES,
      );
      if (hashes !== null) return Object.freeze(hashes);
      this.#logger?.(
        "warn",
        `Serving pod '${pod.id}' with script-src 'none': its inline script hashes pass ${MAX_SCRIPT_HASH_BYTES} bytes`,
        { id: pod.id, sha256: pod.sha256 },
      );
      return "too-long";
    } finally {
      this.#release(bytes);
    }
  }

  /** Waits until `bytes` fit the bytes hashed at once. */
  #admit(bytes: number): Promise<void> {
    if (this.#fits(bytes)) {
      this.#bytesInFlight += bytes;
      return Promise.resolve();
    }
    return new Promise((start) => this.#waiting.push({ bytes, start }));
  }

  #fits(bytes: number): boolean {
    return this.#bytesInFlight === 0 ||
      this.#bytesInFlight + bytes <= this.#maxBytesInFlight;
  }

  /** Frees `bytes` and lets in every waiting pod that now fits, in order. */
  #release(bytes: number): void {
    this.#bytesInFlight -= bytes;
    for (let i = 0; i < this.#waiting.length;) {
      const next = this.#waiting[i]!;
      if (!this.#fits(next.bytes)) {
        i++;
        continue;
      }
      this.#waiting.splice(i, 1);
      this.#bytesInFlight += next.bytes;
      next.start();
    }
  }

  #forget(key: string, pending: Promise<ScriptHashes | null>): void {
    if (this.#entries.get(key) === pending) this.#entries.delete(key);
  }
}
