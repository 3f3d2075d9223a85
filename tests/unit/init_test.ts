// `pod-broker init`: a pod folder that `deno check` passes, with its author
// key outside it (made once in the per-user folder, then reused), named in
// deno.json so that `build` and `publish` sign with it without --key; a
// folder that is not empty is refused with one line.
import assert from "node:assert/strict";
import { readdir, readFile, stat, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { encodeBase64Url } from "../../src/_util/encoding.ts";
import { publicKeyFromSeed } from "../../src/pod/ed25519.ts";
import {
  decodePrivateKeyPem,
  encodePrivateKeyPem,
} from "../../src/pod/keys.ts";
import { verifyPod } from "../../src/pod/verify.ts";
import { type CliRun, MOD, newSeed, startServer } from "../support/helpers.ts";
import { tempDir } from "../contract/_servers.ts";

/** `pod-broker ARGS` with XDG_CONFIG_HOME (the key folder's parent) set. */
async function cliIn(
  config: string,
  args: string[],
  cwd?: string,
): Promise<CliRun> {
  const { code, stdout, stderr } = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", MOD, ...args],
    ...(cwd ? { cwd } : {}),
    stdin: "null",
    env: { NO_COLOR: "1", XDG_CONFIG_HOME: config },
  }).output();
  const text = new TextDecoder();
  return { code, stdout: text.decode(stdout), stderr: text.decode(stderr) };
}

async function publicKeyOf(pemFile: string): Promise<string> {
  const seed = decodePrivateKeyPem(await readFile(pemFile, "utf8"));
  return encodeBase64Url(await publicKeyFromSeed(seed));
}

Deno.test("init makes a pod folder that deno check passes, its key outside it, made once and reused", async () => {
  await using temp = await tempDir("pod-init-");
  const config = join(temp.path, "config");
  const dir = join(temp.path, "hello-room");
  const key = join(config, "pod-broker", "keys", "author.pem");

  const made = await cliIn(config, ["init", dir]);
  assert.equal(made.code, 0, made.stderr);
  assert.equal(made.stderr, "");
  assert.deepEqual((await readdir(dir)).sort(), [
    "app.ts",
    "deno.json",
    "index.html",
    "style.css",
  ]);
  const publicKey = await publicKeyOf(key);
  assert.match(made.stdout, new RegExp(`\\(made; public key ${publicKey}\\)`));
  assert.equal((await stat(key)).mode & 0o777, 0o600);
  assert.equal(
    (await stat(join(config, "pod-broker", "keys"))).mode & 0o777,
    0o700,
  );
  const settings = JSON.parse(await readFile(join(dir, "deno.json"), "utf8"));
  assert.deepEqual(settings.pod, { key, name: "hello-room" });
  for (const file of await readdir(dir)) {
    assert.doesNotMatch(await readFile(join(dir, file), "utf8"), /PRIVATE KEY/);
  }

  // deno check of the app, in the folder: pod-broker/client resolves, typed
  // (a wrong type of the client's is an error, not an `any`).
  const check = async (file: string) => {
    const { code, stderr } = await new Deno.Command(Deno.execPath(), {
      args: ["check", file],
      cwd: dir,
      stdin: "null",
      env: { NO_COLOR: "1" },
    }).output();
    return { code, stderr: new TextDecoder().decode(stderr) };
  };
  const checked = await check("app.ts");
  assert.equal(checked.code, 0, checked.stderr);
  await writeFile(
    join(dir, "wrong.ts"),
    'import { joinRoom } from "pod-broker/client";\nconst id: number = (await joinRoom()).peerId;\nconsole.log(id);\n',
  );
  const wrong = await check("wrong.ts");
  assert.equal(wrong.code, 1);
  assert.match(wrong.stderr, /TS2322/);
  await Deno.remove(join(dir, "wrong.ts"));

  // A second folder reuses the key.
  const second = await cliIn(config, ["init", join(temp.path, "second")]);
  assert.equal(second.code, 0, second.stderr);
  assert.match(
    second.stdout,
    new RegExp(`\\(reused; public key ${publicKey}\\)`),
  );
  assert.equal(await publicKeyOf(key), publicKey);
});

Deno.test("init refuses a folder that is not empty, with one line and exit 2", async () => {
  await using temp = await tempDir("pod-init-");
  const dir = join(temp.path, "busy");
  await cliIn(join(temp.path, "config"), ["init", dir]);
  await writeFile(join(temp.path, "other.txt"), "x");
  for (const [target, cwd] of [[dir, undefined], [".", temp.path]] as const) {
    const run = await cliIn(join(temp.path, "config"), ["init", target], cwd);
    assert.deepEqual(run, {
      code: 2,
      stdout: "",
      stderr: `pod-broker: Cannot init '${
        target === "." ? temp.path : dir
      }': it is not empty (init makes a new pod folder) (see --help)\n`,
    });
  }
  // Nothing was overwritten.
  assert.equal(await readFile(join(temp.path, "other.txt"), "utf8"), "x");
});

Deno.test("init --key reuses a given key; build and publish in the folder sign with it, without --key", async () => {
  await using temp = await tempDir("pod-init-");
  const config = join(temp.path, "config");
  const key = join(temp.path, "keys", "mine.pem");
  await Deno.mkdir(join(temp.path, "keys"));
  await writeFile(key, encodePrivateKeyPem(await newSeed()));
  const publicKey = await publicKeyOf(key);
  const dir = join(temp.path, "pod");
  const made = await cliIn(config, ["init", dir, "--key", key]);
  assert.equal(made.code, 0, made.stderr);
  assert.match(
    made.stdout,
    new RegExp(`\\(reused; public key ${publicKey}\\)`),
  );
  // No per-user key was made (only the record of the folder init made).
  await assert.rejects(stat(join(config, "pod-broker", "keys")));
  const record = JSON.parse(
    await readFile(join(config, "pod-broker", "folders.json"), "utf8"),
  );
  assert.deepEqual(record, { folders: { [await Deno.realPath(dir)]: key } });

  const out = join(dir, "hello.pod.html");
  const built = await cliIn(config, ["build", "index.html", "--out", out], dir);
  assert.equal(built.code, 0, built.stderr);
  assert.match(built.stderr, / bytes\), signed with .*mine\.pem\n$/);
  const pod = new Uint8Array(await readFile(out));
  const { manifest } = await verifyPod(pod);
  assert.equal(manifest.publicKey, publicKey);
  assert.equal(manifest.name, "pod");
  assert.doesNotMatch(new TextDecoder().decode(pod), /PRIVATE KEY/);

  await using broker = await startServer();
  const published = await cliIn(config, [
    "publish",
    "--broker",
    broker.url,
    out,
  ]);
  assert.equal(published.code, 0, published.stderr);
  assert.equal(published.stderr, "");
  const id = published.stdout.trim().split("/").at(-1)!;
  const meta = await (await fetch(`${broker.url}/${id}/meta`)).json();
  assert.equal(meta.ownerPubkey, publicKey);
});
