/**
 * The pieces `pod-broker build` writes into a page: data: URLs, rewritten
 * `srcset` and `style` attributes, inline `<script>` and `<style>` elements
 * whose text cannot end them early, and the splicing of all of it into the
 * author's HTML.
 *
 * @module
 */

import { extname } from "node:path";
import { encodeBase64 } from "../_util/encoding.ts";

/** Media types of the files the build inlines as data: URLs, by extension. */
export const MEDIA_TYPES: Readonly<Record<string, string>> = {
  ".apng": "image/apng",
  ".avif": "image/avif",
  ".bmp": "image/bmp",
  ".cur": "image/x-icon",
  ".gif": "image/gif",
  ".ico": "image/x-icon",
  ".jpeg": "image/jpeg",
  ".jpg": "image/jpeg",
  ".png": "image/png",
  ".svg": "image/svg+xml",
  ".webp": "image/webp",
  ".otf": "font/otf",
  ".ttf": "font/ttf",
  ".woff": "font/woff",
  ".woff2": "font/woff2",
  ".aac": "audio/aac",
  ".flac": "audio/flac",
  ".m4a": "audio/mp4",
  ".mp3": "audio/mpeg",
  ".oga": "audio/ogg",
  ".opus": "audio/ogg",
  ".wav": "audio/wav",
  ".m4v": "video/mp4",
  ".mp4": "video/mp4",
  ".ogg": "audio/ogg",
  ".ogv": "video/ogg",
  ".webm": "video/webm",
  ".vtt": "text/vtt",
  ".wasm": "application/wasm",
};

/** A replacement of `source.slice(start, end)`. */
export interface Edit {
  /** Offset where the replaced text starts. */
  start: number;
  /** Offset where it ends (exclusive). */
  end: number;
  /** The new text. */
  text: string;
}

/**
 * The media type of a file, from its extension.
 *
 * @param path The file's path.
 * @returns The media type, or `undefined` for an extension the build does
 * not inline.
 *
 * @example A PNG
 * ```ts
 * import assert from "node:assert/strict";
 * import { mediaTypeOf } from "./inline.ts";
 *
 * assert.equal(mediaTypeOf("img/Logo.PNG"), "image/png");
 * assert.equal(mediaTypeOf("notes.doc"), undefined);
 * ```
 */
export function mediaTypeOf(path: string): string | undefined {
  return MEDIA_TYPES[extname(path).toLowerCase()];
}

/**
 * A base64 data: URL (base64, so it needs no escaping in an attribute or a
 * stylesheet).
 *
 * @param bytes The content.
 * @param mediaType Its media type.
 * @returns The URL.
 *
 * @example Two bytes
 * ```ts
 * import assert from "node:assert/strict";
 * import { dataUrl } from "./inline.ts";
 *
 * assert.equal(dataUrl(new Uint8Array([1, 2]), "image/png"), "data:image/png;base64,AQI=");
 * ```
 */
export function dataUrl(bytes: Uint8Array, mediaType: string): string {
  return `data:${mediaType};base64,${encodeBase64(bytes)}`;
}

/** One image candidate of a `srcset`. */
export interface SrcsetCandidate {
  /** The URL as written. */
  url: string;
  /** Its descriptor (`2x`, `480w`), or `""`. */
  descriptor: string;
}

/**
 * Splits a `srcset` into its candidates, as the HTML standard's parser does
 * (a URL may contain commas, as data: URLs do; descriptors follow it).
 *
 * @param value The attribute's value.
 * @returns The candidates.
 *
 * @example Two candidates
 * ```ts
 * import assert from "node:assert/strict";
 * import { parseSrcset } from "./inline.ts";
 *
 * assert.deepEqual(parseSrcset("a.png, b.png 2x"), [
 *   { url: "a.png", descriptor: "" },
 *   { url: "b.png", descriptor: "2x" },
 * ]);
 * ```
 */
export function parseSrcset(value: string): SrcsetCandidate[] {
  const candidates: SrcsetCandidate[] = [];
  let at = 0;
  while (at < value.length) {
    while (at < value.length && /[\s,]/.test(value[at]!)) at++;
    if (at >= value.length) break;
    let end = at;
    while (end < value.length && !/\s/.test(value[end]!)) end++;
    let url = value.slice(at, end);
    at = end;
    let descriptor = "";
    if (url.endsWith(",")) {
      url = url.replace(/,+$/, "");
    } else {
      // Descriptors run to the next comma outside parentheses.
      let depth = 0;
      const from = at;
      while (at < value.length && (value[at] !== "," || depth > 0)) {
        if (value[at] === "(") depth++;
        if (value[at] === ")") depth = Math.max(0, depth - 1);
        at++;
      }
      descriptor = value.slice(from, at).trim();
      at++;
    }
    candidates.push({ url, descriptor });
  }
  return candidates;
}

/**
 * Writes candidates back as a `srcset` value.
 *
 * @param candidates The candidates.
 * @returns The value.
 */
export function formatSrcset(candidates: SrcsetCandidate[]): string {
  return candidates.map(({ url, descriptor }) =>
    descriptor ? `${url} ${descriptor}` : url
  ).join(", ");
}

/** `url(...)` in CSS: double-quoted, single-quoted or bare. */
const CSS_URL = /url\(\s*(?:"([^"]*)"|'([^']*)'|([^)\s'"]*))\s*\)/gi;

/** A `url(...)` found in a `style` attribute. */
export interface CssUrl {
  /** The URL as written (without quotes). */
  url: string;
  /** How many newlines precede it in the attribute's value. */
  lineOffset: number;
}

/**
 * The URLs of the `url(...)` functions in a `style` attribute.
 *
 * @param style The attribute's value.
 * @returns The URLs, in order.
 *
 * @example One background
 * ```ts
 * import assert from "node:assert/strict";
 * import { findCssUrls } from "./inline.ts";
 *
 * assert.deepEqual(findCssUrls("background: url('a.png')"), [{ url: "a.png", lineOffset: 0 }]);
 * ```
 */
export function findCssUrls(style: string): CssUrl[] {
  return [...style.matchAll(CSS_URL)].map((match) => ({
    url: match[1] ?? match[2] ?? match[3] ?? "",
    lineOffset: style.slice(0, match.index).split("\n").length - 1,
  }));
}

/**
 * Replaces the URLs of the `url(...)` functions in a `style` attribute.
 *
 * @param style The attribute's value.
 * @param replace The new URL for each URL (or the same to keep it).
 * @returns The new value.
 */
export function replaceCssUrls(
  style: string,
  replace: (url: string) => string,
): string {
  return style.replace(CSS_URL, (whole, double, single, bare) => {
    const url = double ?? single ?? bare ?? "";
    const replaced = replace(url);
    return replaced === url ? whole : `url('${replaced}')`;
  });
}

/**
 * Makes code safe inside an HTML `<script>` element: no `</script` can end
 * it early and no `<!--` can put the tokenizer in its "escaped" states,
 * where a later `<script` would swallow the real end tag. Each `<` of those
 * becomes `\x3C`, which means `<` in every place the bundler leaves such
 * text (strings, templates, regular expressions, comments; it already
 * spaces them apart in code). A `<` already escaped by a backslash loses
 * that backslash, so the escape is not doubled.
 *
 * @param code Bundled JavaScript.
 * @returns The code, safe to inline.
 *
 * @example A string with an end tag and a comment opener
 * ```ts
 * import assert from "node:assert/strict";
 * import { escapeInlineScript } from "./inline.ts";
 *
 * assert.equal(escapeInlineScript('x="</script><!--"'), 'x="\\x3C/script>\\x3C!--"');
 * ```
 */
export function escapeInlineScript(code: string): string {
  return code.replace(
    /(\\*)<(?=!--|\/script)/gi,
    (_, slashes: string) =>
      `${slashes.length % 2 ? slashes.slice(0, -1) : slashes}\\x3C`,
  );
}

/**
 * Makes CSS safe inside an HTML `<style>` element: `</style` becomes
 * `<\/style` (a CSS escape of `/`), so it cannot end the element early.
 *
 * @param css Bundled CSS.
 * @returns The CSS, safe to inline.
 */
export function escapeInlineStyle(css: string): string {
  return css.replace(/<\/(?=style)/gi, "<\\/");
}

/**
 * Escapes an attribute value for a double-quoted attribute.
 *
 * @param value The value.
 * @returns The escaped value.
 */
export function escapeAttribute(value: string): string {
  return value.replaceAll("&", "&amp;").replaceAll('"', "&quot;");
}

/**
 * Writes an attribute: `name="value"`, or `name` alone when empty.
 *
 * @param name The attribute's name.
 * @param value Its value.
 * @returns The attribute's source text.
 */
export function formatAttribute(name: string, value: string): string {
  return value === "" ? name : `${name}="${escapeAttribute(value)}"`;
}

/** Attributes of `<script src>` that mean nothing on an inline script. */
const SCRIPT_DROPPED = new Set([
  "src",
  "integrity",
  "crossorigin",
  "referrerpolicy",
  "fetchpriority",
  "charset",
  "defer",
]);
/** Attributes of `<link rel=stylesheet>` that `<style>` does not take. */
const LINK_DROPPED = new Set([
  "rel",
  "href",
  "type",
  "integrity",
  "crossorigin",
  "referrerpolicy",
  "fetchpriority",
  "as",
  "hreflang",
  "sizes",
  "charset",
  "disabled",
  "imagesrcset",
  "imagesizes",
]);

/**
 * An inline `<script>` element standing for `<script src>`: the other
 * attributes are kept (`type="module"` for a module), the code escaped.
 *
 * @param code The bundled code.
 * @param attributes The original element's attributes.
 * @returns The element's source text.
 */
export function scriptElement(
  code: string,
  attributes: Record<string, string>,
): string {
  const kept = Object.entries(attributes)
    .filter(([name]) => !SCRIPT_DROPPED.has(name))
    .map(([name, value]) => ` ${formatAttribute(name, value)}`)
    .join("");
  return `<script${kept}>${escapeInlineScript(code)}</script>`;
}

/**
 * A `<style>` element standing for `<link rel=stylesheet>` (its `media`,
 * `title` and other attributes kept).
 *
 * @param css The bundled CSS.
 * @param attributes The link's attributes.
 * @returns The element's source text.
 */
export function styleElement(
  css: string,
  attributes: Record<string, string>,
): string {
  const kept = Object.entries(attributes)
    .filter(([name]) => !LINK_DROPPED.has(name))
    .map(([name, value]) => ` ${formatAttribute(name, value)}`)
    .join("");
  return `<style${kept}>${escapeInlineStyle(css)}</style>`;
}

/**
 * Applies non-overlapping edits to a text.
 *
 * @param text The original text.
 * @param edits The edits, in any order.
 * @returns The edited text.
 * @throws {RangeError} When two edits overlap.
 *
 * @example Replace two words
 * ```ts
 * import assert from "node:assert/strict";
 * import { applyEdits } from "./inline.ts";
 *
 * assert.equal(
 *   applyEdits("one two three", [{ start: 8, end: 13, text: "3" }, { start: 0, end: 3, text: "1" }]),
 *   "1 two 3",
 * );
 * ```
 */
export function applyEdits(text: string, edits: Edit[]): string {
  const sorted = [...edits].sort((a, b) => a.start - b.start);
  let out = "";
  let at = 0;
  for (const edit of sorted) {
    if (edit.start < at) {
      throw new RangeError(
        `Cannot apply edits: ${edit.start}-${edit.end} overlaps an earlier one`,
      );
    }
    out += text.slice(at, edit.start) + edit.text;
    at = edit.end;
  }
  return out + text.slice(at);
}
