// Every wait on a socket's event is bounded: a `new Promise` settled by an
// `open`, `message`, `close`, `connect` or `end` event (a WebSocket's
// `onopen =` or `addEventListener("open", ...)`, a node:net socket's
// `.once("connect", ...)`) without a timer of its own would leave its test
// waiting for ever when the event never comes (a socket that closed early).
// Such a wait goes through tests/support/wait.ts (`within`, `nextEvent`,
// `nextEmit`), or the comment just above it says what bounds it:
// `// bounded: <why>`.
import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import { tsFiles } from "../support/source_files.ts";

const TESTS = new URL("../", import.meta.url).pathname;

/** An event handler assigned or registered in a promise's executor. */
const SOCKET_EVENT = new RegExp(
  [
    String.raw`\.on(open|message|close)\s*=(?!=)`,
    String.raw`addEventListener\(\s*["'\x60](open|message|close)["'\x60]`,
    String
      .raw`\.(once|on)\(\s*["'\x60](open|message|close|connect|end)["'\x60]`,
  ].join("|"),
);

/** The index of the parenthesis that closes the one at `open`. */
function closing(text: string, open: number): number {
  let depth = 0;
  for (let i = open; i < text.length; i++) {
    if (text[i] === "(") depth++;
    else if (text[i] === ")" && --depth === 0) return i;
  }
  return text.length;
}

/** Whether the comment lines right above line `index` (0-based) say `bounded:`. */
function markedBounded(lines: string[], index: number): boolean {
  if (/\/\/ bounded: \S/.test(lines[index]!)) return true;
  for (let i = index - 1; i >= 0 && /^\s*\/\//.test(lines[i]!); i--) {
    if (/^\s*\/\/ bounded: \S/.test(lines[i]!)) return true;
  }
  return false;
}

/** `file:line: text` of each unbounded wait on a socket event in `text`. */
export function unboundedWaits(file: string, text: string): string[] {
  const lines = text.split("\n");
  const found: string[] = [];
  for (const match of text.matchAll(/new Promise\s*(<[^(]*>)?\s*\(/g)) {
    const open = match.index + match[0].length - 1;
    const executor = text.slice(open, closing(text, open) + 1);
    if (!SOCKET_EVENT.test(executor) || /setTimeout/.test(executor)) continue;
    if (/within\(\s*$/.test(text.slice(0, match.index))) continue;
    const line = text.slice(0, match.index).split("\n").length - 1;
    if (markedBounded(lines, line)) continue;
    found.push(`${file}:${line + 1}: ${lines[line]!.trim()}`);
  }
  return found;
}

Deno.test("unboundedWaits() finds a wait on a socket event without a bound, and passes a bounded one", () => {
  const unbounded = [
    "await new Promise((resolve) => (ws.onopen = resolve));",
    'await new Promise((r) => ws.addEventListener("close", r));',
    'await new Promise<void>((resolve) => socket.once("connect", resolve));',
  ];
  for (const line of unbounded) {
    assert.deepEqual(unboundedWaits("x.ts", `a();\n${line}\n`), [
      `x.ts:2: ${line}`,
    ]);
  }
  const bounded = [
    'await within(new Promise((r) => (ws.onopen = r)), "open");',
    "await new Promise((r, j) => { ws.onopen = r; setTimeout(j, 9); });",
    "// bounded: the socket was destroyed\nawait new Promise((r) => (ws.onclose = r));",
    "await new Promise((resolve) => setTimeout(resolve, 10));",
    'await new Promise((r) => socket.once("error", r));',
  ];
  for (const line of bounded) {
    assert.deepEqual(unboundedWaits("x.ts", line), []);
  }
});

Deno.test("every wait on a socket event in tests/ is bounded (tests/support/wait.ts)", async () => {
  const found: string[] = [];
  const self = new URL(import.meta.url).pathname;
  for (const file of await tsFiles(TESTS)) {
    // This file's own examples of unbounded waits are strings.
    if (file === self) continue;
    const text = await readFile(file, "utf8");
    found.push(...unboundedWaits(`tests/${file.slice(TESTS.length)}`, text));
  }
  assert.deepEqual(found, [], found.join("\n"));
});
