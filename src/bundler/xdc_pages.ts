/**
 * A pod is one page, and a webxdc app may have several: what of its page
 * leads to another of its pages, which the pod will not have. A frame of
 * one (a local `<iframe src>`, `<frame>`, `<embed>`, `<object>`) would be
 * an empty part of the page, so `import` refuses the app; a link to one
 * (`<a href="page.html">`) only leads nowhere, so `import` warns.
 *
 * @module
 */

import { type DefaultTreeAdapterMap, parse } from "parse5";
import { classifyUrl, cleanUrl, findReferences } from "./html.ts";

type Node = DefaultTreeAdapterMap["node"];
type Element = DefaultTreeAdapterMap["element"];

/** Elements that show another document inside the page. */
const FRAMES: ReadonlySet<string> = new Set([
  "iframe",
  "frame",
  "embed",
  "object",
]);
/** The most links warned about, one line each; the rest are counted. */
const MAX_LINK_WARNINGS = 5;

/**
 * Where the page frames another file of the app: `LINE: <iframe src="X">
 * frames another page of the app, and a pod is one page`.
 *
 * @param html The app's `index.html`.
 * @returns The line number and what it frames, or undefined.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { framedPage } from "./xdc_pages.ts";
 *
 * assert.match(framedPage('<iframe src="page.html"></iframe>')!, /^1: <iframe src="page.html">/);
 * assert.equal(framedPage('<iframe srcdoc="<p>x"></iframe>'), undefined);
 * ```
 */
export function framedPage(html: string): string | undefined {
  const framed = findReferences(html).find((reference) =>
    reference.kind === "unsupported" && FRAMES.has(reference.tag) &&
    classifyUrl(reference.value) === "local"
  );
  if (framed === undefined) return undefined;
  const { line, tag, attribute, value } = framed;
  return `${line}: <${tag} ${attribute}=${
    shown(value)
  }> frames another page of the app, and a pod is one page`;
}

/**
 * Warnings for the page's links to other pages of the app (a local
 * `.html` or `.htm`): `index.html:LINE: <a href="X"> leads to ...`, at most
 * {@linkcode MAX_LINK_WARNINGS} of them and a count of the rest.
 *
 * @param html The app's `index.html`.
 * @returns The warnings, in document order.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { pageLinks } from "./xdc_pages.ts";
 *
 * assert.equal(pageLinks('<a href="page.html">more</a>').length, 1);
 * assert.deepEqual(pageLinks('<a href="#top">top</a><a href="https://webxdc.org/">x</a>'), []);
 * ```
 */
export function pageLinks(html: string): string[] {
  const found: string[] = [];
  const visit = (node: Node): void => {
    if ("tagName" in node) linkOf(node, found);
    if ("childNodes" in node) node.childNodes.forEach(visit);
  };
  visit(parse(html, { sourceCodeLocationInfo: true }));
  const warnings = found.slice(0, MAX_LINK_WARNINGS);
  if (found.length > MAX_LINK_WARNINGS) {
    warnings.push(
      `index.html: ${
        found.length - MAX_LINK_WARNINGS
      } more links to other pages of the app`,
    );
  }
  return warnings;
}

/** Adds a warning when `element` links to another page of the app. */
function linkOf(element: Element, found: string[]): void {
  if (element.tagName !== "a" && element.tagName !== "area") return;
  const href = element.attrs.find((attr) => attr.name === "href")?.value;
  if (href === undefined || classifyUrl(href) !== "local") return;
  const path = cleanUrl(href).replace(/[?#].*$/, "");
  if (!/\.html?$/i.test(path)) return;
  const line = element.sourceCodeLocation?.startLine ?? 0;
  found.push(
    `index.html:${line}: <${element.tagName} href=${
      shown(href)
    }> leads to another page of the app, which the pod does not have (a pod is one page)`,
  );
}

/** A value from the app, quoted, on one line and not too long. */
function shown(value: string): string {
  return JSON.stringify(value.length > 80 ? `${value.slice(0, 80)}...` : value);
}
