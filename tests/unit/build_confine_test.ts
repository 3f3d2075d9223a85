// `pod-broker build` reads nothing outside the page's folder (links
// resolved), but packages under node_modules, each kept in its own tree;
// and it never inlines a key. Each case runs the CLI on a folder made here
// and checks the exit code, the one line on standard error, and that the
// outside file's marker is nowhere in what was written.
import assert from "node:assert/strict";
import { mkdir, symlink, writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { keyProblem } from "../../src/bundler/confine.ts";
import { encodePrivateKeyPem } from "../../src/pod/keys.ts";
import { MOD, newSeed } from "../support/helpers.ts";
import { tempDir } from "../contract/_servers.ts";

const OUTSIDE_MARKER = "outside-marker-5f1c";
const ENV_MARKER = "environ-marker-9b2e";
const OUTSIDE_HINT =
  " (a pod is built only from the files in its page's folder, links resolved, and the packages in node_modules: copy the file in)";
const KEY_REFUSAL =
  "a pod never contains a key (keep keys outside the pod's folder)";

/** Writes `files` (path to text, or `-> target` for a symbolic link) under `dir`. */
async function writeTree(
  dir: string,
  files: Record<string, string>,
): Promise<void> {
  for (const [name, content] of Object.entries(files)) {
    const path = join(dir, name);
    await mkdir(dirname(path), { recursive: true });
    if (content.startsWith("-> ")) await symlink(content.slice(3), path);
    else await writeFile(path, content);
  }
}

/** `pod-broker build pod/index.html` in a folder holding `files`, a secret beside `pod/`. */
async function build(files: Record<string, string>) {
  await using temp = await tempDir("pod-build-confine-");
  await writeTree(temp.path, {
    "outside.txt": `${OUTSIDE_MARKER}\n`,
    "outside.svg":
      `<svg xmlns="http://www.w3.org/2000/svg"><!--${OUTSIDE_MARKER}--></svg>`,
    ...files,
  });
  const { code, stdout, stderr } = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", MOD, "build", "pod/index.html"],
    cwd: temp.path,
    stdin: "null",
    env: { NO_COLOR: "1", POD_BUILD_TEST_SECRET: ENV_MARKER },
  }).output();
  const out = new TextDecoder().decode(stdout);
  // The marker, also as it would stand in a data: URL.
  for (const marker of [OUTSIDE_MARKER, ENV_MARKER]) {
    assert.ok(!out.includes(marker), `${marker} was inlined`);
    assert.ok(!atobAll(out).includes(marker), `${marker} was inlined`);
  }
  return { code, stdout: out, stderr: new TextDecoder().decode(stderr) };
}

/** Every base64 data: URL of `text`, decoded. */
function atobAll(text: string): string {
  return [...text.matchAll(/;base64,([A-Za-z0-9+/=]+)/g)]
    .map(([, body]) => atob(body!)).join("\n");
}

const PAGE_WITH = (body: string) =>
  `<!doctype html><title>t</title>\n${body}\n`;
const SCRIPT_PAGE = PAGE_WITH('<script type="module" src="app.ts"></script>');

/** Asserts a refusal: exit 2, nothing on standard output, one line. */
function assertRefused(
  run: { code: number; stdout: string; stderr: string },
  line: string,
): void {
  assert.deepEqual(run, {
    code: 2,
    stdout: "",
    stderr: `pod-broker: Cannot build 'pod/index.html': ${line}\n`,
  });
}

Deno.test("build refuses ../x: a page's image and a script's import outside its folder", async () => {
  const run = await build({
    "pod/index.html": PAGE_WITH(
      '<img src="../outside.svg">\n<script type="module" src="app.ts"></script>',
    ),
    "pod/app.ts": 'import text from "../outside.txt";\nconsole.log(text);\n',
  });
  assertRefused(
    run,
    `index.html:2: '../outside.svg' is outside the page's folder; app.ts:1: '../outside.txt' is outside the page's folder${OUTSIDE_HINT}`,
  );
});

Deno.test("build refuses /../x: a root-relative path climbing out of the folder", async () => {
  const run = await build({
    "pod/index.html": PAGE_WITH(
      '<link rel="stylesheet" href="/../outside.css">\n<script type="module" src="app.ts"></script>',
    ),
    "outside.css": `body::after { content: "${OUTSIDE_MARKER}" }`,
    "pod/app.ts": 'import text from "/../outside.txt";\nconsole.log(text);\n',
  });
  assertRefused(
    run,
    `index.html:2: '/../outside.css' is outside the page's folder; app.ts:1: '/../outside.txt' is outside the page's folder${OUTSIDE_HINT}`,
  );
});

Deno.test("build refuses a symbolic link out of the folder, from the page and from a script", async () => {
  const run = await build({
    "pod/index.html": PAGE_WITH(
      '<img src="logo.svg">\n<script type="module" src="app.ts"></script>',
    ),
    "pod/logo.svg": "-> ../outside.svg",
    "pod/notes.txt": "-> ../outside.txt",
    "pod/app.ts": 'import notes from "./notes.txt";\nconsole.log(notes);\n',
  });
  assertRefused(
    run,
    `index.html:2: 'logo.svg' is outside the page's folder; app.ts:1: './notes.txt' is outside the page's folder${OUTSIDE_HINT}`,
  );
});

Deno.test("build refuses a symbolic link to /proc/self/environ (the build's environment)", async () => {
  const run = await build({
    "pod/index.html": SCRIPT_PAGE,
    "pod/env.txt": "-> /proc/self/environ",
    "pod/app.ts": 'import env from "./env.txt";\nconsole.log(env);\n',
  });
  assertRefused(
    run,
    `app.ts:1: './env.txt' is outside the page's folder${OUTSIDE_HINT}`,
  );
});

Deno.test('build refuses import ... with { type: "text" } of a file outside the folder', async () => {
  const run = await build({
    "pod/index.html": SCRIPT_PAGE,
    "secret.conf": `token = ${OUTSIDE_MARKER}\n`,
    "pod/app.ts":
      'import conf from "../secret.conf" with { type: "text" };\nconsole.log(conf);\n',
  });
  assertRefused(
    run,
    `app.ts:1: '../secret.conf' is outside the page's folder${OUTSIDE_HINT}`,
  );
});

Deno.test("build refuses a key file inside the folder, by its name and by its content", async () => {
  const pem = encodePrivateKeyPem(await newSeed());
  const svgKey =
    `<svg xmlns="http://www.w3.org/2000/svg"><!--\n${pem}--></svg>`;
  const run = await build({
    "pod/index.html": PAGE_WITH(
      '<img src="badge.svg">\n<script type="module" src="app.ts"></script>',
    ),
    "pod/author.pem": pem,
    "pod/notes.txt": `my notes\n${pem}`,
    "pod/badge.svg": svgKey,
    "pod/app.ts": [
      'import key from "./author.pem" with { type: "text" };',
      'import notes from "./notes.txt";',
      "console.log(key, notes);",
      "",
    ].join("\n"),
  });
  assert.equal(run.code, 2);
  assert.ok(!run.stdout.includes("PRIVATE KEY") && run.stdout === "");
  assertRefused(
    run,
    `index.html:2: 'badge.svg' holds a private key: ${KEY_REFUSAL}; app.ts:1: './author.pem' is named like a key file: ${KEY_REFUSAL}; app.ts:2: 'notes.txt' holds a private key: ${KEY_REFUSAL}`,
  );
});

Deno.test("build reads packages in node_modules (linked as pnpm and Deno lay them out, or up the tree), each in its own tree", async () => {
  const ok = await build({
    "pod/index.html": SCRIPT_PAGE,
    "pod/app.ts": [
      'import { a } from "linked";',
      'import { b } from "@scope/up";',
      "console.log(a, b);",
      "",
    ].join("\n"),
    "pod/node_modules/.store/linked@1/node_modules/linked/package.json":
      '{ "name": "linked", "main": "lib/a.js" }',
    "pod/node_modules/.store/linked@1/node_modules/linked/lib/a.js":
      'export { a } from "./inner.js";',
    "pod/node_modules/.store/linked@1/node_modules/linked/lib/inner.js":
      'export const a = "linked-package-ok";',
    "pod/node_modules/linked": "-> .store/linked@1/node_modules/linked",
    "node_modules/@scope/up/package.json":
      '{ "name": "@scope/up", "main": "index.js" }',
    "node_modules/@scope/up/index.js": 'export const b = "up-package-ok";',
  });
  assert.equal(ok.code, 0, ok.stderr);
  assert.match(ok.stdout, /linked-package-ok/);
  assert.match(ok.stdout, /up-package-ok/);

  const escaping = await build({
    "pod/index.html": SCRIPT_PAGE,
    "pod/app.ts": 'import { x } from "leaky";\nconsole.log(x);\n',
    "node_modules/leaky/package.json": '{ "name": "leaky", "main": "x.js" }',
    "node_modules/leaky/x.js":
      'export { default as x } from "../../outside.txt";',
  });
  assert.equal(escaping.code, 2);
  assert.match(
    escaping.stderr,
    /: '\.\.\/\.\.\/outside\.txt' is outside the package that imports it/,
  );
  assert.equal(escaping.stderr.split("\n").length, 2, escaping.stderr);
});

Deno.test("keyProblem() finds PEM and PuTTY private keys, not a library that names the PEM header", async () => {
  const pem = encodePrivateKeyPem(await newSeed());
  const bytes = (text: string) => new TextEncoder().encode(text);
  assert.equal(
    keyProblem("a.js", bytes(`x=1;\n${pem}`)),
    "holds a private key",
  );
  const encrypted =
    "-----BEGIN RSA PRIVATE KEY-----\nProc-Type: 4,ENCRYPTED\nDEK-Info: AES-128-CBC,0A\n\nMIIEpAIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gun\n";
  assert.equal(keyProblem("a.txt", bytes(encrypted)), "holds a private key");
  assert.equal(
    keyProblem("k.txt", bytes("PuTTY-User-Key-File-3: ssh-ed25519\n")),
    "holds a private key",
  );
  assert.equal(keyProblem("id_ed25519"), "is named like a key file");
  assert.equal(keyProblem("Server.KEY"), "is named like a key file");
  // A parser's constant is no key: no base64 body follows the header.
  const library =
    'const HEADER = "-----BEGIN PRIVATE KEY-----\\n"; export function parse(pem) { return pem.slice(HEADER.length); }';
  assert.equal(keyProblem("pem.js", bytes(library)), undefined);
  assert.equal(keyProblem("logo.png", new Uint8Array(4096)), undefined);
});
