// `pod-broker publish APP.xdc` (src/cli/publish.ts through import.ts's
// importApp): a real app (poll.xdc, unmodified) is built as `import` builds
// it, signed and uploaded to a real broker, named by its manifest; the
// content is byte for byte what `import` makes; a bundle that `import`
// refuses is refused with the same one line and exit 2, and nothing
// reaches the broker. The publish and dev commands of
// docs/authors/webxdc.md, and the webxdc commands of README.md's tour, are
// run here.
import assert from "node:assert/strict";
import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { strToU8, zipSync } from "fflate";
import { cli, MOD, newSeed, startServer } from "../support/helpers.ts";
import { blocksRunBy } from "../support/doc_blocks.ts";
import { startDev } from "../support/dev_process.ts";
import { runCommand, tempDir } from "../contract/_servers.ts";
import { encodePrivateKeyPem } from "../../src/pod/keys.ts";
import { verifyPod } from "../../src/pod/verify.ts";
import type { Registry } from "../../src/registries/types.ts";

const POLL = "/work/shared/webxdc/poll.xdc";

/** The ids of the pods a registry holds. */
async function storedIds(registry: Registry): Promise<string[]> {
  const ids: string[] = [];
  for await (const record of registry.listPods!()) ids.push(record.id);
  return ids;
}

/** A key file in `dir`. */
async function keyFile(dir: string): Promise<string> {
  const path = join(dir, "author.pem");
  await writeFile(path, encodePrivateKeyPem(await newSeed()));
  return path;
}

Deno.test("publish APP.xdc builds the app as import does, signs it and uploads it, named by its manifest", async () => {
  await using broker = await startServer();
  await using dir = await tempDir();
  const key = await keyFile(dir.path);
  const run = await cli([
    "publish",
    "--broker",
    broker.url,
    "--key",
    key,
    POLL,
  ]);
  assert.equal(run.code, 0, run.stderr);
  const url = run.stdout.trim();
  assert.match(url, new RegExp(`^${broker.url}/[A-Za-z0-9]{12}$`));
  const meta = await (await fetch(`${url}/meta`)).json();
  assert.equal(meta.name, "Poll");
  const served = new Uint8Array(await (await fetch(url)).arrayBuffer());
  const pod = await verifyPod(served);
  const html = new TextDecoder().decode(served);
  assert.doesNotMatch(html, /src="webxdc\.js"/);
  assert.match(html, /sendUpdateMaxSize/, "the webxdc runtime is inlined");
  // One code path: the same content as `import` signed with the same key.
  const out = join(dir.path, "poll.pod.html");
  const imported = await cli(["import", POLL, "--key", key, "--out", out]);
  assert.equal(imported.code, 0, imported.stderr);
  const local = await verifyPod(await readFile(out));
  assert.equal(pod.contentSha256, local.contentSha256);
  assert.equal(pod.manifest.publicKey, local.manifest.publicKey);

  // --name wins over the manifest's; no key: a fresh one, said so.
  const named = await cli([
    "publish",
    "--broker",
    broker.url,
    "--name",
    "Lunch poll",
    POLL,
  ]);
  assert.equal(named.code, 0, named.stderr);
  assert.match(named.stderr, /signed with a fresh key/);
  const renamed = await (await fetch(`${named.stdout.trim()}/meta`)).json();
  assert.equal(renamed.name, "Lunch poll");
});

Deno.test("publish APP.xdc --update replaces the pod with the app, keeping its URL", async () => {
  await using broker = await startServer();
  await using dir = await tempDir();
  const key = await keyFile(dir.path);
  const page = join(dir.path, "page.html");
  await writeFile(page, "<!doctype html><title>Before</title><p>before</p>");
  const first = await cli([
    "publish",
    "--broker",
    broker.url,
    "--key",
    key,
    page,
  ]);
  assert.equal(first.code, 0, first.stderr);
  const url = first.stdout.trim();
  const id = url.slice(url.lastIndexOf("/") + 1);
  const run = await cli([
    "publish",
    "--broker",
    broker.url,
    "--key",
    key,
    "--update",
    id,
    POLL,
  ]);
  assert.equal(run.code, 0, run.stderr);
  assert.equal(run.stdout.trim(), url);
  const html = await (await fetch(url)).text();
  assert.match(html, /sendUpdateMaxSize/);
});

Deno.test("publish APP.xdc: a bundle import refuses is refused with import's line and exit 2, and nothing is uploaded", async () => {
  await using broker = await startServer();
  await using dir = await tempDir();
  const bundles: Record<string, Uint8Array> = {
    "text.xdc": strToU8("<!doctype html>not a zip"),
    "empty.xdc": zipSync({ "manifest.toml": strToU8("name = 'x'") }),
    "evil.xdc": zipSync({
      "index.html": strToU8("<!doctype html><p>x</p>"),
      "../evil.js": strToU8("x"),
    }),
  };
  for (const [name, bytes] of Object.entries(bundles)) {
    const path = join(dir.path, name);
    await writeFile(path, bytes);
    const imported = await cli(["import", path]);
    const published = await cli(["publish", "--broker", broker.url, path]);
    assert.equal(published.code, 2, published.stderr);
    assert.equal(published.stdout, "");
    assert.equal(published.stderr.trimEnd().split("\n").length, 1);
    assert.equal(published.stderr, imported.stderr);
    assert.match(published.stderr, /^pod-broker: Cannot import '/);
  }
  const missing = await cli([
    "publish",
    "--broker",
    broker.url,
    join(dir.path, "missing.xdc"),
  ]);
  assert.equal(missing.code, 2);
  assert.match(
    missing.stderr,
    /^pod-broker: Cannot import '.*missing\.xdc': no such file or folder\n$/,
  );
  assert.deepEqual(await storedIds(broker.registry), []);
});

Deno.test("publish and dev: the commands of docs/authors/webxdc.md work as it says", async () => {
  await using broker = await startServer();
  await using dir = await tempDir();
  await writeFile(join(dir.path, "poll.xdc"), await readFile(POLL));
  await keyFile(dir.path);
  const [block] = await blocksRunBy(
    "docs/authors/webxdc.md",
    "sh",
    import.meta.url,
  );
  const [publish, dev] = block!.text.trimEnd().split("\n").map((line) =>
    line.replace(/#.*$/, "").trim().split(/\s+/).slice(1)
  );
  assert.equal(publish![0], "publish");
  const published = await runCommand(
    Deno.execPath(),
    [
      "run",
      "-A",
      MOD,
      ...publish!.map((arg) =>
        arg === "http://localhost:8080" ? broker.url : arg
      ),
    ],
    { cwd: dir.path },
  );
  assert.equal(published.code, 0, published.stderr);
  const meta = await (await fetch(`${published.stdout.trim()}/meta`)).json();
  assert.equal(meta.name, "Poll");
  assert.deepEqual(dev, ["dev", "poll.xdc"]);
  await using served = await startDev([join(dir.path, "poll.xdc")]);
  assert.match(served.url, /^http:\/\/[a-z2-7]{20}\.localhost:\d+\/#dev$/);
  assert.equal(await served.stop(), 0);
});

Deno.test("the webxdc commands of README.md's tour import and publish an app, and print its URL", async () => {
  await using broker = await startServer();
  await using dir = await tempDir();
  await writeFile(join(dir.path, "poll.xdc"), await readFile(POLL));
  await keyFile(dir.path);
  const [block] = await blocksRunBy("README.md", "sh", import.meta.url);
  const lines = block!.text.trimEnd().split("\n");
  assert.deepEqual(lines.map((line) => line.split(" ")[1]), [
    "import",
    "publish",
  ]);
  let printed = "";
  for (const line of lines) {
    const args = line.replace(/#.*$/, "").trim().split(/\s+/).slice(1)
      .map((arg) => arg === "http://localhost:8080" ? broker.url : arg);
    const run = await runCommand(Deno.execPath(), ["run", "-A", MOD, ...args], {
      cwd: dir.path,
    });
    assert.equal(run.code, 0, `${line}: ${run.stderr}`);
    printed = run.stdout;
  }
  const url = printed.trim();
  assert.match(url, new RegExp(`^${broker.url}/[A-Za-z0-9]{12}$`));
  const meta = await (await fetch(`${url}/meta`)).json();
  assert.equal(meta.name, "Poll");
  assert.match(await (await fetch(url)).text(), /sendUpdateMaxSize/);
});
