/**
 * Reads a pod's `<meta name="pod-permissions" content="camera microphone">`
 * as a browser would parse the page (parse5): the first such element of the
 * document's head, within its first {@linkcode DECLARATION_SCAN_BYTES}. The
 * broker's grants, `verify`'s list and `sign`'s and `build`'s warnings all
 * come from here, so they never disagree.
 *
 * Bounded: at most {@linkcode DECLARATION_SCAN_BYTES} are parsed, the
 * parse stops at the body, and a `content` longer than
 * {@linkcode MAX_DECLARATION_BYTES} is ignored whole (it grants nothing).
 * Tokens are separated by ASCII whitespace and are lower case: another
 * token (`Camera`, `usb`) is unknown and dropped; a repeated one counts
 * once.
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
import { decodePodText } from "./inline_scripts.ts";
import {
  canonicalPermissions,
  DECLARATION_NAME,
  DECLARATION_SCAN_BYTES,
  isPodPermission,
  MAX_DECLARATION_BYTES,
  type PodPermission,
} from "./permissions.ts";

type Element = DefaultTreeAdapterTypes.Element;

/** Unknown tokens a {@linkcode Declaration} lists at most. */
const MAX_UNKNOWN_LISTED = 8;

/** What a pod declares. */
export interface Declaration {
  /** Whether its head has the element (within the bytes read). */
  found: boolean;
  /** The known tokens declared, in canonical order ([] when too long). */
  permissions: PodPermission[];
  /**
   * Unknown tokens, each once, in order (the first 8, each cut to 64
   * characters): dropped.
   */
  unknown: string[];
  /**
   * Whether `content` has more than {@linkcode MAX_DECLARATION_BYTES}: then
   * the declaration is ignored.
   */
  tooLong: boolean;
}

/**
 * The declaration of a pod.
 *
 * @param pod The pod's bytes (only the first
 * {@linkcode DECLARATION_SCAN_BYTES} are read).
 * @returns What it declares.
 *
 * @example A declaration with a repeated and an unknown token
 * ```ts
 * import assert from "node:assert/strict";
 * import { readDeclaration } from "./permission_declaration.ts";
 *
 * const html = '<!doctype html><head><meta name="Pod-Permissions" ' +
 *   'content="microphone camera camera Usb"></head>';
 * assert.deepEqual(readDeclaration(new TextEncoder().encode(html)), {
 *   found: true,
 *   permissions: ["camera", "microphone"],
 *   unknown: ["Usb"],
 *   tooLong: false,
 * });
 * ```
 */
export function readDeclaration(pod: Uint8Array): Declaration {
  const content = findDeclaration(pod);
  if (content === null) {
    return { found: false, permissions: [], unknown: [], tooLong: false };
  }
  if (new TextEncoder().encode(content).length > MAX_DECLARATION_BYTES) {
    return { found: true, permissions: [], unknown: [], tooLong: true };
  }
  const tokens = content.split(/[\t\n\f\r ]+/).filter((token) => token);
  const unknown = [...new Set(tokens.filter((t) => !isPodPermission(t)))];
  return {
    found: true,
    permissions: canonicalPermissions(tokens.filter(isPodPermission)),
    unknown: unknown.slice(0, MAX_UNKNOWN_LISTED).map((t) => t.slice(0, 64)),
    tooLong: false,
  };
}

/**
 * The `content` of the first `<meta name="pod-permissions">` of the head
 * ("" without the attribute), or null when there is none.
 */
function findDeclaration(pod: Uint8Array): string | null {
  let content: string | null = null;
  let done = false;
  let head: Element | null = null;
  const adapter: TreeAdapter<DefaultTreeAdapterMap> = {
    ...defaultTreeAdapter,
    createElement(tagName, namespaceURI, attrs) {
      const element = defaultTreeAdapter.createElement(
        tagName,
        namespaceURI,
        attrs,
      );
      if (tagName === "head") head ??= element;
      // The head is over: nothing after it is read.
      if (tagName === "body") done = true;
      return element;
    },
    appendChild(parent, node) {
      defaultTreeAdapter.appendChild(parent, node);
      if (done || parent !== head || !isDeclaration(node)) return;
      content = (node as Element).attrs.find((a) => a.name === "content")
        ?.value ?? "";
      done = true;
    },
  };
  const parser = new Parser<DefaultTreeAdapterMap>({ treeAdapter: adapter });
  const text = decodePodText(pod.subarray(0, DECLARATION_SCAN_BYTES));
  // Slices, so that the parse stops soon after the head ends.
  const slice = 4096;
  for (let at = 0; at < text.length && !done;) {
    let end = Math.min(at + slice, text.length);
    const last = text.charCodeAt(end - 1);
    if (end < text.length && last >= 0xd800 && last <= 0xdbff) end += 1;
    parser.tokenizer.write(text.slice(at, end), end === text.length);
    at = end;
  }
  return content;
}

function isDeclaration(node: DefaultTreeAdapterTypes.ChildNode): boolean {
  if (!("tagName" in node) || node.tagName !== "meta") return false;
  const name = node.attrs.find((a) => a.name === "name")?.value;
  // ASCII case-insensitive, as HTML compares a meta element's name.
  return name?.replace(/[A-Z]/g, (c) => c.toLowerCase()) === DECLARATION_NAME;
}
