/**
 * Text for one line of a terminal or a log: the one way control characters
 * from the user's input are shown.
 *
 * @module
 */

/**
 * A message on one line: control characters (a newline in a file name, C1
 * controls, the Unicode line and paragraph separators) are shown escaped,
 * as JSON would show them.
 *
 * @param message Any text, possibly from the user.
 * @returns The text with no character that breaks or rewrites a line.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { oneLine } from "./text.ts";
 *
 * assert.equal(oneLine("a\nb\u2028c\u007f"), "a\\nb\\u2028c\\u007f");
 * ```
 */
export function oneLine(message: string): string {
  return message.replace(
    // deno-lint-ignore no-control-regex
    /[\u0000-\u001f\u007f-\u009f\u2028\u2029]/g,
    (c) =>
      c < "\u0020"
        ? JSON.stringify(c).slice(1, -1)
        : `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`,
  );
}

/**
 * The last non-empty element of a comma-separated header list (with
 * `X-Forwarded-*`, the one the nearest proxy appended).
 *
 * @param header The header's value, or null.
 * @returns The element, trimmed, or undefined when there is none.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { lastListValue } from "./text.ts";
 *
 * assert.equal(lastListValue("evil.example, broker.example"), "broker.example");
 * assert.equal(lastListValue("a, "), "a");
 * assert.equal(lastListValue(null), undefined);
 * ```
 */
export function lastListValue(header: string | null): string | undefined {
  if (header === null) return undefined;
  const values = header.split(",");
  for (let i = values.length - 1; i >= 0; i--) {
    const value = values[i]!.trim();
    if (value !== "") return value;
  }
  return undefined;
}
