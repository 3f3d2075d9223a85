/**
 * The icon link `pod-broker build` adds to a page that has none. Without
 * one, a browser asks the pod's host for `/favicon.ico`, which the pod's
 * policy refuses (`img-src data: blob:`): Firefox logs a policy error on
 * every load, and the broker answers a request for nothing. An empty
 * `data:` icon loads nothing and is allowed.
 *
 * @module
 */

import { type DefaultTreeAdapterMap, parse } from "parse5";
import type { Edit } from "./inline.ts";

type Node = DefaultTreeAdapterMap["node"];
type Element = DefaultTreeAdapterMap["element"];

/** The link added: an empty icon, which `img-src data:` allows. */
export const EMPTY_ICON = '<link rel="icon" href="data:,">';

/**
 * The edit that adds {@linkcode EMPTY_ICON} to a page without an icon link
 * (a `<link>` whose `rel` has the token `icon`): before `</head>`, or after
 * the first of `<head>`, `<html>` and the doctype the page writes.
 *
 * @param html The page's source.
 * @returns The insertion, or null when the page has an icon link.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { iconEdit } from "./icon.ts";
 *
 * assert.deepEqual(iconEdit("<head><title>x</title></head>"), {
 *   start: 22,
 *   end: 22,
 *   text: '<link rel="icon" href="data:,">',
 * });
 * assert.equal(iconEdit('<link rel="shortcut icon" href="a.png">'), null);
 * ```
 */
export function iconEdit(html: string): Edit | null {
  const document = parse(html, { sourceCodeLocationInfo: true });
  const elements: Element[] = [];
  const visit = (node: Node): void => {
    if ("tagName" in node) elements.push(node);
    if ("childNodes" in node) node.childNodes.forEach(visit);
  };
  visit(document);
  const hasIcon = elements.some((element) =>
    element.tagName === "link" &&
    element.attrs.some((attr) =>
      attr.name === "rel" && /(?:^|\s)icon(?:\s|$)/i.test(attr.value)
    )
  );
  if (hasIcon) return null;
  const location = (tag: string) =>
    elements.find((element) => element.tagName === tag)?.sourceCodeLocation;
  const head = location("head");
  const doctype = document.childNodes.find((node) =>
    node.nodeName === "#documentType"
  )?.sourceCodeLocation;
  const at = head?.endTag?.startOffset ?? head?.startTag?.endOffset ??
    location("html")?.startTag?.endOffset ?? doctype?.endOffset ?? 0;
  return { start: at, end: at, text: EMPTY_ICON };
}
