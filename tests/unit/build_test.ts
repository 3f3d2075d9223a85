// `pod-broker build` (src/bundler/): the fixtures under tests/testdata/build/
// built in-process and through the CLI, the remote-reference report, the
// signature, the escapes, and (in a child process) the built page in
// Chromium. What serving loads is import_graph_test.ts.
import assert from "node:assert/strict";
import { supportFile } from "../support/paths.ts";
import { inCi } from "../support/gated.ts";
import { existsSync } from "node:fs";
import {
  copyFile,
  mkdir,
  readdir,
  readFile,
  writeFile,
} from "node:fs/promises";
import { join } from "node:path";
import { type DefaultTreeAdapterMap, parse } from "parse5";
import { encodeBase64 } from "../../src/_util/encoding.ts";
import { BuildError, buildPod } from "../../src/bundler/mod.ts";
import { REMOTE_HINT } from "../../src/bundler/check.ts";
import { escapeInlineScript, parseSrcset } from "../../src/bundler/inline.ts";
import { publicKeyFromSeed } from "../../src/pod/ed25519.ts";
import { encodePrivateKeyPem } from "../../src/pod/keys.ts";
import { SLOT_LITERAL } from "../../src/pod/format.ts";
import { verifyPod } from "../../src/pod/verify.ts";
import { encodeBase64Url } from "../../src/_util/encoding.ts";
import {
  CHROMIUM,
  chromiumNotice,
  hasChromium,
  runJourney,
} from "../support/browser.ts";
import { cli, newSeed } from "../support/helpers.ts";
import { tempDir } from "../contract/_servers.ts";

const TESTDATA = new URL("../testdata/build/", import.meta.url).pathname;
const APP = join(TESTDATA, "app/index.html");
const APP_DIR = join(TESTDATA, "app");
/** Every file of the app fixture that the page, its CSS or its HTML inline as a data: URL. */
const DATA_URL_ASSETS = [
  "img/icon.svg",
  "img/logo.png",
  "img/logo@2x.png",
  "img/dot.png",
  "img/poster.png",
  "media/clip.webm",
  "media/captions.vtt",
  "media/beep.wav",
  "fonts/fixture.woff2",
];
const PRELOAD_WARNING =
  'index.html:7: dropped <link rel="preload" href="src/app.ts"> (a pod loads no file)';

type Node = DefaultTreeAdapterMap["node"];
type Element = DefaultTreeAdapterMap["element"];

function elements(html: string): Element[] {
  const found: Element[] = [];
  const visit = (node: Node) => {
    if ("tagName" in node) found.push(node);
    if ("childNodes" in node) node.childNodes.forEach(visit);
  };
  visit(parse(html));
  return found;
}

function attribute(element: Element, name: string): string | undefined {
  return element.attrs.find((attr) => attr.name === name)?.value;
}

/** The bytes of every data: URL in a text (base64 or percent-encoded). */
function dataUrlContents(text: string): Set<string> {
  const contents = new Set<string>();
  for (
    const [, base64, body] of text.matchAll(
      /data:[\w/+.-]+(;base64)?,([^"')\s]*)/g,
    )
  ) {
    const bytes = base64
      ? Uint8Array.from(atob(body!), (c) => c.charCodeAt(0))
      : new TextEncoder().encode(decodeURIComponent(body!));
    contents.add(encodeBase64(bytes));
  }
  return contents;
}

/** A copy of the remote fixture, with a TypeScript module that imports a remote URL
 * (written here: committed, `deno check tests/` would try to fetch it). */
async function remoteFixture(dir: string): Promise<string> {
  for (const name of await readdir(join(TESTDATA, "remote"))) {
    await copyFile(join(TESTDATA, "remote", name), join(dir, name));
  }
  await writeFile(
    join(dir, "main.ts"),
    'import { x } from "https://esm.example/x.js";\nimport { y } from "./local.ts";\nexport const z: number = x + y;\n',
  );
  await writeFile(join(dir, "local.ts"), "export const y = 1;\n");
  return join(dir, "index.html");
}

/** Every remote reference of the remote fixture, in the order reported. */
const REMOTE_PROBLEMS = [
  "style.css:1: remote reference 'https://fonts.example/css2?family=Inter'",
  "style.css:4: remote reference '//images.example/bg.png'",
  "index.html:7: remote reference 'https://fonts.example'",
  "index.html:8: remote reference 'https://cdn.example/lib.js'",
  "main.ts:1: remote reference 'https://esm.example/x.js'",
  "index.html:13: remote reference '//images.example/logo.png'",
  "index.html:14: remote reference 'HTTPS://images.example/logo@2x.png'",
  "index.html:16: remote reference 'https://images.example/bg.png'",
  "index.html:18: remote reference 'https://esm.example/confetti.js'",
];

/** Writes `text` to `name` in `dir`; the file's path. */
async function fileIn(
  dir: string,
  name: string,
  text: string,
): Promise<string> {
  const path = join(dir, name);
  await writeFile(path, text);
  return path;
}

Deno.test("buildPod() inlines every asset kind of the app fixture", async () => {
  await using dir = await tempDir("pod-build-stub-");
  const stub = await fileIn(
    dir.path,
    "client.js",
    'export async function joinRoom() { return { peerId: "stub-client-marker", leave() {} }; }\n',
  );
  const { html, warnings } = await buildPod(APP, { client: stub });
  const text = new TextDecoder().decode(html);
  assert.deepEqual(warnings, [PRELOAD_WARNING]);

  // Nothing left to load from a file: every URL attribute is a data: URL
  // (the one link is a navigation, kept as written).
  const all = elements(text);
  for (const element of all) {
    for (const name of ["src", "href", "poster", "srcset"]) {
      const value = attribute(element, name);
      if (value === undefined) continue;
      if (element.tagName === "a") {
        assert.equal(value, "https://example.com/about");
        continue;
      }
      const urls = name === "srcset"
        ? parseSrcset(value).map((candidate) => candidate.url)
        : [value];
      for (const url of urls) {
        assert.match(url, /^data:/, `<${element.tagName} ${name}="${url}">`);
      }
    }
    const style = attribute(element, "style");
    if (style?.includes("url(")) assert.match(style, /url\('data:image\/png/);
  }
  assert.equal(all.filter((e) => e.tagName === "link").length, 1); // the icon
  assert.equal(all.filter((e) => e.tagName === "style").length, 3);

  // Each asset's bytes are in the page, decoded from its data: URL.
  const contents = dataUrlContents(text);
  for (const asset of DATA_URL_ASSETS) {
    const bytes = await readFile(join(APP_DIR, asset));
    assert.ok(contents.has(encodeBase64(bytes)), `${asset} is inlined`);
  }
  // The WebAssembly module is inlined as its bytes (esbuild's binary loader).
  const wasm = await readFile(join(APP_DIR, "wasm/add.wasm"));
  assert.ok(text.includes(encodeBase64(wasm)), "add.wasm is inlined");

  // The stylesheets: the @import chains of <link> and <style>, and the CSS
  // the inline module imports.
  for (
    const rule of [
      "#title{color",
      "#logo{border",
      "#inline-style{color",
      "#wasm{color",
    ]
  ) {
    assert.ok(text.includes(rule), `${rule} is in the page`);
  }
  // The scripts: the TypeScript module with its import, the classic script
  // with its global kept, the inline module with the client it imports.
  const scripts = all.filter((e) => e.tagName === "script");
  assert.deepEqual(scripts.map((s) => attribute(s, "type") ?? "classic"), [
    "module",
    "classic",
    "module",
  ]);
  assert.ok(text.includes("Hello, "));
  assert.ok(text.includes("function fixtureAnswer(){return 42}"));
  assert.ok(text.includes("stub-client-marker"));
  // `</script` and `<!--` in strings cannot end the script early: the page
  // parses into exactly those three scripts, and the head ends after them.
  assert.ok(
    text.includes(String.raw`"<\/script>\x3C!-- <script> --><\/SCRIPT >"`),
  );
  assert.ok(
    all.some((e) => e.tagName === "h1" && attribute(e, "id") === "title"),
  );
  // Not signed: no manifest slot.
  assert.ok(!text.includes("__POD_MANIFEST_B64"));
});

Deno.test("buildPod() resolves pod-broker/client to src/client/", async () => {
  await using dir = await tempDir("pod-build-client-");
  const entry = await fileIn(
    dir.path,
    "index.html",
    '<!doctype html><script type="module">import { joinRoom } from "pod-broker/client"; globalThis.join = joinRoom;</script>\n',
  );
  const text = new TextDecoder().decode((await buildPod(entry)).html);
  // The client's own code: its data channel and the signaling frames.
  assert.ok(text.includes("RTCPeerConnection"));
  assert.ok(text.includes('"join"'));
});

Deno.test("buildPod() fetches a client given as an http URL (a registry's copy)", async () => {
  await using dir = await tempDir("pod-build-http-client-");
  await writeFile(
    join(dir.path, "index.html"),
    '<script type="module">import { joinRoom } from "jsr:@pod/broker/client"; globalThis.join = joinRoom;</script>\n',
  );
  const src = new URL("../../src/", import.meta.url).pathname;
  const requested: string[] = [];
  await using server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen() {} },
    async (request) => {
      const path = new URL(request.url).pathname;
      requested.push(path);
      try {
        return new Response(await readFile(join(src, path)));
      } catch {
        return new Response("not found", { status: 404 });
      }
    },
  );
  const client = `http://127.0.0.1:${server.addr.port}/client/mod.ts`;
  const text = new TextDecoder().decode(
    (await buildPod(join(dir.path, "index.html"), { client })).html,
  );
  assert.ok(text.includes("RTCPeerConnection"));
  // The entry and its relative imports, each fetched once.
  assert.ok(requested.length > 1, requested.join(", "));
  assert.equal(requested[0], "/client/mod.ts");
  assert.equal(new Set(requested).size, requested.length);
  assert.ok(requested.every((path) => path.startsWith("/client/")));
});

Deno.test("buildPod() refuses every remote reference, with its file and line", async () => {
  await using dir = await tempDir("pod-build-remote-");
  const entry = await remoteFixture(dir.path);
  const error = await buildPod(entry).then(
    () => assert.fail("built a page with remote references"),
    (error) => error,
  );
  assert.ok(error instanceof BuildError);
  assert.equal(
    error.message,
    `Cannot build '${entry}': ${REMOTE_PROBLEMS.join("; ")} (${REMOTE_HINT})`,
  );
  assert.equal(error.problems.length, REMOTE_PROBLEMS.length);
  assert.deepEqual(error.problems[4], {
    file: "main.ts",
    line: 1,
    message: "remote reference 'https://esm.example/x.js'",
  });
});

Deno.test("buildPod() signs with a seed, and the pod verifies", async () => {
  const seed = await newSeed();
  const { html } = await buildPod(APP, {
    seed,
    name: "Fixture",
    createdAt: "2026-11-23T10:00:00.000Z",
  });
  const { manifest } = await verifyPod(html);
  assert.equal(manifest.name, "Fixture");
  assert.equal(manifest.createdAt, "2026-11-23T10:00:00.000Z");
  assert.equal(
    manifest.publicKey,
    encodeBase64Url(await publicKeyFromSeed(seed)),
  );
  // Unsigned, the same page has no slot at all.
  const unsigned = (await buildPod(APP)).html;
  await assert.rejects(verifyPod(unsigned), { code: "manifest_missing" });
});

Deno.test("buildPod() reports missing files and what it cannot inline, with their lines", async () => {
  await using temp = await tempDir("pod-build-missing-");
  const dir = temp.path;
  const entry = join(dir, "index.html");
  await writeFile(
    entry,
    [
      "<!doctype html>",
      '<img src="missing.png">',
      '<img src="notes.doc">',
      '<iframe src="other.html"></iframe>',
      '<script type="module" src="gone.ts"></script>',
      '<script type="module">import "./nothing.js";</script>',
      '<script type="application/pod-manifest" id="__POD_MANIFEST_B64">e30=</script>',
      "",
    ].join("\n"),
  );
  await writeFile(join(dir, "notes.doc"), "not an image");
  const error = await buildPod(entry).catch((error) => error);
  assert.ok(error instanceof BuildError, String(error));
  assert.deepEqual(
    error.problems.map((p) => `${p.file}:${p.line}: ${p.message}`),
    [
      "index.html:2: cannot read 'missing.png' (ENOENT)",
      "index.html:3: cannot inline 'notes.doc' (unknown file type)",
      "index.html:4: cannot read 'other.html' (ENOENT)",
      "index.html:5: cannot read 'gone.ts' (ENOENT)",
      'index.html:6: Could not resolve "./nothing.js"',
    ],
  );
  // Missing, the page itself.
  await assert.rejects(buildPod(join(dir, "nope.html")), {
    name: "BuildError",
    message: `Cannot build '${
      join(dir, "nope.html")
    }': nope.html: cannot read it (ENOENT)`,
  });
});

Deno.test("buildPod() builds a page the page frames into the frame's srcdoc, as it builds the page", async () => {
  await using temp = await tempDir("pod-build-frame-");
  const dir = temp.path;
  await writeFile(
    join(dir, "tool.js"),
    "window.tool = 'from a file & \"quoted\"';",
  );
  await writeFile(join(dir, "look.css"), "p { color: red }");
  await writeFile(
    join(dir, "framed.html"),
    '<!doctype html><link rel="stylesheet" href="look.css"><script src="tool.js"></script><iframe src="inner.html#x"></iframe>',
  );
  await writeFile(join(dir, "inner.html"), "<p>inner</p>");
  await writeFile(
    join(dir, "index.html"),
    '<!doctype html><iframe sandbox="allow-scripts" src="./framed.html"></iframe>',
  );
  const { html } = await buildPod(join(dir, "index.html"));
  const first = (text: string, tag: string) =>
    elements(text).find((element) => element.tagName === tag)!;
  const textOf = (element: Element) =>
    element.childNodes.map((node) => "value" in node ? node.value : "").join(
      "",
    );
  const frame = first(new TextDecoder().decode(html), "iframe");
  assert.equal(attribute(frame, "src"), undefined);
  assert.equal(attribute(frame, "sandbox"), "allow-scripts");
  const framed = attribute(frame, "srcdoc")!;
  assert.match(textOf(first(framed, "style")), /color:\s*red/);
  assert.match(
    textOf(first(framed, "script")),
    /window\.tool\s*=\s*'from a file & "quoted"'/,
  );
  const inner = first(framed, "iframe");
  assert.equal(attribute(inner, "srcdoc"), "<p>inner</p>");
});

Deno.test("buildPod() refuses a framed page it cannot build, with that page's file and line", async () => {
  await using temp = await tempDir("pod-build-frame-bad-");
  const dir = temp.path;
  await mkdir(join(dir, "sub"));
  await writeFile(join(dir, "sub", "deep.html"), "<p>deep</p>");
  await writeFile(join(dir, "notes.txt"), "text");
  await writeFile(join(dir, "loop.html"), '<iframe src="loop.html"></iframe>');
  await writeFile(
    join(dir, "framed.html"),
    '<!doctype html>\n<img src="missing.png">',
  );
  await writeFile(
    join(dir, "index.html"),
    [
      '<iframe src="framed.html"></iframe>',
      '<iframe src="sub/deep.html"></iframe>',
      '<iframe src="notes.txt"></iframe>',
      '<iframe src="loop.html"></iframe>',
      '<iframe src="https://example.com/"></iframe>',
    ].join("\n"),
  );
  const error = await buildPod(join(dir, "index.html")).catch((e) => e);
  assert.ok(error instanceof BuildError, String(error));
  assert.deepEqual(
    error.problems.map((p) => `${p.file}:${p.line}: ${p.message}`),
    [
      "framed.html:2: cannot read 'missing.png' (ENOENT)",
      "index.html:2: frames 'sub/deep.html', which is not in the page's folder (a framed page is built only from beside the page)",
      "index.html:3: frames 'notes.txt', which is not an HTML page (only a page can be built into a frame)",
      "loop.html:1: frames 'loop.html' inside 3 other frames (the most the build nests)",
      "index.html:5: remote reference 'https://example.com/'",
    ],
  );
  // A frame with its own srcdoc keeps it; its src is dropped with a warning.
  await writeFile(
    join(dir, "index.html"),
    '<iframe srcdoc="<p>mine</p>" src="framed.html"></iframe>',
  );
  const built = await buildPod(join(dir, "index.html"));
  assert.deepEqual(built.warnings, [
    `index.html:1: dropped <iframe src="framed.html"> (its srcdoc is what shows)`,
  ]);
  const frame = elements(new TextDecoder().decode(built.html))
    .find((element) => element.tagName === "iframe")!;
  assert.equal(attribute(frame, "srcdoc"), "<p>mine</p>");
  assert.equal(attribute(frame, "src"), undefined);
});

Deno.test("buildPod() drops a stale manifest slot; signing adds one", async () => {
  await using dir = await tempDir("pod-build-slot-");
  const entry = await fileIn(
    dir.path,
    "index.html",
    '<!doctype html><head><script type="application/pod-manifest" id="__POD_MANIFEST_B64">e30=</script></head><p>hi</p>\n',
  );
  const { html, warnings } = await buildPod(entry);
  assert.equal(
    new TextDecoder().decode(html),
    '<!doctype html><head><link rel="icon" href="data:,"></head><p>hi</p>\n',
  );
  assert.deepEqual(warnings, [
    "index.html:1: dropped a manifest slot (signing adds a fresh one)",
  ]);
  const signed = await buildPod(entry, { seed: await newSeed() });
  assert.equal((await verifyPod(signed.html)).manifest.v, 1);
});

Deno.test("escapeInlineScript() keeps the meaning of strings, templates, regexes and comments", () => {
  const code = String.raw`globalThis.out = [
    "</script><!--", '<\!--', "\\<!--", ${"`<!-- ${1} </SCRIPT>`"},
    /<!--/u.test("<!--"), /[<]!--/.test("<!--"), /\<!--/.test("<!--"),
    /\\<!--/.test("\\<!--"), /\\<!--/.test("<!--"),
  ]; /* <!-- </script> */`;
  const escaped = escapeInlineScript(code);
  assert.doesNotMatch(escaped, /<!--|<\/script/i);
  const run = (source: string) => {
    const scope: { out?: unknown } = {};
    new Function("globalThis", source)(scope);
    return scope.out;
  };
  assert.deepEqual(run(escaped), run(code));
});

Deno.test("runBuild() (the CLI) writes a signed pod, or exits 2 with one line", async () => {
  await using temp = await tempDir("pod-build-cli-");
  const dir = temp.path;
  const key = join(dir, "author.pem");
  await writeFile(key, encodePrivateKeyPem(await newSeed()));
  const out = join(dir, "app.pod.html");

  const built = await cli([
    "build",
    APP,
    "--out",
    out,
    "--key",
    key,
    "--name",
    "CLI",
  ]);
  assert.equal(built.code, 0, built.stderr);
  assert.equal(built.stdout, "");
  const pod = await readFile(out);
  assert.equal((await verifyPod(pod)).manifest.name, "CLI");
  assert.equal(
    built.stderr,
    `pod-broker: warning: ${PRELOAD_WARNING}\npod-broker: built ${out} (${
      pod.length.toLocaleString("en")
    } bytes), signed\n`,
  );

  // Without --out, the page goes to standard output.
  const printed = await cli(["build", APP]);
  assert.equal(printed.code, 0, printed.stderr);
  assert.match(printed.stdout, /^<!doctype html>/);
  // Unsigned: no manifest slot (the inlined client names the slot's id,
  // to read its own manifest, but never writes the slot's opening tag).
  assert.ok(!printed.stdout.includes(SLOT_LITERAL));
  assert.match(printed.stdout, /__POD_MANIFEST_B64/);

  const missing = await cli(["build", join(dir, "missing.html")]);
  assert.deepEqual(missing, {
    code: 2,
    stdout: "",
    stderr: `pod-broker: Cannot build '${
      join(dir, "missing.html")
    }': no such file (see --help)\n`,
  });

  await mkdir(join(dir, "remote"));
  const entry = await remoteFixture(join(dir, "remote"));
  const remote = await cli(["build", entry, "--out", join(dir, "remote.html")]);
  assert.deepEqual(remote, {
    code: 2,
    stdout: "",
    stderr: `pod-broker: Cannot build '${entry}': ${
      REMOTE_PROBLEMS.join("; ")
    } (a pod loads nothing remote: download it into the folder, or npm install it)\n`,
  });
  assert.ok(!existsSync(join(dir, "remote.html")));

  for (
    const [args, message] of [
      [[], "build takes exactly one ENTRY.html (see --help)"],
      [
        [APP, "--name", "X"],
        "Cannot set the manifest's name or time: build signs only with --key FILE (see --help)",
      ],
      [
        [APP, "--key", join(dir, "nope.pem")],
        `Cannot read key '${
          join(dir, "nope.pem")
        }': no such file: create one with pod-broker keygen --out FILE (see --help)`,
      ],
      [
        [APP, "--key", key, "--name", ""],
        "Cannot use --name: it must have 1 to 200 characters (see --help)",
      ],
    ] as const
  ) {
    const run = await cli(["build", ...args]);
    assert.deepEqual(run, {
      code: 2,
      stdout: "",
      stderr: `pod-broker: ${message}\n`,
    });
  }
});

chromiumNotice("the built pod's browser test");

Deno.test({
  name:
    "a built pod runs in Chromium, served by the broker, with no CSP violation",
  ignore: !hasChromium && !inCi,
  async fn() {
    assert.ok(
      hasChromium,
      `${CHROMIUM} is missing: apt-get install -y chromium`,
    );
    const result = await runJourney(
      supportFile("build_journey.ts"),
    );
    assert.equal(result.code, 0, result.output);
    assert.match(result.output, /journey ok/);
  },
});
