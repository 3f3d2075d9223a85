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
