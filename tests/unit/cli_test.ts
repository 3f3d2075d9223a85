import assert from "node:assert/strict";
import { join } from "node:path";
import { captureOutput } from "../support/capture_output.ts";
import {
  cli,
  type CliRun,
  MOD,
  signedPod,
  spawnSqliteBroker,
  startServer,
  upload,
} from "../support/helpers.ts";

/**
 * A fresh folder with a key `pod-broker keygen` wrote at `key` (named
 * `name`); removed when disposed of.
 */
async function keyFolder(
  name = "k.pem",
): Promise<{ dir: string; key: string } & AsyncDisposable> {
  const dir = await Deno.makeTempDir();
  const key = join(dir, name);
  assert.equal((await cli(["keygen", "--out", key])).code, 0);
  return {
    dir,
    key,
    [Symbol.asyncDispose]: () => Deno.remove(dir, { recursive: true }),
  };
}

Deno.test("cli --help and --version print and exit 0", async () => {
  const help = await cli(["--help"]);
  assert.equal(help.code, 0);
  assert.match(help.stdout, /--registry memory\|sqlite/);
  assert.match(help.stdout, /keygen/);
  const { version } = JSON.parse(
    await Deno.readTextFile(new URL("../../deno.json", import.meta.url)),
  );
  const shown = await cli(["--version"]);
  assert.equal(shown.code, 0);
  assert.equal(shown.stdout.trim(), version);
});

Deno.test("cli exits 2 with a one-line reason on bad input", async () => {
  const file = await Deno.makeTempFile();
  const cases: [string[], RegExp][] = [
    [["--bogus"], /Unknown option '--bogus'/],
    [["--registry", "sqlite"], /--registry sqlite needs --data-dir PATH/],
    [["--registry", "redis"], /Cannot use --registry 'redis'/],
    [["--port", "http"], /Cannot use --port 'http'/],
    [["--port", "70000"], /Cannot use --port '70000'/],
    [
      ["--registry", "sqlite", "--data-dir", join(file, "sub")],
      /Cannot write to --data-dir/,
    ],
    [["--sandbox", "allow-scripts allow-same-origin"], /allow-same-origin/],
    [["--max-peers-per-session", "0"], /--max-peers-per-session '0'/],
    [["sign", "/tmp/x.html"], /sign needs --key FILE/],
    [["verify"], /verify takes exactly one file/],
    [["--stun-url", "http://stun.example"], /Cannot use --stun-url 'http/],
    [["--stun-url", "turn:relay.example"], /expected a stun: URL/],
    [
      ["--turn-url", "stun:x.example"],
      /Cannot use --turn-url 'stun:x.example'/,
    ],
    [
      ["--turn-url", "turn:relay.example:3478"],
      /--turn-secret-file or env POD_BROKER_TURN_SECRET is required/,
    ],
    [
      ["--turn-secret-file", join(file, "nope")],
      /Cannot read --turn-secret-file/,
    ],
    [["--turn-secret-file", file], /the file is empty/],
    [["--turn-ttl", "60"], /--turn-url/],
    [["--turn-ttl", "0", "--turn-url", "turn:r.example"], /--turn-ttl '0'/],
  ];
  for (const [args, reason] of cases) {
    const run = await cli(args);
    assert.equal(run.code, 2, `${args.join(" ")}: ${run.stderr}`);
    assert.match(run.stderr, reason);
    assert.equal(run.stderr.trim().split("\n").length, 1, run.stderr);
  }
});

Deno.test("cli keygen, sign and verify make a pod that verifies", async () => {
  const dir = await Deno.makeTempDir();
  const key = join(dir, "author.pem");
  const made = await cli(["keygen", "--out", key]);
  assert.equal(made.code, 0);
  const publicKey = /^([A-Za-z0-9_-]{43})\n$/.exec(made.stdout)![1];
  assert.match(await Deno.readTextFile(key), /^-----BEGIN PRIVATE KEY-----\n/);
  assert.equal((await Deno.stat(key)).mode! & 0o777, 0o600);
  await Deno.writeTextFile(
    join(dir, "page.html"),
    "<!doctype html><head></head><p>hi</p>",
  );
  const signed = await cli([
    "sign",
    "--key",
    key,
    "--name",
    "Hi",
    "--out",
    join(dir, "pod.html"),
    join(dir, "page.html"),
  ]);
  assert.equal(signed.code, 0, signed.stderr);
  const verified = await cli(["verify", join(dir, "pod.html")]);
  assert.equal(verified.code, 0);
  const report = JSON.parse(verified.stdout);
  assert.equal(report.ownerPubkey, publicKey);
  assert.equal(report.name, "Hi");

  const pod = await Deno.readFile(join(dir, "pod.html"));
  pod[pod.length - 3]! ^= 1;
  await Deno.writeFile(join(dir, "tampered.html"), pod);
  const refused = await cli(["verify", join(dir, "tampered.html")]);
  assert.equal(refused.code, 1);
  assert.match(refused.stderr, /content_mismatch/);
});

Deno.test("cli serves on the sqlite registry and stops with exit 0 on SIGTERM", async () => {
  const dataDir = await Deno.makeTempDir();
  await using broker = await spawnSqliteBroker(dataDir);
  const response = await upload(
    `http://127.0.0.1:${broker.port}`,
    await signedPod(),
  );
  assert.equal(response.status, 201);
  await response.body?.cancel();
  assert.equal(await broker.stop(), 0);
});

Deno.test("cli publish signs the chat pod and uploads it, printing its URL", async () => {
  await using t = await startServer();
  const chat =
    new URL("../../examples/chat/chat.html", import.meta.url).pathname;
  const run = await cli(["publish", "--broker", t.url, "--name", "Chat", chat]);
  assert.equal(run.code, 0, run.stderr);
  assert.match(run.stderr, /fresh key/);
  const url = run.stdout.trim();
  assert.match(url, new RegExp(`^${t.url}/[A-Za-z0-9]{12}$`));
  const meta = await (await fetch(`${url}/meta`)).json();
  assert.equal(meta.name, "Chat");
  const refused = await cli(["publish", "--broker", t.url, "--key", MOD, chat]);
  assert.equal(refused.code, 2);
  assert.match(
    refused.stderr,
    /Cannot use key '.*': not an Ed25519 PKCS#8 PEM private key/,
  );
});

Deno.test("cli keeps the TURN secret out of its output and the process list", async () => {
  const dir = await Deno.makeTempDir();
  const secretFile = join(dir, "turn.secret");
  const secret = "s3cret-" + crypto.randomUUID();
  await Deno.writeTextFile(secretFile, `${secret}\n`);
  // A bad TTL next to a good secret: the message names the flag, not the secret.
  const bad = await cli([
    "--turn-url",
    "turn:relay.example:3478",
    "--turn-secret-file",
    secretFile,
    "--turn-ttl",
    "999999999",
  ]);
  assert.equal(bad.code, 2);
  assert.ok(!bad.stderr.includes(secret) && !bad.stdout.includes(secret));
  // The secret read from the environment works the same way.
  const { code, stderr } = await new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "-A",
      MOD,
      "--turn-url",
      "turns:relay.example:443",
      "--port",
      "x",
    ],
    stdin: "null",
    env: { NO_COLOR: "1", POD_BROKER_TURN_SECRET: secret },
  }).output();
  assert.equal(code, 2);
  assert.ok(!new TextDecoder().decode(stderr).includes(secret));
  await Deno.remove(dir, { recursive: true });
});

Deno.test("cli sign reports a file that cannot be a pod on one line with exit 2", async () => {
  await using folder = await keyFolder();
  const { dir, key } = folder;
  const twoSlots = join(dir, "two.html");
  const slot =
    '<script type="application/pod-manifest" id="__POD_MANIFEST_B64">e30=</script>';
  await Deno.writeTextFile(twoSlots, `<html>${slot}${slot}</html>`);
  const run = await cli(["sign", "--key", key, twoSlots]);
  assert.equal(run.code, 2, run.stderr);
  assert.match(run.stderr, /Cannot sign '.*two\.html': manifest_malformed: /);
  assert.equal(run.stderr.trim().split("\n").length, 1, run.stderr);
});

Deno.test("runCli() treats an unexpected TypeError as a bug: exit 1, not usage", async () => {
  const { runCli } = await import("../../src/cli/main.ts");
  const { value: code, stderr } = await captureOutput(() =>
    runCli(["--port", "0"], () => {
      throw new TypeError("Cannot read properties of undefined");
    })
  );
  assert.equal(code, 1);
  assert.match(stderr, /unexpected error \(a bug, please report it\)/);
  assert.ok(!stderr.includes("see --help"));
});

/** A message for the user: one line, no stack, never called a bug. */
function assertOneLine(run: CliRun, code: number, reason: RegExp): void {
  assert.equal(run.code, code, run.stderr);
  assert.match(run.stderr, reason);
  assert.equal(run.stderr.trim().split("\n").length, 1, run.stderr);
  assert.doesNotMatch(run.stderr, /a bug|\n\s+at /);
}

/** A port nothing listens on (bound once, then closed). */
function closedPort(): number {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const { port } = listener.addr as Deno.NetAddr;
  listener.close();
  return port;
}

Deno.test("cli setup problems say what to do on one line, exit 2, not as a bug", async () => {
  const dir = await Deno.makeTempDir();
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const taken = (listener.addr as Deno.NetAddr).port;
  try {
    assertOneLine(
      await cli(["--port", String(taken), "--hostname", "127.0.0.1"]),
      2,
      new RegExp(
        `^pod-broker: Cannot start: port ${taken} is in use by another program: choose another with --port`,
      ),
    );
  } finally {
    listener.close();
  }
  const page = join(dir, "page.html");
  await Deno.writeTextFile(page, "<!doctype html><head></head><p>hi</p>");
  const port = closedPort();
  assertOneLine(
    await cli(["publish", "--broker", `http://127.0.0.1:${port}`, page]),
    2,
    new RegExp(
      `^pod-broker: cannot reach http://127\\.0\\.0\\.1:${port}: is the broker running\\? \\(ECONNREFUSED\\) \\(see --help\\)\\n$`,
    ),
  );
  assertOneLine(
    await cli(["sign", "--key", join(dir, "none.pem"), page]),
    2,
    /Cannot read key '.*none\.pem': no such file: create one with pod-broker keygen --out FILE \(see --help\)\n$/,
  );
  assertOneLine(
    await cli(["build", page, "--key", join(dir, "none.pem")]),
    2,
    /create one with pod-broker keygen --out FILE \(see --help\)\n$/,
  );
  assertOneLine(
    await cli(["--registry", "sqlite", "--data-dir", page]),
    2,
    /Cannot use --data-dir '.*page\.html': not a directory/,
  );
  assertOneLine(
    await cli(["list"]),
    2,
    /list needs the broker's registry: --data-dir DIR \(SQLite\) or --registry postgres --database-url URL/,
  );
  assertOneLine(
    await cli(["delete", "AAAAAAAAAAAA"]),
    2,
    /delete needs the broker's registry: --data-dir DIR/,
  );
  // verify answers 1 for "not a valid pod", and says how to sign it.
  assertOneLine(
    await cli(["verify", page]),
    1,
    /manifest_missing: .*: sign it with pod-broker sign or build --key\n$/,
  );
  await Deno.remove(dir, { recursive: true });
});

Deno.test("cli: every sub-command answers --help with its own usage, exit 0", async () => {
  const { COMMANDS } = await import("../../src/cli/commands.ts");
  const names = Object.keys(COMMANDS);
  assert.deepEqual(names.sort(), [
    "build",
    "delete",
    "dev",
    "import",
    "init",
    "keygen",
    "list",
    "publish",
    "sign",
    "trust",
    "verify",
  ]);
  for (const name of names) {
    // --help wins over other (even bad) arguments.
    const run = await cli([name, "--bogus", "--help"]);
    assert.equal(run.code, 0, `${name}: ${run.stderr}`);
    assert.equal(run.stderr, "");
    assert.match(run.stdout, new RegExp(`^Usage: pod-broker ${name} `));
  }
  const serve = await cli(["serve", "--help"]);
  assert.equal(serve.code, 0);
  assert.match(serve.stdout, /Serve options:/);
  // The summary names every command once.
  const summary = await cli(["--help"]);
  for (const name of names) {
    assert.equal(
      summary.stdout.split(`pod-broker ${name} `).length,
      2,
      `${name} in --help`,
    );
  }
});

/** Uploads a signed pod to the broker on `port`; its id. */
async function uploadTo(port: number): Promise<string> {
  const response = await upload(`http://127.0.0.1:${port}`, await signedPod());
  return (await response.json()).id;
}

Deno.test("cli delete twice says the pod is already deleted", async () => {
  const dataDir = await Deno.makeTempDir();
  {
    await using broker = await spawnSqliteBroker(dataDir);
    const id = await uploadTo(broker.port);
    assert.equal((await cli(["delete", id, "--data-dir", dataDir])).code, 0);
    assertOneLine(
      await cli(["delete", id, "--data-dir", dataDir]),
      1,
      new RegExp(`Cannot delete '${id}': already deleted`),
    );
    assertOneLine(
      await cli(["delete", "BBBBBBBBBBBB", "--data-dir", dataDir]),
      1,
      /no such pod/,
    );
  }
  await Deno.remove(dataDir, { recursive: true });
});

Deno.test("cli list and delete beside a running broker leave files no record names alone (its uploads in flight)", async () => {
  const dataDir = await Deno.makeTempDir();
  {
    await using broker = await spawnSqliteBroker(dataDir);
    const id = await uploadTo(broker.port);
    // What the broker has on disk between writing an upload and
    // committing its row.
    const inFlight = [
      join(dataDir, "blobs", ".tmp-Upload000001-abcdefgh"),
      join(dataDir, "blobs", "Upload000001"),
    ];
    for (const file of inFlight) await Deno.writeTextFile(file, "<p>x</p>");
    assert.equal((await cli(["list", "--data-dir", dataDir])).code, 0);
    assert.equal((await cli(["delete", id, "--data-dir", dataDir])).code, 0);
    for (const file of inFlight) {
      assert.ok((await Deno.stat(file)).isFile, `${file} kept`);
    }
  }
  await Deno.remove(dataDir, { recursive: true });
});

Deno.test("cli publish --key keeps the signed pod's name; createdAt is the time of signing", async () => {
  await using t = await startServer();
  await using folder = await keyFolder("author.pem");
  const { dir, key } = folder;
  const signed = join(dir, "hello.pod.html");
  const page = join(dir, "hello.html");
  await Deno.writeTextFile(page, "<!doctype html><head></head><p>hi</p>");
  const made = await cli([
    "sign",
    "--key",
    key,
    "--name",
    "Hello room",
    "--created-at",
    "--out",
    signed,
    page,
  ]);
  assert.equal(made.code, 0, made.stderr);
  const before = JSON.parse((await cli(["verify", signed])).stdout);
  assert.equal(before.name, "Hello room");
  const started = new Date();
  const published = await cli([
    "publish",
    "--broker",
    t.url,
    "--key",
    key,
    signed,
  ]);
  assert.equal(published.code, 0, published.stderr);
  const meta = await (await fetch(`${published.stdout.trim()}/meta`)).json();
  assert.equal(meta.name, "Hello room");
  assert.ok(
    Date.parse(meta.createdAt) >= Math.floor(started.getTime() / 1000) * 1000,
    `${meta.createdAt} is the time of signing`,
  );
  // --name still wins.
  const renamed = await cli([
    "publish",
    "--broker",
    t.url,
    "--key",
    key,
    "--name",
    "Other",
    signed,
  ]);
  assert.equal(renamed.code, 0, renamed.stderr);
  const renamedMeta = await (await fetch(`${renamed.stdout.trim()}/meta`))
    .json();
  assert.equal(renamedMeta.name, "Other");
});

Deno.test("cli sign warns about remote references and a page past the default limit", async () => {
  await using folder = await keyFolder();
  const { dir, key } = folder;
  const page = join(dir, "page.html");
  await Deno.writeTextFile(
    page,
    '<!doctype html><head>\n<script src="https://cdn.example/x.js"></script></head><img src="logo.png">',
  );
  const sign = (page: string, out: string) =>
    cli(["sign", "--key", key, "--out", join(dir, out), page]);
  const remote = await sign(page, "o.html");
  assert.equal(remote.code, 0, remote.stderr);
  assert.match(
    remote.stderr,
    /^pod-broker: warning: .*page\.html: remote references the pod's policy blocks, line 2: 'https:\/\/cdn\.example\/x\.js' \(a pod loads nothing remote: download it into the folder, or npm install it\)\n$/,
  );
  const { DEFAULT_MAX_BLOB_BYTES } = await import("../../src/adapter.ts");
  const big = join(dir, "big.html");
  await Deno.writeTextFile(
    big,
    `<!doctype html><head></head><p>${"x".repeat(DEFAULT_MAX_BLOB_BYTES)}</p>`,
  );
  const large = await sign(big, "b.html");
  assert.equal(large.code, 0, large.stderr);
  assert.match(
    large.stderr,
    /big\.html: 52,428,[0-9]{3} bytes is more than a broker accepts by default \(52,428,800, --max-blob-bytes\)/,
  );
});

Deno.test("runtimeProblem() refuses Node before 22.13 on one line, and never Deno", async () => {
  const { runtimeProblem } = await import("../../src/cli/runtime_check.ts");
  assert.equal(
    runtimeProblem({ node: "20.19.1" }),
    "pod-broker needs Node 22.13 or later (this is 20.19.1)",
  );
  assert.match(runtimeProblem({ node: "22.12.0" })!, /22\.13/);
  assert.equal(runtimeProblem({ node: "22.13.0" }), undefined);
  assert.equal(runtimeProblem({ node: "24.1.0" }), undefined);
  assert.equal(runtimeProblem({ node: "20.11.1", deno: "2.9.6" }), undefined);
});

Deno.test("cli suggests the nearest flag for a typo and refuses -port, on one line with exit 2", async () => {
  const cases: [string[], RegExp][] = [
    [["--prot", "80"], /Unknown option '--prot': did you mean --port\?/],
    [
      ["--max-blob-byte", "3"],
      /Unknown option '--max-blob-byte': did you mean --max-blob-bytes\?/,
    ],
    [
      ["--port", "0", "-port", "80"],
      /Unknown option '-port': a long flag takes two dashes; did you mean --port\?/,
    ],
    [["-hostname", "x"], /'-hostname'.*did you mean --hostname\?/],
    [
      ["--zzzzzzzz"],
      /^pod-broker: Unknown option '--zzzzzzzz' \(see --help\)$/m,
    ],
  ];
  for (const [args, reason] of cases) {
    const run = await cli(args);
    assert.equal(run.code, 2, `${args.join(" ")}: ${run.stderr}`);
    assert.match(run.stderr, reason);
    assert.equal(run.stderr.trim().split("\n").length, 1, run.stderr);
    assert.ok(!/a bug|\n\s+at /.test(run.stderr), run.stderr);
  }
});

Deno.test("cli --help prints each default once", async () => {
  const help = await cli(["--help"]);
  assert.equal(help.code, 0);
  const lines = help.stdout.split("\n").filter((line) => /^ {2}-/.test(line));
  assert.ok(lines.length > 30, help.stdout);
  for (const line of lines) {
    const defaults = line.match(/default/gi) ?? [];
    assert.ok(defaults.length <= 1, line);
  }
  assert.match(
    help.stdout,
    /--max-blob-bytes N .*\(default 52428800 = 50 MiB\)$/m,
  );
  assert.match(
    help.stdout,
    /--registry memory\|sqlite\|postgres .*\(default memory\)$/m,
  );
});

Deno.test("serve.lock pins what serving loads and nothing the tests alone use", async () => {
  const root = new URL("../../", import.meta.url);
  const read = async (name: string) =>
    JSON.parse(await Deno.readTextFile(new URL(name, root)));
  const serve = await read("serve.lock");
  const all = await read("deno.lock");
  const packages = Object.keys(serve.npm);
  assert.ok(packages.some((p) => p.startsWith("libsodium-wrappers@")));
  for (
    const testOnly of [
      /^playwright-core@/,
      /^puppeteer-core@/,
      /^typescript@/,
      /^fast-check@/,
      /^@mdn\//,
      /^csp_evaluator@/,
      /^dockerfile-utils@/,
      /^@types\/(?!ws@|node@)/, // @types/ws: src/adapters/_node_ws.ts names it
    ]
  ) {
    assert.deepEqual(packages.filter((p) => testOnly.test(p)), []);
  }
  // The same versions and digests as deno.lock.
  for (const name of packages) {
    assert.equal(serve.npm[name].integrity, all.npm[name]?.integrity, name);
  }
  const { tasks } = await read("deno.json");
  assert.match(tasks.start, /^deno run --lock=serve\.lock --frozen /);
  // Frozen and complete: serving starts from it with nothing to add.
  const run = await new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "--lock=serve.lock",
      "--frozen",
      "--cached-only",
      "-A",
      "src/mod.ts",
      "--version",
    ],
    cwd: root,
    stdin: "null",
  }).output();
  assert.equal(run.code, 0, new TextDecoder().decode(run.stderr));
  assert.doesNotMatch(
    new TextDecoder().decode(run.stderr),
    /Ignored build scripts/,
  );
});
