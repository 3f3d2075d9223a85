// The `pod-broker` command line: Deno's (`deno run -A src/mod.ts`) and the
// npm package's bin on Node 22. Runs on both (see _suite.ts).
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { readFile, writeFile } from "node:fs/promises";
import { createServer } from "node:net";
import { join } from "node:path";
import process from "node:process";
import { upload } from "./_pods.ts";
import { type CliRun, runCli, startServer, tempDir } from "./_servers.ts";
import { test } from "./_suite.ts";
import type { ContractApi } from "./_suite.ts";
import { RUN_MS, within } from "../support/wait.ts";

/**
 * `pod-broker FIRST | pod-broker SECOND`, or `SECOND` reading `input` (an
 * empty standard input when neither is given): what SECOND printed.
 */
function pipeCli(
  api: ContractApi,
  second: string[],
  from: { first?: string[]; input?: string; cwd?: string } = {},
): Promise<CliRun> {
  const [command, ...prefix] = api.cli;
  const options = {
    env: { ...process.env, NO_COLOR: "1" },
    ...(from.cwd === undefined ? {} : { cwd: from.cwd }),
  };
  const reader = spawn(command!, [...prefix, ...second], {
    ...options,
    stdio: ["pipe", "pipe", "pipe"],
  });
  const writer = from.first === undefined ? undefined : spawn(
    command!,
    [...prefix, ...from.first],
    { ...options, stdio: ["ignore", "pipe", "inherit"] },
  );
  if (writer) writer.stdout!.pipe(reader.stdin);
  else reader.stdin.end(from.input ?? "");
  let stdout = "";
  let stderr = "";
  reader.stdout.setEncoding("utf8").on("data", (text) => stdout += text);
  reader.stderr.setEncoding("utf8").on("data", (text) => stderr += text);
  const ended = (child: ReturnType<typeof spawn>) =>
    within(
      new Promise<number>((done, fail) => {
        child.once("error", fail);
        child.once("close", (code) => done(code ?? 1));
      }),
      "pod-broker to exit",
      RUN_MS,
    );
  return Promise.all([ended(reader), writer && ended(writer)]).then((
    [code],
  ) => ({ code, stdout, stderr }));
}

/** The pods a registry holds. */
async function storedPods(registry: {
  listPods?(): AsyncIterable<unknown>;
}): Promise<number> {
  let count = 0;
  for await (const _ of registry.listPods!()) count++;
  return count;
}

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

test("pod-broker publish reads a piped page once: build | publish - (or /dev/stdin) stores all of it; an empty one is refused", async (api) => {
  await using dir = await tempDir();
  const at = (name: string) => join(dir.path, name);
  await writeFile(
    at("index.html"),
    `<!doctype html><html><head><title>Chat</title>
<script type="module" src="app.ts"></script></head><body><p id="x"></p></body></html>`,
  );
  // About 20 kB once built, as the chat example.
  await writeFile(
    at("app.ts"),
    `document.getElementById("x")!.textContent = ${
      JSON.stringify("piped page ".repeat(1800))
    };\n`,
  );
  const built = await runCli(api, [
    "build",
    at("index.html"),
    "--out",
    at("built.html"),
  ]);
  assert.equal(built.code, 0, built.stderr);
  assert.ok((await readFile(at("built.html"))).length > 19_000);
  // The same page signed here (same name): a manifest of the same length.
  assert.equal((await runCli(api, ["keygen", "--out", at("k.pem")])).code, 0);
  const signed = await runCli(api, [
    ...["sign", "--key", at("k.pem"), "--name", "Chat"],
    ...["--out", at("signed.html"), at("built.html")],
  ]);
  assert.equal(signed.code, 0, signed.stderr);
  const size = (await readFile(at("signed.html"))).length;

  await using t = await startServer(api);
  for (const input of ["-", "/dev/stdin"]) {
    const run = await pipeCli(
      api,
      ["publish", "--broker", t.url, "--name", "Chat", input],
      { first: ["build", at("index.html")], cwd: dir.path },
    );
    assert.equal(run.code, 0, `${input}: ${run.stderr}`);
    const id = run.stdout.trim().split("/").at(-1)!;
    const meta = await (await fetch(`${t.url}/${id}/meta`)).json();
    assert.equal(meta.blobSize, size, `${input}: the whole page was stored`);
    assert.equal(meta.name, "Chat");
  }
  assert.equal(await storedPods(t.registry), 2);

  // Empty, or only white space: one line, exit 2, nothing signed or sent.
  for (const input of ["", " \n\t\n"]) {
    const run = await pipeCli(api, ["publish", "--broker", t.url, "-"], {
      input,
    });
    assert.equal(run.code, 2, run.stderr);
    assert.equal(run.stdout, "");
    assert.match(
      run.stderr,
      /^pod-broker: Cannot publish '-': it is (empty|only white space) .*nothing was signed or sent \(see --help\)\n$/,
    );
  }
  assert.equal(await storedPods(t.registry), 2);
});

test("pod-broker: a mistyped command gets the nearest one, a missing file one line without an errno, a port in use its number", async (api) => {
  const typo = await runCli(api, ["publsh", "x.html"]);
  assert.deepEqual({ ...typo, stopped: undefined }, {
    code: 2,
    stdout: "",
    stopped: undefined,
    stderr:
      "pod-broker: Unknown command 'publsh': did you mean publish? (see --help)\n",
  });
  const unknown = await runCli(api, ["frobnicate"]);
  assert.equal(unknown.code, 2);
  assert.match(
    unknown.stderr,
    /^pod-broker: Unknown command 'frobnicate': the commands are serve, keygen, .*publish.*\n$/,
  );

  await using dir = await tempDir();
  const missing = join(dir.path, "nope.html");
  for (
    const command of [
      "verify",
      "sign --key k.pem",
      "publish --broker http://127.0.0.1:9",
    ]
  ) {
    const run = await runCli(api, [...command.split(" "), missing]);
    assert.equal(run.code, 2, `${command}: ${run.stderr}`);
    // The path aside: its random part may spell an errno ("...EXYZ...").
    assert.doesNotMatch(
      run.stderr.replaceAll(missing, "PATH"),
      /E[A-Z]{3,}/,
      `${command}: ${run.stderr}`,
    );
    assert.equal(run.stderr.trim().split("\n").length, 1, run.stderr);
    assert.match(run.stderr, /no such file/, command);
  }

  // A port another program holds: the same line from serve and dev.
  const holder = createServer();
  await new Promise<void>((done) => holder.listen(0, "127.0.0.1", done));
  try {
    const port = (holder.address() as { port: number }).port;
    const line =
      `pod-broker: Cannot start: port ${port} is in use by another program: choose another with --port (see --help)\n`;
    const serve = await runCli(api, [
      ...["--registry", "memory", "--hostname", "127.0.0.1"],
      ...["--port", String(port)],
    ]);
    assert.deepEqual([serve.code, serve.stdout, serve.stderr], [2, "", line]);
    await writeFile(join(dir.path, "index.html"), "<!doctype html><p>hi</p>");
    const dev = await runCli(api, ["dev", dir.path, "--port", String(port)]);
    assert.equal(dev.code, 2, dev.stderr);
    assert.ok(dev.stderr.endsWith(line), dev.stderr);
  } finally {
    await new Promise((done) => holder.close(done));
  }
});
