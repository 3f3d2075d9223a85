// The layout issue 18 asked for, kept: the top of src/ is the public surface
// (at most 8 files), and no file in src/ grows past 500 lines.
import assert from "node:assert/strict";
import { readdir, readFile } from "node:fs/promises";
import { tsFiles } from "../support/source_files.ts";

const SRC = new URL("../../src/", import.meta.url).pathname;

Deno.test("src/ has at most 8 files at its top, each an entry point or the public surface", async () => {
  const top = (await readdir(SRC, { withFileTypes: true }))
    .filter((entry) => entry.isFile()).map((entry) => entry.name).sort();
  assert.ok(top.length > 0 && top.length <= 8, top.join(", "));
});

Deno.test("no file in src/ is over 500 lines", async () => {
  const files = await tsFiles(SRC);
  assert.ok(files.length > 50);
  const long: string[] = [];
  for (const file of files) {
    const lines = (await readFile(file, "utf8")).split("\n").length - 1;
    if (lines > 500) long.push(`${file.slice(SRC.length)}: ${lines}`);
  }
  assert.deepEqual(long, []);
});
