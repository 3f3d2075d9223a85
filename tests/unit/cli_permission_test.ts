// A Deno permission the command line did not grant is the user's to add:
// the CLI names it on one line and exits 2, never "a bug, please report
// it", whichever variable or flag made the broker need it. And no secret
// value is printed.
import assert from "node:assert/strict";
import { MOD } from "../support/helpers.ts";

const ROOT = new URL("../..", import.meta.url).pathname;

/** `deno run` with `deno task start`'s flags less --allow-env. */
async function withoutEnv(args: string[], env: Record<string, string>) {
  const { code, stderr } = await new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "--lock=serve.lock",
      "--frozen",
      "--allow-net",
      "--allow-read",
      "--allow-write",
      MOD,
      ...args,
      "--port",
      "0",
      "--hostname",
      "127.0.0.1",
    ],
    cwd: ROOT,
    env: { NO_COLOR: "1", ...env },
    stdin: "null",
    stdout: "null",
  }).output();
  return { code, stderr: new TextDecoder().decode(stderr) };
}

const SECRET = `s3cret-${crypto.randomUUID()}`;
const CASES: [string, string[], Record<string, string>, RegExp][] = [
  [
    "POD_BROKER_TURN_SECRET",
    ["--turn-url", "turn:127.0.0.1:3478"],
    { POD_BROKER_TURN_SECRET: SECRET },
    /env access to "POD_BROKER_TURN_SECRET"/,
  ],
  [
    "DATABASE_URL",
    ["--registry", "postgres"],
    { DATABASE_URL: `postgres://u:${SECRET}@127.0.0.1:1/db` },
    /env access to "DATABASE_URL"/,
  ],
  [
    "--database-url (the client reads PG* variables)",
    ["--registry", "postgres", "--database-url", "postgres://u@127.0.0.1:1/db"],
    {},
    /env access to "PG[A-Z]+"/,
  ],
  [
    "REDIS_URL",
    ["--bus", "redis"],
    { REDIS_URL: `redis://:${SECRET}@127.0.0.1:1` },
    /env access to "REDIS_URL"/,
  ],
];

for (const [what, args, env, reason] of CASES) {
  Deno.test(`without --allow-env, ${what} is one line naming the flag, exit 2`, async () => {
    const { code, stderr } = await withoutEnv(args, env);
    assert.equal(code, 2, stderr);
    assert.equal(stderr.trimEnd().split("\n").length, 1, stderr);
    assert.match(stderr, /^pod-broker: a permission is missing: /);
    assert.match(stderr, reason);
    assert.match(stderr, /--allow-env/);
    assert.doesNotMatch(stderr, /a bug|\n\s+at /);
    assert.ok(!stderr.includes(SECRET), "no secret printed");
  });
}

Deno.test("deno task start grants the environment", async () => {
  const config = JSON.parse(
    await Deno.readTextFile(new URL("../../deno.json", import.meta.url)),
  );
  assert.match(config.tasks.start, / --allow-env /);
});
