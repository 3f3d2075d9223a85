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

Deno.test("on Node, a start and its /health load neither srvx nor Node's Fetch implementation: the first request answered the long way loads them", async () => {
  const project = await installTarball(await ensureTarball());
  try {
    // The script reaches node:http as the broker does: an `import` of it
    // would load Node's Fetch implementation itself.
    const script = join(project, "health.mjs");
    await Deno.writeTextFile(
      script,
      `import { createSignalServer, MemoryRegistry } from "${PACKAGE_NAME}";
const http = process.getBuiltinModule("node:http");
const fetchLoaded = () => process.moduleLoadList.some((m) => m.includes("undici"));
const ask = (port, method, path) => new Promise((resolve, reject) => {
  http.request({ host: "127.0.0.1", port, method, path }, (res) => {
    let body = "";
    res.setEncoding("utf8").on("data", (chunk) => (body += chunk));
    res.on("end", () => resolve({ status: res.statusCode, headers: res.headers, body }));
  }).on("error", reject).setTimeout(10000, () => reject(new Error("no answer"))).end();
});
const server = await createSignalServer({ registry: new MemoryRegistry(), port: 0, hostname: "127.0.0.1", accessLog: "off" });
const atStart = fetchLoaded();
const get = await ask(server.port, "GET", "/health");
const head = await ask(server.port, "HEAD", "/health");
const afterHealth = fetchLoaded();
const missing = await ask(server.port, "GET", "/AAAAAAAAAAAA");
console.log(JSON.stringify({ atStart, afterHealth, afterMissing: fetchLoaded(), get, head, missing: missing.status }));
await server.close();`,
    );
    const out = JSON.parse(
      await run(await nodePath(), [script], project, 60_000),
    );
    assert.equal(out.atStart, false, "a start loads Node's Fetch");
    assert.equal(out.afterHealth, false, "/health loads Node's Fetch");
    assert.equal(out.get.status, 200);
    assert.equal(JSON.parse(out.get.body).status, "ok");
    assert.equal(out.get.headers["cache-control"], "no-store");
    assert.equal(out.get.headers["content-type"], "application/json");
    assert.equal(out.get.headers["access-control-allow-origin"], "*");
    assert.equal(
      Number(out.get.headers["content-length"]),
      new TextEncoder().encode(out.get.body).length,
    );
    assert.equal(out.head.status, 200);
    assert.equal(out.head.body, "");
    assert.equal(
      out.head.headers["content-length"],
      out.get.headers["content-length"],
    );
    // The long way (a 404 problem) loads them, and still answers.
    assert.equal(out.missing, 404);
    assert.equal(out.afterMissing, true);
  } finally {
    await Deno.remove(project, { recursive: true });
  }
});
