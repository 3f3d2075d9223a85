// Commands that cannot do what was asked say so instead of guessing: `list`
// and `delete` on a directory that holds no broker's data refuse with one
// line and exit 2, and create nothing; `keygen --out` gives its result (the
// public key) on standard output and its message on standard error.
import assert from "node:assert/strict";
import { join } from "node:path";
import {
  cli,
  signedPod,
  spawnSqliteBroker,
  upload,
} from "../support/helpers.ts";

/** Every path under `dir`, relative, sorted. */
async function tree(dir: string): Promise<string[]> {
  const paths: string[] = [];
  const walk = async (at: string, prefix: string) => {
    for await (const entry of Deno.readDir(at)) {
      paths.push(prefix + entry.name);
      if (entry.isDirectory) {
        await walk(join(at, entry.name), `${prefix}${entry.name}/`);
      }
    }
  };
  await walk(dir, "");
  return paths.sort();
}

for (const command of [["list"], ["delete", "AAAAAAAAAAAA"]]) {
  Deno.test(`${command[0]} --data-dir on a directory that does not exist: one line, exit 2, nothing created`, async () => {
    const parent = await Deno.makeTempDir();
    try {
      const typo = join(parent, "typo");
      const run = await cli([...command, "--data-dir", typo]);
      assert.equal(run.code, 2);
      assert.equal(run.stdout, "");
      assert.match(
        run.stderr,
        /^pod-broker: Cannot use --data-dir '.*typo': no such directory: pass the data directory of the broker \(see --help\)\n$/,
      );
      assert.deepEqual(await tree(parent), [], "nothing created");
    } finally {
      await Deno.remove(parent, { recursive: true });
    }
  });

  Deno.test(`${command[0]} --data-dir on a directory with no broker's database: one line, exit 2, nothing created`, async () => {
    const dir = await Deno.makeTempDir();
    try {
      await Deno.writeTextFile(join(dir, "notes.txt"), "not a broker\n");
      const run = await cli([...command, "--data-dir", dir]);
      assert.equal(run.code, 2);
      assert.match(
        run.stderr,
        /^pod-broker: Cannot use --data-dir '.*': no pods\.sqlite in it: .*\n$/,
      );
      assert.deepEqual(await tree(dir), ["notes.txt"], "nothing created");
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  });
}

Deno.test("list on a broker's data directory still lists its pods, by an owner whose key starts with a dash too", async () => {
  const dir = await Deno.makeTempDir();
  try {
    let id: string;
    {
      await using broker = await spawnSqliteBroker(dir);
      const uploaded = await upload(
        `http://127.0.0.1:${broker.port}`,
        await signedPod(),
      );
      assert.equal(uploaded.status, 201);
      id = (await uploaded.json()).id;
    }
    const run = await cli(["list", "--data-dir", dir]);
    assert.equal(run.code, 0, run.stderr);
    assert.equal(JSON.parse(run.stdout).id, id);
    // A public key in base64url can start with "-" or "--": given apart
    // from --owner, it is still its value, not taken for a flag.
    for (const key of [`-${"A".repeat(42)}`, `--${"A".repeat(41)}`]) {
      const other = await cli(["list", "--data-dir", dir, "--owner", key]);
      assert.equal(other.code, 0, other.stderr);
      assert.equal(other.stdout, "");
    }
    // A forgotten value is refused, not taken for the key.
    const forgotten = await cli(["list", "--owner", "--data-dir", dir]);
    assert.equal(forgotten.code, 2);
    assert.match(forgotten.stderr, /--owner/);
    const mine = await cli([
      "list",
      "--data-dir",
      dir,
      "--owner",
      JSON.parse(run.stdout).ownerPubkey,
    ]);
    assert.equal(mine.code, 0, mine.stderr);
    assert.equal(JSON.parse(mine.stdout).id, id);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("keygen --out prints the public key alone on stdout and its message on stderr", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const key = join(dir, "author.pem");
    const run = await cli(["keygen", "--out", key]);
    assert.equal(run.code, 0, run.stderr);
    assert.match(run.stdout, /^[A-Za-z0-9_-]{43}\n$/);
    assert.match(
      run.stderr,
      /^pod-broker: wrote a new private key to '.*author\.pem' \(mode 0600\)\n$/,
    );
    assert.ok(!run.stderr.includes(run.stdout.trim()));
    // That the key printed is the key written is held by cli_test.ts
    // (keygen, sign and verify).
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("keygen without --out writes the key on stdout and the public key on stderr", async () => {
  const run = await cli(["keygen"]);
  assert.equal(run.code, 0, run.stderr);
  assert.match(run.stdout, /^-----BEGIN PRIVATE KEY-----\n/);
  assert.match(run.stderr, /^publicKey: [A-Za-z0-9_-]{43}\n$/);
});
