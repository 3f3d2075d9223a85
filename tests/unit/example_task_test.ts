// `deno task example --broker URL` pipes the built chat pod into `publish
// /dev/stdin`: the broker must store the whole page, signed, not a blank one.
import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { cli, startServer } from "../support/helpers.ts";
import { tempDir } from "../contract/_servers.ts";

const ROOT = new URL("../../", import.meta.url).pathname;

Deno.test("deno task example publishes the whole chat pod through a pipe", async () => {
  await using temp = await tempDir("pod-example-");
  const at = (name: string) => join(temp.path, name);
  // The chat pod built and signed here, named as the task names it: the
  // stored pod must have the same size (a manifest of the same length).
  const chat = join(ROOT, "examples", "chat", "index.html");
  assert.equal((await cli(["build", chat, "--out", at("chat.html")])).code, 0);
  assert.equal((await cli(["keygen", "--out", at("k.pem")])).code, 0);
  const signed = await cli([
    ...["sign", "--key", at("k.pem"), "--name", "Chat"],
    ...["--out", at("signed.html"), at("chat.html")],
  ]);
  assert.equal(signed.code, 0, signed.stderr);
  const size = (await readFile(at("signed.html"))).length;
  assert.ok(size > 10_000);

  await using broker = await startServer();
  const task = await new Deno.Command(Deno.execPath(), {
    args: ["task", "--quiet", "example", "--broker", broker.url],
    cwd: ROOT,
    stdin: "null",
    env: { NO_COLOR: "1" },
  }).output();
  const stderr = new TextDecoder().decode(task.stderr);
  assert.equal(task.code, 0, stderr);
  const url = new TextDecoder().decode(task.stdout).trim();
  const meta = await (await fetch(`${url}/meta`)).json();
  assert.equal(meta.blobSize, size, "the whole page was stored");
  assert.equal(meta.name, "Chat");
});
