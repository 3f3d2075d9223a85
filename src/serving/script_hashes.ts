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
 * @module
 */

import {
  defaultTreeAdapter,
  type DefaultTreeAdapterMap,
  type DefaultTreeAdapterTypes,
  Parser,
  type TreeAdapter,
} from "parse5";
import { encodeBase64 } from "../_util/encoding.ts";
import { sha256 } from "../_util/hash.ts";
import type { Logger } from "../_util/log.ts";
import { Lru } from "../_util/lru.ts";
import { setImmediate } from "node:timers";
import { JAVASCRIPT_TYPES } from "./script_types.ts";

type Element = DefaultTreeAdapterTypes.Element;

/**
 * Non-JavaScript script types a browser still treats as inline script,
 * checked against `script-src` (module scripts, import maps, speculation
 * rules).
 */
const OTHER_SCRIPT_TYPES: ReadonlySet<string> = new Set([
  "module",
  "importmap",
  "speculationrules",
]);

/** Entries a {@linkcode ScriptHashCache} keeps by default. */
export const DEFAULT_SCRIPT_HASH_CACHE_ENTRIES = 1_024;

/**
 * Decodes a served pod as a browser does: UTF-8 (the broker serves
 * `charset=utf-8`) unless the bytes start with a byte order mark, which
 * wins over the header; malformed bytes become U+FFFD.
 *
 * @param blob The stored bytes.
 * @returns The document text, without its byte order mark.
 */
export function decodePodText(blob: Uint8Array): string {
  let label = "utf-8";
  if (blob[0] === 0xfe && blob[1] === 0xff) label = "utf-16be";
  else if (blob[0] === 0xff && blob[1] === 0xfe) label = "utf-16le";
  return new TextDecoder(label).decode(blob);
}

/**
 * Whether a browser runs the inline text of a script element with these
 * attributes (no `src`; a JavaScript type, `module`, `importmap` or
 * `speculationrules`).
 *
 * @param attrs The element's attributes.
 * @returns True when the text runs, so it needs a hash.
 */
export function isExecutableInlineScript(
  attrs: readonly { name: string; value: string }[],
): boolean {
  const attr = (name: string) =>
    attrs.find((a) => a.name === name)?.value ?? null;
  if (attr("src") !== null) return false;
  const type = attr("type");
  const language = attr("language");
  let typeString: string;
  if (type !== null) typeString = type;
  else if (language !== null && language !== "") {
    typeString = `text/${language}`;
  } else typeString = "";
  typeString = typeString.replace(/^[\t\n\f\r ]+|[\t\n\f\r ]+$/g, "")
    .toLowerCase();
  return typeString === "" || JAVASCRIPT_TYPES.has(typeString) ||
    OTHER_SCRIPT_TYPES.has(typeString);
}

/** Characters parsed between two yields of the asynchronous parse. */
export const PARSE_SLICE_CHARS = 32_768;

/**
 * The texts of the inline scripts a browser would run, in document order
 * (scripts inside `<template>` and SVG included).
 *
 * @param html The document text.
 * @returns The source text of each executable inline script.
 *
 * @example Find the scripts that run
 * ```ts
 * import assert from "node:assert/strict";
 * import { findInlineScripts } from "./script_hashes.ts";
 *
 * const html = '<script type="application/json">{}</script><script>go()\r\n</script>';
 * assert.deepEqual(findInlineScripts(html), ["go()\n"]);
 * ```
 */
export function findInlineScripts(html: string): string[] {
  return findInlineScriptsInSlices(html, Math.max(html.length, 1));
}

/**
 * {@linkcode findInlineScripts}, with the parser fed `sliceChars` at a
 * time (the result is the same for any slice size; tests check it).
 *
 * @param html The document text.
 * @param sliceChars Characters per slice.
 * @returns The source text of each executable inline script.
 */
export function findInlineScriptsInSlices(
  html: string,
  sliceChars: number,
): string[] {
  const scripts: string[] = [];
  const steps = parseInSlices(html, sliceChars, (text) => {
    scripts.push(text);
    return true;
  });
  while (!steps.next().done);
  return scripts;
}

/**
 * Parses `html` in slices of `sliceChars`, yielding between slices, and
 * gives the text of each executable script to `onScript`, in document
 * order, until it returns false (the parse then stops). parse5's tokenizer
 * takes its input in chunks, as its parser stream feeds it: a token cut by
 * a slice is finished by the next one.
 */
function* parseInSlices(
  html: string,
  sliceChars: number,
  onScript: (text: string) => boolean,
): Generator<void, void> {
  if (!Number.isSafeInteger(sliceChars) || sliceChars < 1) {
    throw new RangeError(
      `Cannot parse in slices of '${sliceChars}' characters: expected a positive integer`,
    );
  }
  let going = true;
  const collect = (script: Element) => {
    if (going && isExecutableInlineScript(script.attrs)) {
      going = onScript(textOf(script));
    }
  };
  const unclosed = new Set<Element>();
  const parser = new Parser<DefaultTreeAdapterMap>({
    treeAdapter: scriptCollector(collect, unclosed),
  });
  let at = 0;
  do {
    let end = Math.min(at + sliceChars, html.length);
    // Keep a surrogate pair in one slice.
    const last = html.charCodeAt(end - 1);
    if (end < html.length && last >= 0xd800 && last <= 0xdbff) end += 1;
    parser.tokenizer.write(html.slice(at, end), end === html.length);
    at = end;
    if (!going) return;
    if (at < html.length) yield;
  } while (at < html.length);
  // A script still open at the end (in SVG, parse5 leaves it on its stack)
  // gets a hash too: one too many is harmless, one too few blocks a script.
  for (const script of unclosed) collect(script);
}

/**
 * parse5's default tree, cut down to what script hashes need: text is kept
 * only inside script elements, and an element leaves the tree once the
 * parser closes it (pops it off its stack of open elements), after a script
 * among them has given its text to `scripts`. Only the open elements and
 * their unclosed ancestors' lists stay, so memory no longer grows with the
 * pod. The parser never reads a closed element's children back (a closed
 * script's text is final), and detaching a node from an emptied list is a
 * no-op.
 */
function scriptCollector(
  collect: (script: Element) => void,
  unclosed: Set<Element>,
): TreeAdapter<DefaultTreeAdapterMap> {
  return {
    ...defaultTreeAdapter,
    createElement(tagName, namespaceURI, attrs) {
      const element = defaultTreeAdapter.createElement(
        tagName,
        namespaceURI,
        attrs,
      );
      if (tagName === "script") unclosed.add(element);
      return element;
    },
    insertText(parent, text) {
      if (isScript(parent)) defaultTreeAdapter.insertText(parent, text);
    },
    insertTextBefore(parent, text, reference) {
      if (isScript(parent)) {
        defaultTreeAdapter.insertTextBefore(parent, text, reference);
      }
    },
    createCommentNode() {
      return defaultTreeAdapter.createCommentNode("");
    },
    onItemPop(element) {
      if (unclosed.delete(element)) collect(element);
      element.childNodes = [];
      if ("content" in element) {
        (element as DefaultTreeAdapterTypes.Template).content.childNodes = [];
      }
      // The element just closed is nearly always its parent's last child.
      const siblings = element.parentNode?.childNodes;
      if (siblings !== undefined && siblings.at(-1) === element) {
        siblings.pop();
        element.parentNode = null;
      }
    },
  };
}

function isScript(node: DefaultTreeAdapterTypes.ParentNode): boolean {
  return "tagName" in node && node.tagName === "script";
}

function textOf(element: Element): string {
  let text = "";
  for (const child of element.childNodes) {
    if (child.nodeName === "#text") text += (child as { value: string }).value;
  }
  return text;
}

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
  );
  while (!steps.next().done) {
    await new Promise((resolve) => setImmediate(resolve));
  }
  return hashes.over ? null : hashes.sources;
}

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
  add = (text: string): boolean => {
    const source = scriptHashSource(text);
    if (this.#seen.has(source)) return true;
    this.#seen.add(source);
    this.#bytes += source.length + 1;
    this.over = this.#bytes > this.#max;
    return !this.over;
  };
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
