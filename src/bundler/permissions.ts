/**
 * A page's permission declaration, for `build --permissions` and the
 * warnings of `sign` and `build`: the element `build` writes, and what a
 * broker would make of the one a page has (read by the broker's own reader,
 * `serving/permission_declaration.ts`, so the two never disagree).
 *
 * @module
 */

import { type DefaultTreeAdapterMap, parse } from "parse5";
import {
  DECLARATION_NAME,
  isPodPermission,
  MAX_DECLARATION_BYTES,
  POD_PERMISSIONS,
  type PodPermission,
} from "../serving/permissions.ts";
import { readDeclaration } from "../serving/permission_declaration.ts";
import type { Edit } from "./inline.ts";
import type { BuildProblem } from "./bundle.ts";

export type { PodPermission } from "../serving/permissions.ts";

type Node = DefaultTreeAdapterMap["node"];
type Element = DefaultTreeAdapterMap["element"];

const KNOWN = POD_PERMISSIONS.join(", ");

/**
 * What `sign` and `build` say about a page's declaration: unknown tokens
 * (dropped), a `content` too long (ignored), or an element a broker does
 * not read (outside the head's first 64 KiB).
 *
 * @param file The page's name, for the messages.
 * @param bytes The page.
 * @returns One-line warnings, possibly none.
 *
 * @example An unknown token
 * ```ts
 * import assert from "node:assert/strict";
 * import { declarationWarnings } from "./permissions.ts";
 *
 * const page = '<meta name="pod-permissions" content="camera usb">';
 * assert.match(
 *   declarationWarnings("a.html", new TextEncoder().encode(page))[0]!,
 *   /unknown permission 'usb' dropped/,
 * );
 * ```
 */
export function declarationWarnings(
  file: string,
  bytes: Uint8Array,
): string[] {
  const declaration = readDeclaration(bytes);
  const element = `<meta name="${DECLARATION_NAME}">`;
  if (declaration.tooLong) {
    return [
      `${file}: ${element} has more than ${MAX_DECLARATION_BYTES} bytes: a broker ignores it and grants nothing`,
    ];
  }
  if (declaration.unknown.length > 0) {
    const names = declaration.unknown.map((token) => `'${token}'`).join(", ");
    return [
      `${file}: ${element}: unknown permission ${names} dropped (known: ${KNOWN})`,
    ];
  }
  if (
    !declaration.found &&
    /name\s*=\s*["']?pod-permissions/i.test(new TextDecoder().decode(bytes))
  ) {
    return [
      `${file}: a broker reads ${element} only in the head, within the page's first 64 KiB: move it to the top of <head>`,
    ];
  }
  return [];
}

/** Tokens for `build --permissions`: the known ones, and the rest. */
export interface PermissionList {
  /** Known tokens, in canonical order, each once. */
  known: PodPermission[];
  /** Unknown tokens, each once: dropped with a warning. */
  unknown: string[];
}

/**
 * Splits `build --permissions LIST` (comma-separated).
 *
 * @param list The flag's value.
 * @returns Its known and unknown tokens.
 */
export function parsePermissionList(list: string): PermissionList {
  const tokens = list.split(",").map((token) => token.trim()).filter((t) => t);
  return {
    known: POD_PERMISSIONS.filter((token) => tokens.includes(token)),
    unknown: [...new Set(tokens.filter((token) => !isPodPermission(token)))],
  };
}

/**
 * The edit that writes `<meta name="pod-permissions" content="...">` into a
 * page: first in its head (after the `<head>` tag, or the `<html>` tag, or
 * the doctype, whichever it has), where a broker reads it.
 *
 * @param html The page's text.
 * @param permissions The tokens to declare.
 * @returns The edit, or null when the page declares its permissions
 * already (they are given in one place).
 */
export function declarationEdit(
  html: string,
  permissions: readonly PodPermission[],
): Edit | null {
  if (readDeclaration(new TextEncoder().encode(html)).found) return null;
  const document = parse(html, { sourceCodeLocationInfo: true });
  let at = 0;
  for (const node of document.childNodes) {
    if (node.nodeName === "#documentType") {
      at = node.sourceCodeLocation?.endOffset ?? at;
    }
  }
  const root = document.childNodes.find(isElement("html"));
  at = root?.sourceCodeLocation?.startTag?.endOffset ?? at;
  const head = root?.childNodes.find(isElement("head"));
  at = head?.sourceCodeLocation?.startTag?.endOffset ?? at;
  return {
    start: at,
    end: at,
    text: `<meta name="${DECLARATION_NAME}" content="${
      permissions.join(" ")
    }">`,
  };
}

/**
 * Why `build --permissions` refuses a page that declares its own.
 *
 * @param file The page's name.
 * @returns The problem.
 */
export function twice(file: string): BuildProblem {
  return {
    file,
    line: 0,
    message:
      'the page has <meta name="pod-permissions"> already: give its permissions in one place',
  };
}

function isElement(tagName: string) {
  return (node: Node): node is Element =>
    "tagName" in node && node.tagName === tagName;
}
