// The npm package's server is bundled: a start on Node loads its code from a
// few files of esm/server/, not one file per module (Node reads, parses and
// links each file of a start on its own), and no per-file copy of the
// server ships beside the bundle. The client stays per file, with its types.
// Each bundled file has a source map, so that Node with --enable-source-maps
// names the TypeScript file and line in a stack trace.
import assert from "node:assert/strict";
import { readdir } from "node:fs/promises";
import { dirname, join, relative } from "node:path";
import {
  ensureTarball,
  installTarball,
  nodePath,
  ROOT,
  run,
} from "../support/npm_package.ts";
import { NODE_BIN, PACKAGE_NAME, SERVER_DIR } from "../support/npm_layout.ts";

/**
 * The most files a start of the bin may load: the entry and its chunks
 * (21 today, against the 114 modules of the per-file build).
 */
const START_FILES_MAX = 32;

/** The package's files a module imports statically, by relative path. */
async function staticImports(path: string): Promise<string[]> {
  const code = await Deno.readTextFile(path);
  const found = code.matchAll(
    /^(?:import|export)\s[^;]*?["'](\.{1,2}\/[^"']+)["']/gms,
  );
  return [...found].map((match) => join(dirname(path), match[1]!));
}

Deno.test("the npm package's bin starts from a few bundled files of esm/server/, with no per-file server code beside them", async () => {
  const project = await installTarball(await ensureTarball());
  try {
    const root = join(project, "node_modules", PACKAGE_NAME);
    const loaded = new Set<string>();
    const visit = async (path: string) => {
      if (loaded.has(path)) return;
      loaded.add(path);
      for (const next of await staticImports(path)) await visit(next);
    };
    await visit(join(root, NODE_BIN));
    const files = [...loaded].map((path) => relative(root, path)).sort();
    assert.ok(
      files.every((file) => file.startsWith(`esm/${SERVER_DIR}/`)),
      `a start loads only the bundle: ${files.join(", ")}`,
    );
    assert.ok(
      files.length > 1 && files.length <= START_FILES_MAX,
      `a start loads ${files.length} files: ${files.join(", ")}`,
    );
    const perFile = (await readdir(join(root, "esm"), { recursive: true }))
      .filter((file) =>
        file.endsWith(".js") && !file.startsWith(`${SERVER_DIR}/`) &&
        !file.startsWith("client/")
      );
    assert.deepEqual(perFile, [], "no per-file server code ships");
    await Deno.stat(join(root, "esm", "mod_node.d.ts"));
    await Deno.stat(join(root, "esm", "client", "mod.js"));
  } finally {
    await Deno.remove(project, { recursive: true });
  }
});

Deno.test("the bundle's source maps name the TypeScript file and line in a stack trace on Node with --enable-source-maps, and ship no source text", async () => {
  const project = await installTarball(await ensureTarball());
  try {
    const server = join(
      project,
      "node_modules",
      PACKAGE_NAME,
      "esm",
      SERVER_DIR,
    );
    const files = await readdir(server);
    const code = files.filter((file) => file.endsWith(".js"));
    assert.ok(code.length > 1);
    for (const file of code) {
      assert.ok(files.includes(`${file}.map`), `${file} has no map`);
      const map = JSON.parse(
        await Deno.readTextFile(join(server, `${file}.map`)),
      ) as { sources: string[]; sourcesContent?: unknown };
      assert.equal(map.sourcesContent, undefined, `${file}.map holds source`);
      for (const source of map.sources) {
        assert.match(source, /^\.\.\/\.\.\/src\/[\w/]+\.ts$/, `${file}.map`);
      }
    }
    // A bad Redis URL throws inside the bundle, in RedisBus's constructor.
    const script = join(project, "throw.mjs");
    await Deno.writeTextFile(
      script,
      `import { createRedisBus } from "${PACKAGE_NAME}/bus-redis";
try { await createRedisBus({ url: "http://x" }); } catch (error) { console.log(error.stack); }`,
    );
    const node = await nodePath();
    const stack = (enable: boolean) =>
      run(
        node,
        [...(enable ? ["--enable-source-maps"] : []), script],
        project,
        60_000,
      );
    const mapped = await stack(true);
    const at = mapped.match(/\/src\/signaling\/bus\/redis\.ts:(\d+):\d+\)/);
    assert.ok(at, `no TypeScript frame in:\n${mapped}`);
    const line = (await Deno.readTextFile(
      join(ROOT, "src", "signaling", "bus", "redis.ts"),
    )).split("\n")[Number(at[1]) - 1];
    assert.match(line ?? "", /throw new RedisUrlError/, `line ${at[1]}`);
    // Without the flag, Node names the bundle, as before.
    assert.match(await stack(false), /esm\/server\/redis\.js:\d+/);
  } finally {
    await Deno.remove(project, { recursive: true });
  }
});
