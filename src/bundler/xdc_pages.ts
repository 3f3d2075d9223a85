/**
 * A pod is one document, and a webxdc app may have several pages. A page
 * it frames (a local `<iframe src>`) is built into the frame's `srcdoc`,
 * as `build` does for any page, and its other pages are built into
 * templates the runtime shows (`xdc_build.ts`); a link to a page the app
 * does not have leads nowhere, so `import` warns about it.
 *
 * @module
 */

import { type DefaultTreeAdapterMap, parse } from "parse5";
import { classifyUrl, cleanUrl } from "./html.ts";

type Node = DefaultTreeAdapterMap["node"];
type Element = DefaultTreeAdapterMap["element"];

/** The most links warned about, one line each; the rest are counted. */
const MAX_LINK_WARNINGS = 5;

/**
 * Warnings for the page's links to pages the app does not have (a local
 * `.html` or `.htm` that is neither `index.html` nor one of `pages`):
 * `index.html:LINE: <a href="X"> leads to ...`, at most
 * {@linkcode MAX_LINK_WARNINGS} of them and a count of the rest.
 *
 * @param html The app's `index.html`.
 * @param pages The app's other pages, by their path in the bundle.
 * @returns The warnings, in document order.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { pageLinks } from "./xdc_pages.ts";
 *
 * const html = '<a href="./more.html">more</a><a href="gone.html">gone</a>';
 * assert.equal(pageLinks(html, new Set(["more.html"])).length, 1);
 * assert.deepEqual(pageLinks('<a href="#top">top</a><a href="https://webxdc.org/">x</a>', new Set()), []);
 * ```
 */
export function pageLinks(
  html: string,
  pages: ReadonlySet<string>,
): string[] {
  const found: string[] = [];
  const visit = (node: Node): void => {
    if ("tagName" in node) linkOf(node, pages, found);
    if ("childNodes" in node) node.childNodes.forEach(visit);
  };
  visit(parse(html, { sourceCodeLocationInfo: true }));
  const warnings = found.slice(0, MAX_LINK_WARNINGS);
  if (found.length > MAX_LINK_WARNINGS) {
    warnings.push(
      `index.html: ${
        found.length - MAX_LINK_WARNINGS
      } more links to pages the app does not have`,
    );
  }
  return warnings;
}

/** Adds a warning when `element` links to a page the app does not have. */
function linkOf(
  element: Element,
  pages: ReadonlySet<string>,
  found: string[],
): void {
  if (element.tagName !== "a" && element.tagName !== "area") return;
  const href = element.attrs.find((attr) => attr.name === "href")?.value;
  if (href === undefined || classifyUrl(href) !== "local") return;
  const path = new URL(cleanUrl(href), "file:///").pathname.slice(1);
  if (!/\.html?$/i.test(path) || path === "index.html") return;
  if (pages.has(decodeURIComponent(path))) return;
  const line = element.sourceCodeLocation?.startLine ?? 0;
  found.push(
    `index.html:${line}: <${element.tagName} href=${
      shown(href)
    }> leads to a page the app does not have`,
  );
}

/** A value from the app, quoted, on one line and not too long. */
function shown(value: string): string {
  return JSON.stringify(value.length > 80 ? `${value.slice(0, 80)}...` : value);
}
