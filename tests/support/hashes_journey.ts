// The strict script policy in real Chromium, run by e2e_hashes_test.ts
// (inside a loopback-only network namespace when it can): a pod whose inline
// scripts are awkward to hash (CR LF, a lone CR, an invalid UTF-8 byte, NUL,
// non-ASCII, `&amp;` in HTML and in SVG, a module, a template clone, an
// inline event handler, scripts of framed documents (`<iframe srcdoc>`, one
// and two deep, as `build` makes of a framed page)) is
// served by a real broker with `scriptPolicy: "hashes"`: every one of its
// scripts runs, and script injected at run time (an inline handler through
// innerHTML, a created <script>) does not run and is reported as a CSP
// violation. The same pod under the default policy runs the injection, so
// the check can tell the policies apart.
// Exits non-zero with the failed assertion; prints "journey ok" at the end.
// Usage: deno run -A tests/support/hashes_journey.ts
import assert from "node:assert/strict";
import { concatBytes } from "./bytes.ts";
import { type Browser, chromium } from "playwright-core";
import type { PodHeaderOptions } from "../../src/config/types.ts";
import { CHROMIUM, CHROMIUM_FLAGS } from "./chat_journey_config.ts";
import { signedPod, startServer, upload } from "./helpers.ts";

/** The names the pod's own scripts push onto `window.ran`. */
export const POD_SCRIPTS: readonly string[] = [
  "plain",
  "crlf",
  "cr",
  "replacement:1",
  "nul:1",
  "unicode:é✓😀",
  "amp:&amp;",
  "typed",
  "language",
  "svg:&",
  "template",
  "module",
  "handler",
  "srcdoc:1",
  "srcdoc:2",
];

/** An `<iframe>` showing `html`, as `build` makes one of a framed page. */
function frame(html: string): string {
  const escaped = html.replaceAll("&", "&amp;").replaceAll('"', "&quot;");
  return `<iframe srcdoc="${escaped}"></iframe>\n`;
}

/**
 * The test pod's bytes before signing: inline scripts whose hashes depend
 * on how the browser decodes and tokenizes them.
 */
export function strictPodBytes(): Uint8Array {
  const push = (name: string) => `(window.ran ??= []).push(${name});`;
  const parts: (string | number)[] = [
    "<!doctype html>\n<html><head><meta charset=utf-8><title>Strict pod</title>\n",
    // The first script also records CSP violations for the journey to read.
    "<script>window.violations = [];\n",
    "document.addEventListener('securitypolicyviolation', (e) => {\n",
    "  window.violations.push({ directive: e.effectiveDirective, sample: e.sample });\n",
    "});\n",
    // The framed documents' scripts report to the top (frames in a
    // sandboxed pod have origins of their own).
    "addEventListener('message', (e) => {\n",
    "  if (/^srcdoc:/.test(e.data)) (window.ran ??= []).push(e.data);\n",
    "});\n",
    push('"plain"'),
    "</script>\n",
    `<script>\r\n${push('"crlf"')}\r\n</script>\n`,
    `<script>${push('"cr"')}\r</script>\n`,
    // An invalid UTF-8 byte: the browser decodes it as U+FFFD.
    '<script>(window.ran ??= []).push("replacement:" + "',
    0xff,
    '".length);</script>\n',
    // NUL in script text: the tokenizer emits U+FFFD.
    '<script>(window.ran ??= []).push("nul:" + "',
    0x00,
    '".length);</script>\n',
    `<script>${push('"unicode:é✓😀"')}</script>\n`,
    // HTML script text is raw: `&amp;` stays five characters.
    `<script>${push('"amp:&amp;"')}</script>\n`,
    `<script type=" text/JavaScript ">${push('"typed"')}</script>\n`,
    `<script language="javascript">${push('"language"')}</script>\n`,
    '<script type="application/json" id="data">{"not": "run"}</script>\n',
    "</head><body><h1>Strict pod</h1>\n",
    // SVG script text is parsed as markup: `&amp;` becomes `&`.
    `<svg width="1" height="1"><script>${push('"svg:&amp;"')}</script></svg>\n`,
    `<template id="tpl"><script>${push('"template"')}</script></template>\n`,
    "<script>document.body.append(document.getElementById('tpl').content.cloneNode(true));</script>\n",
    `<script type="module">${push('"module"')}</script>\n`,
    // A signed event handler runs under the strict policy too.
    `<img src="data:," onerror="${push("'handler'")}">\n`,
    frame("<script>top.postMessage('srcdoc:1', '*')</script>"),
    frame(frame("<script>top.postMessage('srcdoc:2', '*')</script>")),
    "</body></html>\n",
  ];
  return concatBytes(
    ...parts.map((part) =>
      typeof part === "number" ? new Uint8Array([part]) : part
    ),
  );
}

interface PodState {
  ran: string[];
  violations: { directive: string; sample: string }[];
  injected: string[];
}

async function visit(
  browser: Browser,
  podHeaderOptions: PodHeaderOptions,
): Promise<{ before: PodState; after: PodState; console: string[] }> {
  await using server = await startServer({ podHeaderOptions });
  const uploaded = await upload(
    server.url,
    await signedPod(strictPodBytes()) as BodyInit,
  );
  assert.equal(uploaded.status, 201, await uploaded.clone().text());
  const { url } = await uploaded.json();
  const context = await browser.newContext();
  try {
    const page = await context.newPage();
    const console: string[] = [];
    page.on("console", (message) => console.push(message.text()));
    const response = await page.goto(url);
    assert.equal(response?.status(), 200);
    await page.waitForFunction(
      (count) =>
        ((window as unknown as { ran?: string[] }).ran ?? []).length >= count,
      POD_SCRIPTS.length,
      { timeout: 10_000 },
    ).catch(() => {}); // the assertion below says what is missing
    const state = () =>
      page.evaluate(() => {
        const w = window as unknown as PodState;
        return {
          ran: [...(w.ran ?? [])],
          violations: [...(w.violations ?? [])],
          injected: [...(w.injected ?? [])],
        };
      });
    const before = await state();
    // Injection, as a peer's message rendered as HTML would do it.
    // (A string: this file is type-checked without the DOM library.)
    await page.evaluate(`(() => {
      window.injected = [];
      const div = document.createElement("div");
      div.innerHTML = '<img src="data:," onerror="window.injected.push(\\'handler\\')">';
      document.body.append(div);
      const script = document.createElement("script");
      script.textContent = "window.injected.push('script')";
      document.body.append(script);
    })()`);
    // The image's error event (and its blocked handler) comes a task later.
    await page.waitForFunction(
      () => {
        const w = window as unknown as PodState;
        return w.injected.length === 2 ||
          w.violations.some((v) => v.directive === "script-src-attr");
      },
      undefined,
      { timeout: 10_000 },
    ).catch(() => {});
    return { before, after: await state(), console };
  } finally {
    await context.close();
  }
}

async function journey(browser: Browser): Promise<void> {
  // Under the strict policy: the pod's scripts all run, injection does not.
  const strict = await visit(browser, { scriptPolicy: "hashes" });
  assert.deepEqual(
    [...strict.before.ran].sort(),
    [...POD_SCRIPTS].sort(),
    `scripts that ran: ${strict.before.ran}; console: ${
      strict.console.join("\n")
    }`,
  );
  assert.deepEqual(strict.before.violations, [], strict.console.join("\n"));
  assert.deepEqual(strict.after.injected, [], "injected script ran");
  const directives = strict.after.violations.map((v) => v.directive).sort();
  assert.deepEqual(
    directives,
    ["script-src-attr", "script-src-elem"],
    JSON.stringify(strict.after.violations),
  );
  assert.ok(
    strict.console.some((line) =>
      /Content Security Policy/.test(line) &&
      /script-src-elem|inline script/i.test(line)
    ),
    `no CSP report in the console: ${strict.console.join("\n")}`,
  );

  // Under the default policy the same injection runs: the check above can
  // fail.
  const loose = await visit(browser, {});
  assert.deepEqual([...loose.before.ran].sort(), [...POD_SCRIPTS].sort());
  assert.deepEqual([...loose.after.injected].sort(), ["handler", "script"]);
  assert.deepEqual(loose.after.violations, []);
}

if (import.meta.main) {
  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: CHROMIUM_FLAGS,
  });
  try {
    await journey(browser);
    console.log("journey ok");
  } finally {
    await browser.close();
  }
}
