// `pod-broker import APP.xdc|DIR` (src/bundler/xdc.ts, xdc_build.ts,
// src/cli/import.ts): each refusal is one line and exit 2 (not a zip, no
// index.html, an entry outside the bundle, too many entries, a zip bomb,
// too large); a real app (poll.xdc) and a vite-built one import, signed
// and named, with the page's webxdc.js replaced by the runtime, `/assets/`
// resolved at the bundle's root and a classic script with a Node-only
// `require` inlined as it is, a classic script the app lacks dropped with a
// warning; webxdc-test, which frames another of its pages, imports with
// that page in the frame's srcdoc; the app's files that scripts may load by
// path are kept for the runtime, bounded. The commands and refusals of
// docs/authors/webxdc.md are run here.
import assert from "node:assert/strict";
import { type DefaultTreeAdapterTypes, parse } from "parse5";
import { mkdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { strToU8, unzipSync, type Zippable, zipSync } from "fflate";
import { cli, MOD, newSeed } from "../support/helpers.ts";
import { blocksRunBy } from "../support/doc_blocks.ts";
import { runCommand, tempDir } from "../contract/_servers.ts";
import { encodePrivateKeyPem } from "../../src/pod/keys.ts";
import { verifyPod } from "../../src/pod/verify.ts";
import { readXdc, XDC_MAX_ENTRIES, XdcError } from "../../src/bundler/xdc.ts";
import { appAssets } from "../../src/bundler/xdc_assets.ts";
import { BuildError, buildPod } from "../../src/bundler/mod.ts";

type ChildNode = DefaultTreeAdapterTypes.ChildNode;
type Document = DefaultTreeAdapterTypes.Document;

const SHARED = new URL("../../../shared/webxdc/", import.meta.url).pathname;
const POLL = `${SHARED}poll.xdc`;
const WEBXDC_TEST = `${SHARED}webxdc-test.xdc`;

const PAGE = `<!doctype html><html><head><meta charset=utf-8>
<script src="webxdc.js"></script></head><body><p>app</p>
<script>window.webxdc.setUpdateListener(() => {});</script></body></html>`;

/** Writes a zip of `files` into `dir` and returns its path. */
async function xdc(dir: string, name: string, files: Zippable) {
  const path = join(dir, name);
  await writeFile(path, zipSync(files));
  return path;
}

/** Runs `import` and checks it failed with exit 2 and one line matching `why`. */
async function refused(path: string, why: RegExp) {
  const run = await cli(["import", path]);
  assert.equal(run.code, 2, run.stderr);
  assert.equal(run.stdout, "");
  assert.equal(run.stderr.trimEnd().split("\n").length, 1, run.stderr);
  assert.match(run.stderr, /^pod-broker: Cannot import '/);
  assert.match(run.stderr, why);
}

Deno.test("import: refusals are one line with exit 2: not a zip, no index.html, an entry outside the bundle", async () => {
  await using dir = await tempDir();
  const notZip = join(dir.path, "text.xdc");
  await writeFile(notZip, "<!doctype html>not a zip");
  await refused(notZip, /not a zip/);
  await refused(
    await xdc(dir.path, "empty.xdc", { "manifest.toml": strToU8("name='x'") }),
    /no index\.html/,
  );
  for (const name of ["../evil.js", "/etc/x", "a\\b.js", "a/../../b"]) {
    const path = await xdc(dir.path, "out.xdc", {
      "index.html": strToU8(PAGE),
      [name]: strToU8("x"),
    });
    await refused(path, /outside the bundle/);
  }
});

Deno.test("import: refusals are one line with exit 2: too many entries, a zip bomb, a header that lies, too large", async () => {
  await using dir = await tempDir();
  const many: Zippable = { "index.html": strToU8(PAGE) };
  for (let i = 0; i < XDC_MAX_ENTRIES; i++) many[`f/${i}.txt`] = strToU8("x");
  await refused(
    await xdc(dir.path, "many.xdc", many),
    /more than 4096 entries/,
  );
  // 8 MiB of zeros deflate to about 8 KiB: a ratio of 1,000.
  const bomb = await xdc(dir.path, "bomb.xdc", {
    "index.html": strToU8(PAGE),
    "zeros.png": new Uint8Array(8 * 1024 * 1024),
  });
  await refused(bomb, /inflates more than 100 times/);
  // A header that says 10 bytes for 200 KiB: stopped while inflating.
  const liar = zipSync({
    "index.html": strToU8(PAGE),
    "big.txt": strToU8("ab".repeat(100 * 1024)),
  }, { level: 1 });
  const at = findLocalHeader(liar, "big.txt");
  new DataView(liar.buffer).setUint32(at + 22, 10, true);
  await writeFile(join(dir.path, "liar.xdc"), liar);
  await refused(join(dir.path, "liar.xdc"), /than its header says/);
  // Stored (not deflated) entries past 50 MiB in all.
  const large: Zippable = { "index.html": strToU8(PAGE) };
  for (let i = 0; i < 6; i++) {
    large[`asset${i}.bin`] = [new Uint8Array(9 * 1024 * 1024), { level: 0 }];
  }
  await refused(await xdc(dir.path, "large.xdc", large), /too large/);
  // Under the bound zipped, over it inflated: counted while inflating.
  const hex = Array.from(
    { length: 4 },
    () => crypto.getRandomValues(new Uint8Array(1 << 16)),
  ).flatMap((bytes) => [...bytes])
    .map((byte) => byte.toString(16).padStart(2, "0"))
    .join(""); // 512 KiB that deflate to about half
  const zipped = zipSync({ "a.txt": strToU8(hex), "b.txt": strToU8(hex) });
  const bound = 800 * 1024;
  assert.ok(zipped.length < bound);
  assert.throws(
    () => readXdc("app.xdc", zipped, bound),
    (error: Error) =>
      error instanceof XdcError &&
      error.message ===
        "Cannot import 'app.xdc': it is too large: more than 819,200 bytes inflated",
  );
});

/** The offset of the local file header of `name` in a zip. */
function findLocalHeader(zip: Uint8Array, name: string): number {
  for (let at = 0; at < zip.length - 30; at++) {
    if (
      zip[at] === 0x50 && zip[at + 1] === 0x4b && zip[at + 2] === 3 &&
      zip[at + 3] === 4 &&
      new TextDecoder().decode(zip.subarray(at + 30, at + 30 + name.length)) ===
        name
    ) return at;
  }
  throw new Error(`no local header for ${name}`);
}

Deno.test("import: poll.xdc becomes a signed pod named by its manifest, its webxdc.js the runtime; --name overrides", async () => {
  await using dir = await tempDir();
  const key = join(dir.path, "author.pem");
  await writeFile(key, encodePrivateKeyPem(await newSeed()));
  const out = join(dir.path, "poll.pod.html");
  const run = await cli(["import", POLL, "--key", key, "--out", out]);
  assert.equal(run.code, 0, run.stderr);
  assert.match(run.stderr, /imported .* signed, named 'Poll'/);
  const bytes = await readFile(out);
  const pod = await verifyPod(bytes);
  assert.equal(pod.manifest.name, "Poll");
  const html = new TextDecoder().decode(bytes);
  assert.doesNotMatch(html, /src="webxdc\.js"/);
  assert.match(html, /sendUpdateMaxSize/, "the runtime is inlined");
  const renamed = await cli(["import", POLL, "--key", key, "--name", "Vote"]);
  assert.equal(renamed.code, 0, renamed.stderr);
  assert.equal(
    (await verifyPod(new TextEncoder().encode(renamed.stdout))).manifest.name,
    "Vote",
  );
});

Deno.test("import: webxdc-test.xdc imports unmodified: the page it frames becomes the frame's srcdoc, and no warning", async () => {
  await using dir = await tempDir();
  const out = join(dir.path, "test.pod.html");
  const run = await cli(["import", WEBXDC_TEST, "--out", out]);
  assert.equal(run.code, 0, run.stderr);
  assert.doesNotMatch(run.stderr, /warning/, "its pages are all in the pod");
  const frames: Record<string, string>[] = [];
  const visit = (node: ChildNode | Document) => {
    if ("tagName" in node && node.tagName === "iframe") {
      frames.push(Object.fromEntries(node.attrs.map((a) => [a.name, a.value])));
    }
    if ("childNodes" in node) node.childNodes.forEach(visit);
  };
  visit(parse(await readFile(out, "utf8")));
  const framed = frames.filter((frame) => "srcdoc" in frame);
  assert.equal(framed.length, 1);
  assert.equal(framed[0]!.sandbox, "allow-scripts");
  assert.equal(framed[0]!.src, undefined);
  const srcdoc = framed[0]!.srcdoc!;
  // The framed page's own scripts, inlined: its first line, and webrtc.js.
  assert.match(srcdoc, /globalThis\.__capturedWebRTCObj = RTCPeerConnection;/);
  assert.match(srcdoc, /webrtc-sidechannel/);
  assert.doesNotMatch(srcdoc, /src="js\//);
});

Deno.test("import: the app's other pages are built into templates, with a webxdc.js that takes the page's; a link to a page the app lacks is warned about; a page that cannot be built is left out with a warning", async () => {
  await using dir = await tempDir();
  const page = PAGE.replace(
    "<p>app</p>",
    '<p><a href="page.html#top">next</a> <a href="#here">here</a> <a href="/gone.html">gone</a></p>',
  );
  const path = await xdc(dir.path, "links.xdc", {
    "index.html": strToU8(page),
    "page.html": strToU8(
      '<!doctype html><script src="webxdc.js"></script><script src="tool.js"></script><p>another page</p>',
    ),
    "tool.js": strToU8("window.tool = 1;"),
    "broken.html": strToU8(
      '<!doctype html>\n<script src="https://cdn.example/x.js"></script>',
    ),
    "notes.txt": strToU8("not a page"),
  });
  const out = join(dir.path, "out.html");
  const run = await cli(["import", path, "--out", out]);
  assert.equal(run.code, 0, run.stderr);
  assert.equal(
    run.stderr.split("\n").filter((line) => line.includes("warning")).join(
      "\n",
    ),
    [
      'pod-broker: warning: index.html:2: <a href="/gone.html"> leads to a page the app does not have',
      "pod-broker: warning: broken.html:2: remote reference 'https://cdn.example/x.js' (so the pod goes without broken.html)",
    ].join("\n"),
  );
  const templates: Record<string, string>[] = [];
  const visit = (node: ChildNode | Document) => {
    if ("tagName" in node && node.tagName === "template") {
      const attrs = Object.fromEntries(
        node.attrs.map((a) => [a.name, a.value]),
      );
      const frame = (node as DefaultTreeAdapterTypes.Template).content
        .childNodes[0] as DefaultTreeAdapterTypes.Element;
      templates.push({
        ...attrs,
        frame: frame.tagName,
        srcdoc: frame.attrs.find((a) => a.name === "srcdoc")!.value,
      });
    }
    if ("childNodes" in node) node.childNodes.forEach(visit);
  };
  visit(parse(await readFile(out, "utf8")));
  assert.deepEqual(templates.map((t) => [t["data-pod-page"], t.frame]), [[
    "page.html",
    "iframe",
  ]]);
  const built = templates[0]!.srcdoc!;
  assert.match(built, /<p>another page<\/p>/);
  assert.match(built, /window\.tool = 1;/);
  assert.match(
    built,
    /<script>parent\[Symbol\.for\("pod-broker\.webxdc\.page"\)\]\(window\);<\/script>/,
  );
  // Bounded: an app with more than 64 other pages is refused, on one line.
  const many = await xdc(dir.path, "many.xdc", {
    "index.html": strToU8(PAGE),
    ...Object.fromEntries(
      Array.from({ length: 65 }, (_, i) => [`p${i}.html`, strToU8("<p>")]),
    ),
  });
  const refused = await cli(["import", many]);
  assert.equal(refused.code, 2, refused.stderr);
  assert.equal(
    refused.stderr,
    `pod-broker: Cannot import '${many}': it has more than 64 pages\n`,
  );
});

const VITE_PAGE = `<!doctype html><html><head><meta charset=utf-8>
<script src="webxdc.js"></script>
<script type="module" crossorigin src="/assets/index-Ab12.js"></script>
<link rel="stylesheet" href="/assets/index-Cd34.css">
</head><body><div id="app"></div><script src="ui.js"></script></body></html>`;
const UI_SCRIPT = `// a classic script that also runs under Node
if (typeof module !== "undefined" && module.exports) {
  const path = require('path');
  module.exports = { here: path.join("a", "b") };
} else { window.uiReady = true; }
`;

Deno.test("import: a vite-built app (/assets/ at the bundle's root) and a classic script with a Node-only require, from a .xdc and from its folder", async () => {
  await using dir = await tempDir();
  const files: Record<string, string> = {
    "index.html": VITE_PAGE,
    "manifest.toml": 'name = "Vite app" # a comment\n[extra]\nname = "no"\n',
    "assets/index-Ab12.js":
      'document.querySelector("#app").textContent = "vite";',
    "assets/index-Cd34.css": "#app { background: url(/assets/dot.svg); }",
    "assets/dot.svg": "<svg xmlns='http://www.w3.org/2000/svg'/>",
    "ui.js": UI_SCRIPT,
    // An app's own webxdc.js (a messenger's) is replaced all the same.
    "webxdc.js": "window.webxdc = 'the messenger';",
  };
  const zipped = await xdc(
    dir.path,
    "vite.xdc",
    Object.fromEntries(
      Object.entries(files).map(([name, text]) => [name, strToU8(text)]),
    ),
  );
  const folder = join(dir.path, "vite");
  for (const [name, text] of Object.entries(files)) {
    await mkdir(join(folder, name, ".."), { recursive: true });
    await writeFile(join(folder, name), text);
  }
  const key = join(dir.path, "author.pem");
  await writeFile(key, encodePrivateKeyPem(await newSeed()));
  for (const source of [zipped, folder]) {
    const run = await cli(["import", source, "--key", key]);
    assert.equal(run.code, 0, run.stderr);
    const pod = await verifyPod(new TextEncoder().encode(run.stdout));
    assert.equal(pod.manifest.name, "Vite app");
    const html = run.stdout;
    assert.ok(html.includes(UI_SCRIPT.trim()), "the classic script as it is");
    assert.match(html, /textContent="vite"/, "the module bundled");
    assert.match(html, /url\("?data:image\/svg\+xml/);
    assert.doesNotMatch(html, /the messenger|src="/);
  }
});

const DOC = "docs/authors/webxdc.md";

Deno.test("import: the commands of docs/authors/webxdc.md work as it says, and its refusals are the CLI's words", async () => {
  await using dir = await tempDir();
  await writeFile(join(dir.path, "poll.xdc"), await readFile(POLL));
  await writeFile(
    join(dir.path, "author.pem"),
    encodePrivateKeyPem(await newSeed()),
  );
  for (const [name, bytes] of Object.entries(unzipSync(await readFile(POLL)))) {
    await mkdir(join(dir.path, "app-folder", name, ".."), { recursive: true });
    await writeFile(join(dir.path, "app-folder", name), bytes);
  }
  const [commands, refusals] = await blocksRunBy(DOC, "sh", import.meta.url)
    .then(async (sh) => [
      sh,
      await blocksRunBy(DOC, "text", import.meta.url),
    ]);
  const lines = commands!.flatMap((block) => block.text.split("\n"))
    .filter((line) => line.startsWith("pod-broker import"));
  assert.equal(lines.length, 3);
  for (const line of lines) {
    const args = [...line.replace(/#.*$/, "").matchAll(/"([^"]*)"|(\S+)/g)]
      .map((match) => match[1] ?? match[2]!).slice(1);
    const run = await runCommand(Deno.execPath(), ["run", "-A", MOD, ...args], {
      cwd: dir.path,
    });
    assert.equal(run.code, 0, `${line}: ${run.stderr}`);
    const out = join(dir.path, args[args.indexOf("--out") + 1]!);
    const { manifest } = await verifyPod(await readFile(out));
    assert.equal(
      manifest.name,
      line.includes("Lunch poll") ? "Lunch poll" : "Poll",
    );
  }
  // Each documented refusal, from a bundle named app.xdc made to earn it.
  const bundles: (Uint8Array | Zippable)[] = [
    strToU8("<!doctype html>not a zip"),
    { "manifest.toml": strToU8("name='x'") },
    { "index.html": strToU8(PAGE), "../evil.js": strToU8("x") },
    Object.fromEntries(
      Array.from(
        { length: XDC_MAX_ENTRIES + 1 },
        (_, i) => [`${i}`, strToU8("")],
      ),
    ),
    { "index.html": strToU8(PAGE), "zeros.png": new Uint8Array(1 << 23) },
    {
      "index.html": strToU8(
        PAGE.replace(
          "<p>app</p>",
          '<script src="https://cdn.example/lib.js"></script>',
        ),
      ),
    },
  ];
  const said: string[] = [];
  for (const bundle of bundles) {
    await writeFile(
      join(dir.path, "app.xdc"),
      bundle instanceof Uint8Array ? bundle : zipSync(bundle),
    );
    const run = await runCommand(
      Deno.execPath(),
      ["run", "-A", MOD, "import", "app.xdc"],
      { cwd: dir.path },
    );
    assert.equal(run.code, 2, run.stderr);
    said.push(run.stderr.trimEnd());
  }
  assert.deepEqual(said, refusals![0]!.text.trimEnd().split("\n"));
});

Deno.test("import: a classic script the app lacks is dropped with a warning (a messenger answers 404 and the page runs on); build still refuses it", async () => {
  await using dir = await tempDir();
  const page = PAGE.replace(
    "<p>app</p>",
    '<p>app</p><script src="lib/gone.js"></script>',
  );
  const path = await xdc(dir.path, "gone.xdc", { "index.html": strToU8(page) });
  const out = join(dir.path, "out.html");
  const run = await cli(["import", path, "--out", out]);
  assert.equal(run.code, 0, run.stderr);
  assert.match(
    run.stderr,
    /^pod-broker: warning: index\.html:2: dropped <script src="lib\/gone\.js">: the app has no such file\n/,
  );
  assert.doesNotMatch(await readFile(out, "utf8"), /gone\.js/);
  await writeFile(join(dir.path, "index.html"), page);
  await assert.rejects(
    buildPod(join(dir.path, "index.html")),
    (error) =>
      error instanceof BuildError &&
      error.problems.some((p) =>
        /cannot read 'lib\/gone\.js' \(ENOENT\)/.test(p.message)
      ),
  );
});

Deno.test("import: the app's files that scripts may load by path are kept for the runtime, bounded; pages, code, hidden files and node_modules are not", async () => {
  await using dir = await tempDir();
  const files: Record<string, string> = {
    "index.html": PAGE,
    "page.html": "<p>another page</p>",
    "manifest.toml": 'name = "x"',
    "app.js": "go()",
    "style.css": "p{}",
    "img/a b.svg": "<svg/>",
    "img/dot.PNG": "png",
    "data/words.json": "{}",
    "sounds/beep.mp3": "mp3",
    "lib.wasm": "wasm",
    "notes.txt": "text",
    ".git/x.png": "hidden",
    "node_modules/y.png": "package",
  };
  for (const [name, text] of Object.entries(files)) {
    await mkdir(join(dir.path, name, ".."), { recursive: true });
    await writeFile(join(dir.path, name), text);
  }
  const assets = await appAssets(dir.path, 1_000);
  assert.deepEqual(Object.keys(assets).sort(), [
    "data/words.json",
    "img/a b.svg",
    "img/dot.PNG",
    "lib.wasm",
    "notes.txt",
    "sounds/beep.mp3",
  ]);
  assert.deepEqual(assets["img/a b.svg"], ["image/svg+xml", btoa("<svg/>")]);
  // The pod carries them for its runtime.
  const out = join(dir.path, "out.html");
  const run = await cli(["import", dir.path, "--out", out]);
  assert.equal(run.code, 0, run.stderr);
  const pod = await readFile(out, "utf8");
  assert.match(pod, /Symbol\.for\("pod-broker\.webxdc\.assets"\)/);
  assert.match(pod, /"data\/words\.json":\["application\/json","e30="\]/);
  // Bounded: bytes, and files.
  await assert.rejects(appAssets(dir.path, 20), {
    name: "XdcError",
    message: "its files hold more than 20 bytes",
  });
  // A key is never kept.
  await writeFile(
    join(dir.path, "data", "keys.txt"),
    encodePrivateKeyPem(await newSeed()),
  );
  await assert.rejects(appAssets(dir.path, 10_000), {
    name: "XdcError",
    message:
      "'data/keys.txt' holds a private key: a pod never contains a key (keep keys outside the pod's folder)",
  });
  await using many = await tempDir();
  for (let i = 0; i <= XDC_MAX_ENTRIES; i++) {
    await writeFile(join(many.path, `${i}.txt`), "");
  }
  await assert.rejects(appAssets(many.path, 1_000), {
    name: "XdcError",
    message: `it has more than ${XDC_MAX_ENTRIES} files`,
  });
});
