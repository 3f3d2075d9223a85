// The `pod-broker` command line: Deno's (`deno run -A src/mod.ts`) and the
// npm package's bin on Node 22. Runs on both (see _support.ts).
import assert from "node:assert/strict";
import { collect, runCli } from "./_support.ts";

const { cases, test } = collect();

/** The CLI cases. */
export const CLI_CASES = cases;

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
