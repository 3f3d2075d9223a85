// A pod folder's deno.json names the author key, and anyone can write a
// deno.json: a template folder ("try this") can name the visitor's key. The
// key it names is used only for a folder `init` made or `trust` confirmed,
// and `dev` never signs with it. Each run has a temp HOME (the victim's key
// is $HOME/.config/pod-broker/keys/author.pem), so no real key is touched.
import assert from "node:assert/strict";
import { mkdir, readFile, stat, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { encodeBase64Url } from "../../src/_util/encoding.ts";
import { publicKeyFromSeed } from "../../src/pod/ed25519.ts";
import { decodePrivateKeyPem } from "../../src/pod/keys.ts";
import { verifyPod } from "../../src/pod/verify.ts";
import { runCli, startDev } from "../support/dev_process.ts";
import { startServer } from "../support/helpers.ts";
import { tempDir } from "../contract/_servers.ts";
import { requestWithHost } from "../support/host_request.ts";

/** Deno's cache folder now, kept when HOME changes (nothing is fetched). */
const DENO_DIR: string = JSON.parse(
  new TextDecoder().decode(
    (await new Deno.Command(Deno.execPath(), {
      args: ["info", "--json"],
      stderr: "null",
    }).output()).stdout,
  ),
).denoDir;

/** A user whose HOME is `home`, without XDG_CONFIG_HOME. */
function user(home: string) {
  const env = { HOME: home, XDG_CONFIG_HOME: "", DENO_DIR };
  return {
    run: (args: string[]) => runCli(args, env),
    dev: (args: string[]) => startDev(args, env),
    key: join(home, ".config", "pod-broker", "keys", "author.pem"),
  };
}

/** A hostile template: a page and a deno.json naming the visitor's key. */
async function template(dir: string): Promise<string> {
  await mkdir(dir, { recursive: true });
  await writeFile(
    join(dir, "deno.json"),
    JSON.stringify({
      pod: { key: "~/.config/pod-broker/keys/author.pem", name: "Try this" },
    }),
  );
  const page = join(dir, "index.html");
  await writeFile(page, "<!doctype html><title>t</title><p>attacker's page");
  return page;
}

async function publicKeyOf(pem: string): Promise<string> {
  const seed = decodePrivateKeyPem(await readFile(pem, "utf8"));
  return encodeBase64Url(await publicKeyFromSeed(seed));
}

/** The number of pods a broker's registry holds. */
async function count(registry: {
  listPods?(): AsyncIterable<unknown>;
}): Promise<number> {
  let n = 0;
  for await (const _ of registry.listPods!()) n++;
  return n;
}

Deno.test("a folder init did not make cannot sign with the author's key: build and publish refuse, dev uses a throwaway key", async () => {
  await using temp = await tempDir("pod-folder-");
  const me = user(temp.path);
  const mine = join(temp.path, "mine");
  assert.equal((await me.run(["init", mine])).code, 0);
  const victim = await publicKeyOf(me.key);
  const page = await template(join(temp.path, "Downloads", "try-this"));
  // Also inside a folder init made: the nearest deno.json decides.
  const nested = await template(join(mine, "vendor", "demo"));
  await using broker = await startServer();

  for (const entry of [page, nested]) {
    const out = join(temp.path, "out.html");
    const built = await me.run(["build", entry, "--out", out]);
    assert.equal(built.code, 2, built.stderr);
    assert.match(
      built.stderr,
      /^pod-broker: Cannot sign with the key '.*author\.pem' that '.*deno\.json' names: .*pass --key FILE, or, if the folder is yours, run pod-broker trust .* \(see --help\)\n$/,
    );
    await assert.rejects(stat(out), "nothing was written");
    const published = await me.run(["publish", "--broker", broker.url, entry]);
    assert.equal(published.code, 2, published.stderr);
    assert.match(published.stderr, /Cannot sign with the key/);
  }
  assert.equal(await count(broker.registry), 0, "nothing was published");

  // dev serves the template, signed by a key of its own, never the victim's.
  await using dev = await me.dev([page]);
  const { port, host } = new URL(dev.url);
  const served = await requestWithHost(Number(port), host, "/");
  const { manifest } = await verifyPod(served.bytes);
  assert.notEqual(manifest.publicKey, victim);
  assert.match(dev.stderr(), /signed with a throwaway key/);
  assert.equal(await dev.stop(), 0);
});

Deno.test("init's folder signs with its key; trust confirms a folder; an edited key path is refused until confirmed", async () => {
  await using temp = await tempDir("pod-folder-");
  const me = user(temp.path);
  const mine = join(temp.path, "mine");
  assert.equal((await me.run(["init", mine])).code, 0);
  const victim = await publicKeyOf(me.key);
  const out = join(temp.path, "out.html");
  const signer = async (entry: string) => {
    const built = await me.run(["build", entry, "--out", out]);
    if (built.code !== 0) return built.stderr;
    return (await verifyPod(new Uint8Array(await readFile(out)))).manifest
      .publicKey;
  };
  assert.equal(await signer(join(mine, "index.html")), victim);

  // The user confirms a folder they copied: it signs from then on.
  const page = await template(join(temp.path, "copied"));
  assert.match(await signer(page), /Cannot sign with the key/);
  const trusted = await me.run(["trust", join(temp.path, "copied")]);
  assert.equal(trusted.code, 0, trusted.stderr);
  assert.match(
    trusted.stdout,
    new RegExp(`^Trusted .*copied: .*author\\.pem \\(public key ${victim}\\)`),
  );
  assert.equal(await signer(page), victim);

  // deno.json edited to name another key: not what was confirmed.
  const other = join(temp.path, "other.pem");
  assert.equal((await me.run(["keygen", "--out", other])).code, 0);
  const settings = JSON.parse(await readFile(join(mine, "deno.json"), "utf8"));
  settings.pod.key = other;
  await writeFile(join(mine, "deno.json"), JSON.stringify(settings));
  assert.match(await signer(join(mine, "index.html")), /Cannot sign with/);

  // trust refuses a folder without a pod key, in one line.
  const bare = join(temp.path, "bare");
  await mkdir(bare);
  const refused = await me.run(["trust", bare]);
  assert.equal(refused.code, 2);
  assert.match(refused.stderr, /^pod-broker: Cannot trust .*\n$/);
});
