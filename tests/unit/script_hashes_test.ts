// The strict script policy's building blocks: which inline scripts a browser
// runs, the text it hashes, the cache, and the content policy built from the
// hashes. That Chromium agrees with these hashes is e2e_hashes_test.ts's job.
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import fc from "fast-check";
import { parse } from "parse5";
import {
  defaultContentPolicy,
  podHeaderList,
  scriptPolicyConflict,
  withScriptHashes,
} from "../../src/serving/pod_headers.ts";
import {
  computeScriptHashes,
  computeScriptHashesAsync,
  MAX_SCRIPT_HASH_BYTES,
  ScriptHashCache,
  scriptHashSource,
} from "../../src/serving/script_hashes.ts";
import {
  decodePodText,
  findInlineScripts,
  findInlineScriptsInSlices,
  isExecutableInlineScript,
} from "../../src/serving/inline_scripts.ts";

const encode = (text: string) => new TextEncoder().encode(text);

function sha256Source(text: string): string {
  return `'sha256-${
    createHash("sha256").update(encode(text)).digest("base64")
  }'`;
}

Deno.test("scriptHashSource() is 'sha256-' and the base64 SHA-256 of the UTF-8 text", () => {
  assert.equal(
    scriptHashSource("alert(1)"),
    "'sha256-bhHHL3z2vDgxUt0W3dWQOrprscmda2Y5pLsLg4GF+pI='",
  );
  assert.equal(scriptHashSource("é ✓ 😀"), sha256Source("é ✓ 😀"));
  assert.equal(
    scriptHashSource(""),
    "'sha256-47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU='",
  );
});

Deno.test("isExecutableInlineScript() follows the HTML standard's script types", () => {
  const run = (attrs: Record<string, string>) =>
    isExecutableInlineScript(
      Object.entries(attrs).map(([name, value]) => ({ name, value })),
    );
  assert.equal(run({}), true);
  assert.equal(run({ type: "" }), true);
  assert.equal(run({ type: " Text/JavaScript " }), true);
  assert.equal(run({ type: "application/x-javascript" }), true);
  assert.equal(run({ type: "module" }), true);
  assert.equal(run({ type: "MODULE" }), true);
  assert.equal(run({ type: "importmap" }), true);
  assert.equal(run({ type: "speculationrules" }), true);
  assert.equal(run({ language: "javascript" }), true);
  assert.equal(run({ language: "" }), true);
  // Data blocks, and types with parameters, are not run.
  assert.equal(run({ type: "application/pod-manifest" }), false);
  assert.equal(run({ type: "application/json" }), false);
  assert.equal(run({ type: "text/template" }), false);
  assert.equal(run({ type: "text/javascript; charset=utf-8" }), false);
  assert.equal(run({ language: "vbscript" }), false);
  // A type wins over a language.
  assert.equal(run({ type: "text/javascript", language: "vbscript" }), true);
  // External scripts need no hash.
  assert.equal(run({ src: "x.js" }), false);
});

Deno.test("findInlineScripts() returns the text a browser hashes", () => {
  const html = [
    "<!doctype html><html><head>",
    '<script type="application/pod-manifest" id="__POD_MANIFEST_B64">eyJ2IjoxfQ==</script>',
    "<script>one()\r\ntwo()\rthree()</script>",
    '<script type="application/json">{"a":1}</script>',
    "<script>const s = '&amp; <b> \0';</script>",
    '<script src="x.js">ignored()</script>',
    "</head><body>",
    "<template><script>fromTemplate()</script></template>",
    "<svg><script>svg &amp;&amp; go()</script></svg>",
    "<!-- <script>commented()</script> -->",
    "<textarea><script>notAScript()</script></textarea>",
    "<script type=module>import './m.js'</script>",
    "</body></html>",
  ].join("");
  assert.deepEqual(findInlineScripts(html), [
    "one()\ntwo()\nthree()",
    // HTML script text is raw: no character references; NUL becomes U+FFFD.
    "const s = '&amp; <b> \uFFFD';",
    "fromTemplate()",
    // SVG script text is parsed as markup: references are decoded.
    "svg && go()",
    "import './m.js'",
  ]);
});

Deno.test("findInlineScripts() survives deep nesting and many siblings", () => {
  const deep = "<div>".repeat(50_000) + "<script>deep()</script>";
  assert.deepEqual(findInlineScripts(deep), ["deep()"]);
  const wide = "<p>x</p>".repeat(50_000) + "<script>wide()</script>";
  assert.deepEqual(findInlineScripts(wide), ["wide()"]);
});

// The reference: parse5's whole default tree, walked in document order
// (a script nested in an SVG script counts too).
function referenceScripts(html: string): string[] {
  const out: string[] = [];
  // deno-lint-ignore no-explicit-any
  const walk = (node: any) => {
    if (node.tagName === "script") {
      if (isExecutableInlineScript(node.attrs)) {
        out.push(
          // deno-lint-ignore no-explicit-any
          node.childNodes.map((c: any) => c.value ?? "").join(""),
        );
      }
    }
    if (node.content) walk(node.content);
    for (const child of node.childNodes ?? []) walk(child);
  };
  walk(parse(html));
  return out;
}

Deno.test("findInlineScriptsInSlices() agrees with parse5's whole tree for any slice size", () => {
  const piece = fc.constantFrom(
    "<script>",
    "</script>",
    "<script type=module>",
    "<script type='application/json'>",
    "<svg>",
    "</svg>",
    "<template>",
    "</template>",
    "<b>",
    "</b>",
    "<i>",
    "</i>",
    "<p>",
    "</p>",
    "<table>",
    "<tr>",
    "<td>",
    "</table>",
    "<textarea>",
    "</textarea>",
    "<!--",
    "-->",
    "&amp;",
    "\r\n",
    "\0",
    "😀",
    "a()",
    "<",
    ">",
    "'",
  );
  fc.assert(
    fc.property(
      fc.array(piece, { maxLength: 40 }),
      fc.integer({ min: 1, max: 9 }),
      (pieces, slice) => {
        const html = pieces.join("");
        const expected = [...referenceScripts(html)].sort();
        assert.deepEqual([...findInlineScripts(html)].sort(), expected);
        assert.deepEqual(
          [...findInlineScriptsInSlices(html, slice)].sort(),
          expected,
        );
      },
    ),
    { numRuns: 2_000 },
  );
});

Deno.test("decodePodText() decodes as the browser does: UTF-8, or the byte order mark's encoding", () => {
  assert.equal(decodePodText(encode("\uFEFFhi")), "hi");
  assert.equal(decodePodText(new Uint8Array([0x61, 0xff, 0x62])), "a\uFFFDb");
  const utf16le = new Uint8Array([0xff, 0xfe, 0x68, 0x00, 0x69, 0x00]);
  assert.equal(decodePodText(utf16le), "hi");
  const utf16be = new Uint8Array([0xfe, 0xff, 0x00, 0x68, 0x00, 0x69]);
  assert.equal(decodePodText(utf16be), "hi");
});

Deno.test("computeScriptHashes() hashes each executable script once; the async form agrees", async () => {
  const html = "<script>same()</script><p>text</p><script>same()</script>" +
    "<script>\xff</script>";
  const blob = new Uint8Array([
    ...encode("<script>same()</script><p>text</p><script>same()</script>"),
    ...encode("<script>"),
    0xff, // invalid UTF-8: the browser sees U+FFFD
    ...encode("</script>"),
  ]);
  const expected = [sha256Source("same()"), sha256Source("\uFFFD")];
  assert.deepEqual(computeScriptHashes(blob), expected);
  assert.deepEqual(await computeScriptHashesAsync(blob), expected);
  assert.equal(findInlineScripts(html).length, 3);
  // A big pod is parsed in slices, with the same answer.
  const big = encode(
    "<p>filler</p>".repeat(20_000) + "<script>last()</script>",
  );
  assert.deepEqual(await computeScriptHashesAsync(big), [
    sha256Source("last()"),
  ]);
});

Deno.test("computeScriptHashes() hashes the scripts of framed documents (srcdoc), 3 deep and no deeper", async () => {
  const frame = (html: string) =>
    `<iframe srcdoc="${
      html.replaceAll("&", "&amp;").replaceAll('"', "&quot;")
    }"></iframe>`;
  const nested = (depth: number): string =>
    depth === 0
      ? `<script>at(${depth})</script>`
      : `<script>at(${depth})</script>` + frame(nested(depth - 1));
  // The page's script, then frames 1, 2 and 3 deep; the 4th is not hashed.
  const html = `<p onclick="top()">x</p>${nested(4)}`;
  const expected = [
    "'unsafe-hashes'",
    sha256Source("top()"),
    ...[4, 3, 2, 1].map((depth) => sha256Source(`at(${depth})`)),
  ];
  assert.deepEqual(computeScriptHashes(encode(html)), expected);
  assert.deepEqual(await computeScriptHashesAsync(encode(html)), expected);
  // A frame kept in a template (as import keeps an app's other pages) is
  // hashed too: the runtime shows it later.
  assert.deepEqual(
    computeScriptHashes(
      encode(
        `<template data-pod-page="p.html">${
          frame("<script>later()</script>")
        }</template>`,
      ),
    ),
    [sha256Source("later()")],
  );
  // Each frame document is parsed as a browser parses it: text in a frame's
  // srcdoc is markup, and a srcdoc on another element is nothing.
  assert.deepEqual(
    computeScriptHashes(
      encode(
        `${
          frame("<script>a&amp;b</script>")
        }<div srcdoc="<script>no()</script>"></div>`,
      ),
    ),
    [sha256Source("a&amp;b")],
  );
});

const podOf = (name: string, size = 1) => ({
  id: name,
  sha256: name,
  blobSize: size,
});

Deno.test("ScriptHashCache parses a pod once, evicts the least recently used and keeps no failure", async () => {
  const cache = new ScriptHashCache({ maxEntries: 2 });
  const loads: string[] = [];
  const pod = (name: string) => () => {
    loads.push(name);
    return Promise.resolve(encode(`<script>${name}()</script>`));
  };
  const [a1, a2] = await Promise.all([
    cache.hashesOf(podOf("a"), pod("a")),
    cache.hashesOf(podOf("a"), pod("a")),
  ]);
  assert.deepEqual(a1, [sha256Source("a()")]);
  assert.equal(a2, a1);
  await cache.hashesOf(podOf("b"), pod("b"));
  await cache.hashesOf(podOf("a"), pod("a")); // a is now the most recent
  await cache.hashesOf(podOf("c"), pod("c")); // evicts b
  assert.equal(cache.size, 2);
  await cache.hashesOf(podOf("a"), pod("a"));
  await cache.hashesOf(podOf("b"), pod("b"));
  assert.deepEqual(loads, ["a", "b", "c", "b"]);

  assert.equal(await cache.hashesOf(podOf("gone"), () => null), null);
  await assert.rejects(
    cache.hashesOf(podOf("broken"), () => Promise.reject(new Error("disk"))),
    /disk/,
  );
  assert.deepEqual(
    await cache.hashesOf(
      podOf("gone"),
      () => encode("<script>back()</script>"),
    ),
    [sha256Source("back()")],
  );
  assert.throws(() => new ScriptHashCache({ maxEntries: 0 }), RangeError);
  assert.throws(
    () => new ScriptHashCache({ maxBytesInFlight: 0 }),
    RangeError,
  );
});

Deno.test("security 4: hashes past 16 KiB are 'too-long', computed once per pod and logged once", async () => {
  const scripts = (count: number, from = 0) =>
    Array.from({ length: count }, (_, i) => `<script>${from + i}</script>`)
      .join("");
  // Just under the limit: every hash is listed.
  const sourceBytes = sha256Source("0").length + 1;
  const fit = Math.floor((MAX_SCRIPT_HASH_BYTES + 1) / sourceBytes);
  assert.equal(
    (await computeScriptHashesAsync(
      encode(scripts(fit)),
      MAX_SCRIPT_HASH_BYTES,
    ))
      ?.length,
    fit,
  );
  assert.equal(
    await computeScriptHashesAsync(
      encode(scripts(fit + 1)),
      MAX_SCRIPT_HASH_BYTES,
    ),
    null,
  );
  // Repeats count once.
  assert.equal(
    (await computeScriptHashesAsync(
      encode(scripts(fit) + scripts(fit)),
      MAX_SCRIPT_HASH_BYTES,
    ))?.length,
    fit,
  );
  const lines: string[] = [];
  const cache = new ScriptHashCache({
    logger: (level, message) => lines.push(`${level} ${message}`),
  });
  let loads = 0;
  const many = encode(scripts(400_000));
  const load = () => (loads++, many);
  const pod = { id: "many", sha256: "many", blobSize: many.length };
  const [first, second] = await Promise.all([
    cache.hashesOf(pod, load),
    cache.hashesOf(pod, load),
  ]);
  assert.equal(first, "too-long");
  assert.equal(second, "too-long");
  assert.equal(await cache.hashesOf(pod, load), "too-long");
  assert.equal(loads, 1);
  assert.equal(lines.length, 1);
  assert.match(lines[0]!, /^warn .*'many'.*script-src 'none'/);
});

Deno.test("security 4: ScriptHashCache hashes pods side by side, so a large pod never holds a small one", async () => {
  const cache = new ScriptHashCache();
  const finished: string[] = [];
  const large = encode(
    "<p>filler</p>".repeat(300_000) + "<script>x()</script>",
  );
  const small = encode("<script>small()</script>");
  const bigDone = cache.hashesOf(
    { id: "large", sha256: "large", blobSize: large.length },
    () => large,
  ).then(() => finished.push("large"));
  // Asked for after the large pod has started.
  await new Promise((resolve) => setTimeout(resolve, 0));
  const smallDone = cache.hashesOf(
    { id: "small", sha256: "small", blobSize: small.length },
    () => small,
  ).then(() => finished.push("small"));
  await Promise.all([bigDone, smallDone]);
  assert.deepEqual(finished, ["small", "large"]);
});

Deno.test("ScriptHashCache lets in the pods that fit the bytes in flight, one at least", async () => {
  const cache = new ScriptHashCache({ maxBytesInFlight: 100 });
  const started: string[] = [];
  const gates = new Map<string, () => void>();
  const pod = (name: string, size: number, gated: boolean) =>
    cache.hashesOf({ id: name, sha256: name, blobSize: size }, async () => {
      started.push(name);
      if (gated) await new Promise<void>((open) => gates.set(name, open));
      return encode(`<script>${name}()</script>`);
    });
  const tick = () => new Promise((resolve) => setTimeout(resolve, 10));
  // a and b are each bigger than the budget: one at a time, the rest wait.
  const a = pod("a", 500, true);
  const b = pod("b", 500, true);
  const small = [pod("c", 50, false), pod("d", 50, false)];
  await tick();
  assert.deepEqual(started, ["a"]);
  gates.get("a")!();
  await a;
  await tick();
  assert.deepEqual(started, ["a", "b"]);
  gates.get("b")!();
  await Promise.all([b, ...small]);
  assert.deepEqual(started, ["a", "b", "c", "d"]);
});

Deno.test("defaultContentPolicy() lists the hashes instead of 'unsafe-inline' and keeps 'wasm-unsafe-eval'", () => {
  const signal = "wss://broker.example/signal";
  assert.match(
    defaultContentPolicy(signal),
    /script-src 'unsafe-inline' 'wasm-unsafe-eval';/,
  );
  const strict = defaultContentPolicy(signal, ["'sha256-A='", "'sha256-B='"]);
  assert.match(
    strict,
    /^default-src 'none'; script-src 'sha256-A=' 'sha256-B=' 'wasm-unsafe-eval'; style-src 'unsafe-inline';/,
  );
  assert.match(
    defaultContentPolicy(signal, []),
    /script-src 'wasm-unsafe-eval';/,
  );
});

Deno.test("withScriptHashes() makes an operator's script-src strict and leaves other directives", () => {
  assert.equal(
    withScriptHashes(
      "default-src 'self'; SCRIPT-SRC 'Unsafe-Inline' 'self'; style-src 'unsafe-inline'",
      ["'sha256-A='"],
    ),
    "default-src 'self'; SCRIPT-SRC 'self' 'sha256-A='; style-src 'unsafe-inline'",
  );
  assert.equal(
    withScriptHashes("script-src 'self'; script-src-elem 'self'", [
      "'sha256-A='",
    ]),
    "script-src 'self' 'sha256-A='; script-src-elem 'self' 'sha256-A='",
  );
  assert.equal(
    withScriptHashes("default-src 'none'", ["'sha256-A='"]),
    "default-src 'none'",
  );
  assert.equal(
    withScriptHashes("script-src 'self' https://cdn.example", "too-long"),
    "script-src 'none'",
  );
});

Deno.test("security 10: scriptPolicyConflict() names a custom policy the hashes cannot hold in", () => {
  const hashes = (csp: string) =>
    scriptPolicyConflict({ scriptPolicy: "hashes", csp });
  assert.equal(hashes("default-src 'none'; script-src 'self'"), null);
  assert.equal(scriptPolicyConflict({ scriptPolicy: "hashes" }), null);
  assert.equal(scriptPolicyConflict({ csp: "default-src 'self'" }), null);
  assert.match(hashes("default-src 'self' 'unsafe-inline'")!, /no script-src/);
  assert.match(
    hashes("script-src 'self'; Script-Src-Elem 'self' 'UNSAFE-INLINE'")!,
    /script-src-elem 'unsafe-inline'/,
  );
  assert.match(
    hashes("script-src 'self'; script-src-attr 'unsafe-inline'")!,
    /script-src-attr 'unsafe-inline'/,
  );
  // script-src-elem without 'unsafe-inline' gets the hashes too.
  assert.equal(hashes("script-src 'self'; script-src-elem 'self'"), null);
});

Deno.test("podHeaderList() builds the strict content policy only with scriptPolicy 'hashes'", () => {
  const signal = "ws://127.0.0.1:1/signal";
  const pod = encode("<script>start()</script>");
  const hashes = computeScriptHashes(pod);
  const policies = (pairs: [string, string][]) =>
    new Headers(pairs).get("Content-Security-Policy")!.split(", ");

  const strict = podHeaderList({ scriptPolicy: "hashes" }, signal, hashes);
  const [sandbox, content] = policies(strict);
  assert.match(sandbox!, /^sandbox allow-scripts/);
  assert.equal(content, defaultContentPolicy(signal, hashes));
  assert.ok(!content!.includes("script-src 'unsafe-inline'"));
  const headers = new Headers(strict);
  assert.equal(headers.get("Content-Type"), "text/html; charset=utf-8");
  assert.equal(headers.get("Cache-Control"), "public, max-age=300");

  // Without hashes, nothing inline may run (fail closed).
  assert.match(
    policies(podHeaderList({ scriptPolicy: "hashes" }, signal))[1]!,
    /script-src 'wasm-unsafe-eval';/,
  );
  // Too many hashes: nothing at all.
  assert.match(
    policies(podHeaderList({ scriptPolicy: "hashes" }, signal, "too-long"))[1]!,
    /script-src 'none';/,
  );

  // The default policy ignores hashes.
  assert.equal(
    policies(podHeaderList({}, signal, hashes))[1],
    defaultContentPolicy(signal),
  );

  // An operator's policy gets the hashes in its script-src.
  assert.equal(
    policies(podHeaderList(
      {
        scriptPolicy: "hashes",
        csp: "default-src 'none'; script-src 'unsafe-inline'",
      },
      signal,
      hashes,
    ))[1],
    `default-src 'none'; script-src ${hashes[0]}`,
  );
});

Deno.test("an event handler attribute gets its hash after 'unsafe-hashes'; a pod without one gets no 'unsafe-hashes'", () => {
  const blob = new TextEncoder().encode(
    '<script>go()</script><button onclick="send()">Send</button>' +
      '<svg onload="draw()"></svg><p title="onclick">x</p>',
  );
  assert.deepEqual(computeScriptHashes(blob), [
    scriptHashSource("go()"),
    "'unsafe-hashes'",
    scriptHashSource("send()"),
    scriptHashSource("draw()"),
  ]);
  assert.deepEqual(
    computeScriptHashes(new TextEncoder().encode("<script>go()</script>")),
    [scriptHashSource("go()")],
  );
});
