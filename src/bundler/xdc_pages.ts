/**
 * A pod is one page, and a webxdc app may have several. A page it frames
 * (a local `<iframe src>`) is built into the frame's `srcdoc`, as `build`
 * does for any page; a link to another page (`<a href="page.html">`)
 * leads nowhere in the pod, so `import` warns about it.
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
