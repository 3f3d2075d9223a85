/**
 * Finds what an HTML page loads, for `pod-broker build`: scripts,
 * stylesheets, `<style>` elements, images, media, icons, `style` attributes,
 * and the references a pod cannot keep (frames, objects, `<base>`, preload
 * hints, a stale manifest slot).
 *
 * The page is parsed with parse5, the WHATWG parsing algorithm, so comments,
 * `<template>` contents, raw text elements and odd quoting are read as a
 * browser reads them; each reference carries its source offsets, so the
 * build splices replacements into the author's own text instead of
 * re-serializing the whole document.
 *
 * @module
 */

import { type DefaultTreeAdapterMap, parse } from "parse5";
import { JAVASCRIPT_TYPES } from "../serving/script_types.ts";

type Node = DefaultTreeAdapterMap["node"];
type Element = DefaultTreeAdapterMap["element"];

/**
 * What a reference is, and so how the build replaces it:
 * - `script`: `<script src>`; the whole element becomes an inline script;
 * - `inline-script`: the code of an inline `<script type="module">`;
 * - `stylesheet`: `<link rel=stylesheet href>`; the element becomes `<style>`;
 * - `style`: the text of a `<style>` element;
 * - `url`: an attribute holding one URL to inline (`<img src>`, `poster`,
 *   `<link rel=icon href>`, ...);
 * - `srcset`: a `srcset` attribute (several URLs);
 * - `style-attribute`: a `style` attribute with `url(...)` in it;
 * - `drop`: an element the pod is better without (a manifest slot left
 *   from an earlier signature, a preload hint of a local file);
 * - `frame`: the `src` of an `<iframe>` or `<frame>` naming a local file:
 *   another page of the app, built into the frame's `srcdoc`;
 * - `unsupported`: an attribute that loads a URL the build cannot inline
 *   (a remote `<iframe src>`, `<object data>`, `<base href>`, `<form
 *   action>`...).
 */
export type ReferenceKind =
  | "script"
  | "inline-script"
  | "stylesheet"
  | "style"
  | "url"
  | "srcset"
  | "style-attribute"
  | "drop"
  | "frame"
  | "unsupported";

/** One thing the page loads, with where it stands in the source. */
export interface HtmlReference {
  /** How the build treats it. */
  kind: ReferenceKind;
  /** The element's tag name, lower case. */
  tag: string;
  /** The attribute's name (for attribute kinds and `script`/`stylesheet`). */
  attribute?: string;
  /** The attribute's value, or the element's text for `inline-script` and `style`. */
  value: string;
  /** Offset (UTF-16 code units) where the replaced text starts. */
  start: number;
  /** Offset where the replaced text ends (exclusive). */
  end: number;
  /** Offset where the element starts (for text inserted before it). */
  elementStart: number;
  /** 1-based line of the value in the source. */
  line: number;
  /** The element's attributes (name to value), for rebuilding it. */
  attributes: Record<string, string>;
}

/** How a URL found in a page or a stylesheet relates to the pod. */
export type UrlKind = "local" | "remote" | "embedded" | "scheme";

/** `http:`, `https:` and scheme-relative (`//`, or `\\` as browsers read it). */
const REMOTE = /^(?:https?:|[\\/]{2})/i;
/** A URL with a scheme of its own. */
const SCHEME = /^[a-z][a-z0-9+.-]*:/i;
/** Schemes that load nothing from anywhere. */
const EMBEDDED_SCHEMES = /^(?:data|blob|about|javascript):/i;
/** `rel` values of links that load their `href` as an icon. */
const ICON_RELS = new Set([
  "icon",
  "apple-touch-icon",
  "apple-touch-icon-precomposed",
  "mask-icon",
]);
/** `rel` values of links that only hint at or describe a load. */
const HINT_RELS = new Set([
  "preload",
  "modulepreload",
  "prefetch",
  "prerender",
  "manifest",
  "preconnect",
  "dns-prefetch",
]);
/** Attributes that load one URL the build inlines as a data: URL, by tag. */
const INLINED: Record<string, readonly string[]> = {
  img: ["src"],
  source: ["src"],
  video: ["src", "poster"],
  audio: ["src"],
  track: ["src"],
  input: ["src"],
  image: ["href", "xlink:href"],
  feimage: ["href", "xlink:href"],
  body: ["background"],
  table: ["background"],
  td: ["background"],
  th: ["background"],
};
/** Elements whose local `src` is a page the build makes into `srcdoc`. */
const FRAMES: ReadonlySet<string> = new Set(["iframe", "frame"]);
/** Attributes that load a URL the build cannot inline, by tag. */
const NOT_INLINED: Record<string, readonly string[]> = {
  iframe: ["src"],
  frame: ["src"],
  embed: ["src"],
  object: ["data"],
  base: ["href"],
  use: ["href", "xlink:href"],
  form: ["action"],
  button: ["formaction"],
  input: ["formaction"],
  html: ["manifest"],
};
/**
 * Says what a URL from a page or stylesheet is: `remote` (`http:`,
 * `https:`, `//`), `embedded` (empty, a fragment, `data:`, `blob:`,
 * `about:`, `javascript:`: nothing to load from a file), `scheme` (any other
 * scheme) or `local` (a path, resolved against the file it appears in).
 * Tabs and newlines are ignored, as the URL parser does.
 *
 * @param value The URL as written.
 * @returns Its kind.
 *
 * @example Classify URLs
 * ```ts
 * import assert from "node:assert/strict";
 * import { classifyUrl } from "./html.ts";
 *
 * assert.equal(classifyUrl("https://cdn.example/x.js"), "remote");
 * assert.equal(classifyUrl("//cdn.example/x.js"), "remote");
 * assert.equal(classifyUrl("img/logo.png"), "local");
 * assert.equal(classifyUrl("data:image/png;base64,AA=="), "embedded");
 * ```
 */
export function classifyUrl(value: string): UrlKind {
  const url = cleanUrl(value);
  if (REMOTE.test(url)) return "remote";
  if (url === "" || url.startsWith("#") || EMBEDDED_SCHEMES.test(url)) {
    return "embedded";
  }
  return SCHEME.test(url) ? "scheme" : "local";
}

/**
 * A URL attribute's value as the URL parser sees it: leading and trailing
 * whitespace stripped, tabs and newlines removed.
 *
 * @param value The attribute's value.
 * @returns The cleaned URL.
 */
export function cleanUrl(value: string): string {
  return value.trim().replace(/[\t\n\r]/g, "");
}

/**
 * Finds every reference of an HTML page, in document order.
 *
 * @param html The page's text.
 * @returns The references, in the order they appear.
 *
 * @example Find a script and an image
 * ```ts
 * import assert from "node:assert/strict";
 * import { findReferences } from "./html.ts";
 *
 * const refs = findReferences('<script type="module" src="app.ts"></script><img src="a.png">');
 * assert.deepEqual(refs.map((ref) => [ref.kind, ref.value]), [
 *   ["script", "app.ts"],
 *   ["url", "a.png"],
 * ]);
 * ```
 */
export function findReferences(html: string): HtmlReference[] {
  const document = parse(html, { sourceCodeLocationInfo: true });
  const found: HtmlReference[] = [];
  const visit = (node: Node): void => {
    if ("tagName" in node) {
      // An element reported whole (a script, a stylesheet) is not searched
      // again for its attributes.
      if (!visitElement(node, found)) visitAttributes(node, found);
      if (node.tagName === "template") {
        visit((node as DefaultTreeAdapterMap["template"]).content);
      }
    }
    if ("childNodes" in node) node.childNodes.forEach(visit);
  };
  visit(document);
  return found.sort((a, b) => a.start - b.start);
}

/** Scripts, styles and links; returns true when the element is done. */
function visitElement(element: Element, found: HtmlReference[]): boolean {
  const location = element.sourceCodeLocation;
  if (!location) return false;
  const attributes = attributesOf(element);
  const whole = (kind: ReferenceKind, attribute: string) => {
    const at = location.attrs?.[attribute];
    found.push({
      kind,
      tag: element.tagName,
      attribute,
      value: attributes[attribute]!,
      start: location.startOffset,
      end: location.endOffset,
      elementStart: location.startOffset,
      line: at?.startLine ?? location.startLine,
      attributes,
    });
  };
  const text = () => {
    const child = element.childNodes[0];
    if (!child || !("value" in child) || !child.sourceCodeLocation) return;
    found.push({
      kind: element.tagName === "style" ? "style" : "inline-script",
      tag: element.tagName,
      value: child.value,
      start: child.sourceCodeLocation.startOffset,
      end: child.sourceCodeLocation.endOffset,
      elementStart: location.startOffset,
      line: child.sourceCodeLocation.startLine,
      attributes,
    });
  };
  if (element.namespaceURI !== "http://www.w3.org/1999/xhtml") return false;
  switch (element.tagName) {
    case "script": {
      const type = (attributes.type ?? "").trim().toLowerCase();
      if (type === "application/pod-manifest") {
        whole("drop", "type");
        return true;
      }
      if (type !== "module" && type !== "" && !JAVASCRIPT_TYPES.has(type)) {
        return true;
      }
      if (attributes.src !== undefined) whole("script", "src");
      else if (type === "module") text();
      return true;
    }
    case "style":
      text();
      return false;
    case "link": {
      const rels = (attributes.rel ?? "").toLowerCase().split(/\s+/);
      if (attributes.href === undefined) return false;
      if (rels.includes("stylesheet")) {
        whole("stylesheet", "href");
        return true;
      }
      if (rels.some((rel) => ICON_RELS.has(rel))) {
        pushAttribute(element, "href", "url", found);
        return true;
      }
      if (rels.some((rel) => HINT_RELS.has(rel))) {
        // A hint of a local file is dropped (the file is inlined or unused);
        // one of a remote URL is refused like any other remote reference.
        whole(
          classifyUrl(attributes.href) === "local" ? "drop" : "unsupported",
          "href",
        );
        return true;
      }
      return false;
    }
  }
  return false;
}

/** The URL-bearing attributes of any element. */
function visitAttributes(element: Element, found: HtmlReference[]): void {
  const tag = element.tagName.toLowerCase();
  const attributes = attributesOf(element);
  for (const name of Object.keys(attributes)) {
    if (name === "style" && /url\s*\(/i.test(attributes[name]!)) {
      pushAttribute(element, name, "style-attribute", found);
    } else if (name === "srcset" && (tag === "img" || tag === "source")) {
      pushAttribute(element, name, "srcset", found);
    } else if (INLINED[tag]?.includes(name)) {
      if (tag === "input" && attributes.type?.toLowerCase() !== "image") {
        continue;
      }
      pushAttribute(element, name, "url", found);
    } else if (NOT_INLINED[tag]?.includes(name)) {
      const kind = classifyUrl(attributes[name]!);
      if (kind === "local" && name === "src" && FRAMES.has(tag)) {
        pushAttribute(element, name, "frame", found);
      } else if (kind === "local" || kind === "remote") {
        pushAttribute(element, name, "unsupported", found);
      }
    }
  }
}

function pushAttribute(
  element: Element,
  name: string,
  kind: ReferenceKind,
  found: HtmlReference[],
): void {
  const attributes = attributesOf(element);
  const at = element.sourceCodeLocation?.attrs?.[name];
  if (!at) return;
  found.push({
    kind,
    tag: element.tagName,
    attribute: name,
    value: attributes[name]!,
    start: at.startOffset,
    end: at.endOffset,
    elementStart: element.sourceCodeLocation!.startOffset,
    line: at.startLine,
    attributes,
  });
}

/** Name to value; a prefixed (SVG, XLink) attribute keeps its prefix. */
function attributesOf(element: Element): Record<string, string> {
  const attributes: Record<string, string> = {};
  for (const attr of element.attrs) {
    const name = attr.prefix ? `${attr.prefix}:${attr.name}` : attr.name;
    attributes[name] = attr.value;
  }
  return attributes;
}
