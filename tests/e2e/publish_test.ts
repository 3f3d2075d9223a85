// JSR readiness: the dry-run publish passes (offline) and the documentation
// of every export is complete.
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

Deno.test("deno publish --dry-run passes and leaves Node-only files out", async () => {
  const { code, output } = await deno([
    "publish",
    "--dry-run",
    "--allow-dirty",
  ]);
  assert.equal(code, 0, output);
  assert.match(output, /src\/mod\.ts/);
  assert.doesNotMatch(output, /mod_node\.ts|adapters\/node\.ts|tests\//);
});

Deno.test("deno doc --lint finds every export documented and explicitly typed", async () => {
  const { code, output } = await deno(["doc", "--lint", "src/mod.ts"]);
  assert.equal(code, 0, output);
});
