// JSR readiness: the dry-run publish passes (offline) and ships runtime
// files only (tests/unit/public_surface_test.ts checks the documentation).
import assert from "node:assert/strict";

const ROOT = new URL("../..", import.meta.url).pathname;

async function deno(args: string[]): Promise<{ code: number; output: string }> {
  const { code, stdout, stderr } = await new Deno.Command(Deno.execPath(), {
    args,
    cwd: ROOT,
    stdin: "null",
    env: { NO_COLOR: "1" },
  }).output();
  const text = new TextDecoder();
  return { code, output: text.decode(stdout) + text.decode(stderr) };
}

Deno.test("deno publish --dry-run passes and ships runtime files only: no Node adapter, tests or docs", async () => {
  const { code, output } = await deno([
    "publish",
    "--dry-run",
    "--allow-dirty",
  ]);
  assert.equal(code, 0, output);
  assert.match(output, /src\/mod\.ts/);
  assert.match(output, /src\/adapter\.ts/);
  assert.doesNotMatch(
    output,
    /mod_node\.ts|adapters\/(node|_node_\w+)\.ts|tests\/|docs\/|examples\//,
  );
});
