import assert from "node:assert/strict";
import { join } from "node:path";
import process from "node:process";
import {
  cli,
  MOD,
  signedPod,
  spawnSqliteBroker,
  startServer,
} from "../support/helpers.ts";

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
  const publicKey = /publicKey: ([A-Za-z0-9_-]{43})/.exec(made.stderr)![1];
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
  const response = await fetch(`http://127.0.0.1:${broker.port}/pods`, {
    method: "POST",
    headers: { "Content-Type": "text/html" },
    body: await signedPod(),
  });
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
  const dir = await Deno.makeTempDir();
  const key = join(dir, "k.pem");
  assert.equal((await cli(["keygen", "--out", key])).code, 0);
  const twoSlots = join(dir, "two.html");
  const slot =
    '<script type="application/pod-manifest" id="__POD_MANIFEST_B64">e30=</script>';
  await Deno.writeTextFile(twoSlots, `<html>${slot}${slot}</html>`);
  const run = await cli(["sign", "--key", key, twoSlots]);
  assert.equal(run.code, 2, run.stderr);
  assert.match(run.stderr, /Cannot sign '.*two\.html': manifest_malformed: /);
  assert.equal(run.stderr.trim().split("\n").length, 1, run.stderr);
  await Deno.remove(dir, { recursive: true });
});

Deno.test("runCli() treats an unexpected TypeError as a bug: exit 1, not usage", async () => {
  const { runCli } = await import("../../src/cli/main.ts");
  const written: string[] = [];
  const write = process.stderr.write;
  process.stderr.write = ((chunk: string) => {
    written.push(String(chunk));
    return true;
  }) as typeof process.stderr.write;
  try {
    const code = await runCli(["--port", "0"], () => {
      throw new TypeError("Cannot read properties of undefined");
    });
    assert.equal(code, 1);
  } finally {
    process.stderr.write = write;
  }
  assert.match(written[0]!, /unexpected error \(a bug, please report it\)/);
  assert.ok(!written.join("").includes("see --help"));
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
