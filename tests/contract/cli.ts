// The `pod-broker` command line: Deno's (`deno run -A src/mod.ts`) and the
// npm package's bin on Node 22. Runs on both (see _suite.ts).
import assert from "node:assert/strict";
import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { upload } from "./_pods.ts";
import { runCli, startServer, tempDir } from "./_servers.ts";
import { test } from "./_suite.ts";

test("pod-broker --help and --version answer on stdout, with nothing on stderr", async (api) => {
  const help = await runCli(api, ["--help"]);
  assert.equal(help.code, 0, help.stderr);
  assert.match(help.stdout, /^pod-broker \d+\.\d+\.\d+/);
  assert.match(help.stdout, /--registry memory\|sqlite/);
  // No ExperimentalWarning: node:sqlite is loaded only for the SQLite registry.
  assert.equal(help.stderr, "");
  const version = await runCli(api, ["--version"]);
  assert.equal(version.code, 0, version.stderr);
  assert.equal(version.stdout.trim(), api.version);
});

test("pod-broker build bundles a folder with the client into a signed pod the broker takes", async (api) => {
  await using dir = await tempDir();
  const at = (name: string) => join(dir.path, name);
  await writeFile(
    at("index.html"),
    `<!doctype html><html><head><title>t</title>
<link rel="stylesheet" href="style.css">
<script type="module" src="app.ts"></script></head>
<body><h1>hi</h1></body></html>`,
  );
  await writeFile(at("style.css"), "h1 { color: rgb(1, 2, 3); }\n");
  await writeFile(
    at("app.ts"),
    `import { joinRoom } from "pod-broker/client";
const label: string = "built-marker";
document.title = label;
Object.assign(globalThis, { joinRoom });
`,
  );
  const keygen = await runCli(api, ["keygen", "--out", at("key.pem")]);
  assert.equal(keygen.code, 0, keygen.stderr);
  const built = await runCli(api, [
    "build",
    at("index.html"),
    "--key",
    at("key.pem"),
    "--name",
    "Built",
    "--out",
    at("out.html"),
  ]);
  assert.equal(built.code, 0, built.stderr);
  const html = new Uint8Array(await readFile(at("out.html")));
  const text = new TextDecoder().decode(html);
  assert.match(text, /#010203|rgb\(1, ?2, ?3\)/);
  assert.match(text, /\/signal/, "the client is bundled");
  assert.match(text, /built-marker/);
  assert.doesNotMatch(text, /src="app\.ts"|href="style\.css"/);
  const { manifest } = await api.verifyPod(html);
  assert.equal(manifest.name, "Built");
  await using t = await startServer(api);
  const uploaded = await upload(t.url, html);
  assert.equal(uploaded.status, 201);
  await uploaded.body?.cancel();

  // A remote reference is refused with its file and line, and nothing written.
  await writeFile(
    at("style.css"),
    "@import url(https://fonts.example/a.css);\n",
  );
  const refused = await runCli(api, [
    "build",
    at("index.html"),
    "--out",
    at("no.html"),
  ]);
  assert.equal(refused.code, 2);
  assert.match(
    refused.stderr,
    /style\.css:1: remote reference 'https:\/\/fonts\.example\/a\.css'/,
  );
  assert.equal(refused.stderr.trim().split("\n").length, 1);
});
