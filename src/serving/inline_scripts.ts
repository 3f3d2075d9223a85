/**
 * Finding a pod's inline scripts as a browser would: the pod is parsed with
 * a real HTML parser (parse5, as a browser tokenizes it), in slices so that
 * a large pod never holds the event loop, and each inline `<script>` that a
 * browser would run is collected with its text as parsed (see
 * `script_hashes.ts` for what becomes of them).
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
 * import { findInlineScripts } from "./inline_scripts.ts";
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
 * How deep the scripts of framed documents (`<iframe srcdoc>`) are found:
 * a frame's document runs under the pod's policy, so its scripts need
 * hashes too. `build` nests frames 3 deep; deeper ones get none.
 */
export const MAX_SRCDOC_DEPTH = 3;

/**
 * Parses `html` in slices of `sliceChars`, yielding between slices, and
 * gives the text of each executable script to `onScript`, and the value of
 * each event handler attribute (`onclick="…"`) to `onHandler` when given,
 * until one returns false (the parse then stops): the page's in document
 * order, then those of the documents its frames hold (`<iframe srcdoc>`,
 * {@linkcode MAX_SRCDOC_DEPTH} deep), each parsed the same way.
 * parse5's tokenizer
 * takes its input in chunks, as its parser stream feeds it: a token cut by
 * a slice is finished by the next one.
 */
export function* parseInSlices(
  html: string,
  sliceChars: number,
  onScript: (text: string) => boolean,
  onHandler?: (text: string) => boolean,
): Generator<void, void> {
  if (!Number.isSafeInteger(sliceChars) || sliceChars < 1) {
    throw new RangeError(
      `Cannot parse in slices of '${sliceChars}' characters: expected a positive integer`,
    );
  }
  const documents = [{ html, depth: 0 }];
  for (const { html, depth } of documents) {
    const frames: string[] | undefined = depth < MAX_SRCDOC_DEPTH
      ? []
      : undefined;
    const going = yield* parseDocument(
      html,
      sliceChars,
      { onScript, onHandler, onFrame: frames && ((text) => frames.push(text)) },
    );
    if (!going) return;
    for (const text of frames ?? []) {
      documents.push({ html: text, depth: depth + 1 });
    }
  }
}

/** Where {@linkcode parseDocument} reports what it finds. */
interface ParseSinks {
  onScript: (text: string) => boolean;
  onHandler: ((text: string) => boolean) | undefined;
  /** Takes each `<iframe srcdoc>`'s document, when given. */
  onFrame: ((text: string) => void) | undefined;
}

/** One document of {@linkcode parseInSlices}; false once a sink said stop. */
function* parseDocument(
  html: string,
  sliceChars: number,
  { onScript, onHandler, onFrame }: ParseSinks,
): Generator<void, boolean> {
  let going = true;
  const collect = (script: Element) => {
    if (going && isExecutableInlineScript(script.attrs)) {
      going = onScript(textOf(script));
    }
  };
  const attributes = (
    tagName: string,
    attrs: readonly { name: string; value: string }[],
  ) => {
    for (const { name, value } of attrs) {
      if (going && onHandler && name.startsWith("on")) {
        going = onHandler(value);
      } else if (onFrame && name === "srcdoc" && tagName === "iframe") {
        onFrame(value);
      }
    }
  };
  const unclosed = new Set<Element>();
  const parser = new Parser<DefaultTreeAdapterMap>({
    treeAdapter: scriptCollector(collect, unclosed, attributes),
  });
  let at = 0;
  do {
    let end = Math.min(at + sliceChars, html.length);
    // Keep a surrogate pair in one slice.
    const last = html.charCodeAt(end - 1);
    if (end < html.length && last >= 0xd800 && last <= 0xdbff) end += 1;
    parser.tokenizer.write(html.slice(at, end), end === html.length);
    at = end;
    if (!going) return false;
    if (at < html.length) yield;
  } while (at < html.length);
  // A script still open at the end (in SVG, parse5 leaves it on its stack)
  // gets a hash too: one too many is harmless, one too few blocks a script.
  for (const script of unclosed) collect(script);
  return going;
}

/**
 * parse5's default tree, cut down to what script hashes need: text is kept
 * only inside script elements, and an element leaves the tree once the
 * parser closes it (pops it off its stack of open elements), after a script
 * among them has given its text to `scripts`. Only the open elements and
 * their unclosed ancestors' lists stay, so memory no longer grows with the
 * pod. The parser never reads a closed element's children back (a closed
 * script's text is final), and detaching a node from an emptied list is a
 * no-op. `attributes` sees every element's attributes.
 */
function scriptCollector(
  collect: (script: Element) => void,
  unclosed: Set<Element>,
  attributes: (
    tagName: string,
    attrs: readonly { name: string; value: string }[],
  ) => void,
): TreeAdapter<DefaultTreeAdapterMap> {
  return {
    ...defaultTreeAdapter,
    createElement(tagName, namespaceURI, attrs) {
      attributes(tagName, attrs);
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
