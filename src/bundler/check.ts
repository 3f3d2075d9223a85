/**
 * What `sign` and `build` warn about before a page goes to a broker: remote
 * references (the pod's policy blocks every one, so the page breaks) and a
 * size past the broker's default upload limit.
 *
 * @module
 */

import { DEFAULT_MAX_BLOB_BYTES } from "../pod/limits.ts";
import { classifyUrl, cleanUrl, findReferences } from "./html.ts";
import { findCssUrls, parseSrcset } from "./inline.ts";

/** What to do about a remote reference, said once after the list. */
export const REMOTE_HINT =
  "a pod loads nothing remote: download it into the folder, or npm install it";

/**
 * The remote URLs a page's elements and attributes load, each with its line
 * (scripts' imports are not searched: `build` reports those).
 *
 * @param html The page's text.
 * @returns `line: 'url'` strings, in order.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { remoteReferences } from "./check.ts";
 *
 * assert.deepEqual(
 *   remoteReferences('<p>\n<img src="https://cdn.example/a.png"><img src="b.png">'),
 *   ["2: 'https://cdn.example/a.png'"],
 * );
 * ```
 */
export function remoteReferences(html: string): string[] {
  const found: string[] = [];
  for (const reference of findReferences(html)) {
    let urls: string[];
    switch (reference.kind) {
      case "srcset":
        urls = parseSrcset(reference.value).map((candidate) => candidate.url);
        break;
      case "style":
      case "style-attribute":
        urls = findCssUrls(reference.value).map((css) => css.url);
        break;
      case "inline-script":
      case "drop":
        urls = [];
        break;
      default:
        urls = [reference.value];
    }
    for (const url of urls) {
      if (classifyUrl(url) === "remote") {
        found.push(`${reference.line}: '${cleanUrl(url)}'`);
      }
    }
  }
  return found;
}

/**
 * The warnings for a page about to be signed: its remote references, and a
 * size past the default `--max-blob-bytes`.
 *
 * @param file The page's name, as given (for the messages).
 * @param bytes The page.
 * @param checkReferences Whether to look for remote references (`build`
 * has refused them already).
 * @returns One-line warnings, possibly none.
 */
export function pageWarnings(
  file: string,
  bytes: Uint8Array,
  checkReferences = true,
): string[] {
  const warnings: string[] = [];
  if (checkReferences) {
    const remote = remoteReferences(new TextDecoder().decode(bytes));
    if (remote.length > 0) {
      warnings.push(
        `${file}: remote references the pod's policy blocks, line ${
          remote.join(", line ")
        } (${REMOTE_HINT})`,
      );
    }
  }
  if (bytes.length > DEFAULT_MAX_BLOB_BYTES) {
    warnings.push(
      `${file}: ${
        bytes.length.toLocaleString("en")
      } bytes is more than a broker accepts by default (${
        DEFAULT_MAX_BLOB_BYTES.toLocaleString("en")
      }, --max-blob-bytes)`,
    );
  }
  return warnings;
}
