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
  const steps = parseInSlices(html, sliceChars);
  let step = steps.next();
  while (!step.done) step = steps.next();
  return step.value;
}

/**
 * {@linkcode findInlineScripts} without holding the event loop: the parser
 * takes {@linkcode PARSE_SLICE_CHARS} at a time and yields to other work
 * between slices (a large pod takes about a second per 10 MiB to parse).
 *
 * @param html The document text.
 * @returns The source text of each executable inline script.
 */
export async function findInlineScriptsAsync(html: string): Promise<string[]> {
  const steps = parseInSlices(html, PARSE_SLICE_CHARS);
  let step = steps.next();
  while (!step.done) {
    await new Promise((resolve) => setTimeout(resolve, 0));
    step = steps.next();
  }
  return step.value;
}

/**
 * Parses `html` in slices of `sliceChars`, yielding between slices, and
 * returns the texts of the executable scripts. parse5's tokenizer takes its
 * input in chunks, as its parser stream feeds it: a token cut by a slice is
 * finished by the next one.
 */
function* parseInSlices(
  html: string,
  sliceChars: number,
): Generator<void, string[]> {
  if (!Number.isSafeInteger(sliceChars) || sliceChars < 1) {
    throw new RangeError(
      `Cannot parse in slices of '${sliceChars}' characters: expected a positive integer`,
    );
  }
  const scripts: string[] = [];
  const unclosed = new Set<Element>();
  const parser = new Parser<DefaultTreeAdapterMap>({
    treeAdapter: scriptCollector(scripts, unclosed),
  });
  let at = 0;
  do {
    let end = Math.min(at + sliceChars, html.length);
    // Keep a surrogate pair in one slice.
    const last = html.charCodeAt(end - 1);
    if (end < html.length && last >= 0xd800 && last <= 0xdbff) end += 1;
    parser.tokenizer.write(html.slice(at, end), end === html.length);
    at = end;
    if (at < html.length) yield;
  } while (at < html.length);
  // A script still open at the end (in SVG, parse5 leaves it on its stack)
  // gets a hash too: one too many is harmless, one too few blocks a script.
  for (const script of unclosed) collect(scripts, script);
  return scripts;
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
  scripts: string[],
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
      if (unclosed.delete(element)) collect(scripts, element);
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

function collect(scripts: string[], script: Element): void {
  if (isExecutableInlineScript(script.attrs)) scripts.push(textOf(script));
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
 * The hash sources of a pod's executable inline scripts, each once, in
 * document order.
 *
 * @param blob The stored pod.
 * @returns `'sha256-…'` sources for `script-src`.
 */
export function computeScriptHashes(blob: Uint8Array): string[] {
  return unique(findInlineScripts(decodePodText(blob)).map(scriptHashSource));
}

/**
 * {@linkcode computeScriptHashes} without holding the event loop (see
 * {@linkcode findInlineScriptsAsync}).
 *
 * @param blob The stored pod.
 * @returns `'sha256-…'` sources for `script-src`.
 */
export async function computeScriptHashesAsync(
  blob: Uint8Array,
): Promise<string[]> {
  const scripts = await findInlineScriptsAsync(decodePodText(blob));
  return unique(scripts.map(scriptHashSource));
}

function unique(values: string[]): string[] {
  return [...new Set(values)];
}

/** Options of {@linkcode ScriptHashCache}. */
export interface ScriptHashCacheOptions {
  /**
   * Pods whose hashes are kept; the least recently used go first.
   * @default {1024}
   */
  maxEntries?: number;
}

/**
 * A bounded least-recently-used cache of {@linkcode computeScriptHashes},
 * keyed by the blob's SHA-256 (the record's `sha256`, the ETag value). The
 * key names the bytes, so one cache may serve every broker of a process;
 * concurrent requests for one pod share one parse.
 *
 * @example Hash once, then answer from the cache
 * ```ts
 * import assert from "node:assert/strict";
 * import { ScriptHashCache } from "./script_hashes.ts";
 *
 * const cache = new ScriptHashCache({ maxEntries: 2 });
 * const blob = new TextEncoder().encode("<script>go()</script>");
 * let loads = 0;
 * const load = () => (loads++, Promise.resolve(blob));
 * const first = await cache.hashesOf("digest-1", load);
 * assert.deepEqual(await cache.hashesOf("digest-1", load), first);
 * assert.equal(loads, 1);
 * ```
 */
export class ScriptHashCache {
  #max: number;
  #entries = new Map<string, Promise<readonly string[] | null>>();
  #queue: Promise<void> = Promise.resolve();

  /**
   * Makes an empty cache.
   *
   * @param options Its size.
   * @throws {RangeError} For a size that is not a positive integer.
   */
  constructor(options: ScriptHashCacheOptions = {}) {
    const max = options.maxEntries ?? DEFAULT_SCRIPT_HASH_CACHE_ENTRIES;
    if (!Number.isSafeInteger(max) || max < 1) {
      throw new RangeError(
        `Cannot make a script hash cache: maxEntries '${max}' is not a positive integer`,
      );
    }
    this.#max = max;
  }

  /** Pods held now (computed or being computed). */
  get size(): number {
    return this.#entries.size;
  }

  /**
   * The hash sources of the pod whose blob digest is `key`, computed from
   * `load()` on a miss. Requests for a pod being computed wait for that
   * computation; pods are parsed one at a time, each without holding the
   * event loop, so memory stays near one pod's tree. A failed or empty load
   * is not kept.
   *
   * @param key The blob's SHA-256 (any string that names the bytes).
   * @param load Reads the blob; null when it is gone.
   * @returns The hash sources, or null when `load` found no blob.
   */
  async hashesOf(
    key: string,
    load: () => Promise<Uint8Array | null> | Uint8Array | null,
  ): Promise<readonly string[] | null> {
    const held = this.#entries.get(key);
    if (held !== undefined) {
      // Refresh its place: a Map iterates in insertion order.
      this.#entries.delete(key);
      this.#entries.set(key, held);
      return held;
    }
    const pending = this.#compute(load);
    this.#entries.set(key, pending);
    if (this.#entries.size > this.#max) {
      this.#entries.delete(this.#entries.keys().next().value!);
    }
    try {
      const hashes = await pending;
      if (hashes === null) this.#forget(key, pending);
      return hashes;
    } catch (error) {
      this.#forget(key, pending);
      throw error;
    }
  }

  /** Forgets every entry. */
  clear(): void {
    this.#entries.clear();
  }

  #compute(
    load: () => Promise<Uint8Array | null> | Uint8Array | null,
  ): Promise<readonly string[] | null> {
    const run = this.#queue.then(async () => {
      const blob = await load();
      if (blob === null) return null;
      return Object.freeze(await computeScriptHashesAsync(blob));
    });
    this.#queue = run.then(() => {}, () => {});
    return run;
  }

  #forget(key: string, pending: Promise<readonly string[] | null>): void {
    if (this.#entries.get(key) === pending) this.#entries.delete(key);
  }
}
