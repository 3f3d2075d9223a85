import assert from "node:assert/strict";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { tsFiles } from "../support/source_files.ts";

const ROOT = new URL("../..", import.meta.url).pathname;
const SRC = pathToFileURL(join(ROOT, "src/")).href;

interface InfoModule {
  specifier: string;
  dependencies?: {
    code?: { specifier?: string };
    type?: { specifier?: string };
  }[];
}

/** The import graph among src/ files, as `deno info --json` sees it. */
async function importGraph(): Promise<Map<string, string[]>> {
  // One root that imports every file of src/, so no file is left out.
  const dir = await Deno.makeTempDir();
  const root = join(dir, "all.ts");
  const files = await tsFiles(join(ROOT, "src"));
  await writeFile(
    root,
    files.map((file) => `import "${pathToFileURL(file).href}";\n`).join(""),
  );
  const { code, stdout, stderr } = await new Deno.Command(Deno.execPath(), {
    args: ["info", "--json", "--config", join(ROOT, "deno.json"), root],
    stdin: "null",
    env: { NO_COLOR: "1" },
  }).output();
  await Deno.remove(dir, { recursive: true });
  assert.equal(code, 0, new TextDecoder().decode(stderr));
  const { modules } = JSON.parse(new TextDecoder().decode(stdout)) as {
    modules: InfoModule[];
  };
  const graph = new Map<string, string[]>();
  for (const module of modules) {
    if (!module.specifier.startsWith(SRC)) continue;
    graph.set(
      module.specifier.slice(SRC.length),
      (module.dependencies ?? []).flatMap((dependency) =>
        [dependency.code?.specifier, dependency.type?.specifier].flatMap((
          specifier,
        ) => specifier?.startsWith(SRC) ? [specifier.slice(SRC.length)] : [])
      ),
    );
  }
  assert.equal(graph.size, files.length, "every src/ file is in the graph");
  return graph;
}

/** Every cycle's files, by Tarjan's strongly connected components. */
function cycles(graph: ReadonlyMap<string, readonly string[]>): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (node: string) => {
    index.set(node, index.size);
    low.set(node, index.get(node)!);
    stack.push(node);
    onStack.add(node);
    for (const next of graph.get(node) ?? []) {
      if (!index.has(next)) {
        visit(next);
        low.set(node, Math.min(low.get(node)!, low.get(next)!));
      } else if (onStack.has(next)) {
        low.set(node, Math.min(low.get(node)!, index.get(next)!));
      }
    }
    if (low.get(node) === index.get(node)) {
      const component: string[] = [];
      let member: string;
      do {
        member = stack.pop()!;
        onStack.delete(member);
        component.push(member);
      } while (member !== node);
      const selfLoop = graph.get(node)?.includes(node) ?? false;
      if (component.length > 1 || selfLoop) found.push(component.sort());
    }
  };
  for (const node of graph.keys()) if (!index.has(node)) visit(node);
  return found;
}

Deno.test("cycles() finds a cycle and passes a tree", () => {
  assert.deepEqual(
    cycles(new Map([["a", ["b"]], ["b", ["c"]], ["c", ["a"]], ["d", ["a"]]])),
    [["a", "b", "c"]],
  );
  assert.deepEqual(cycles(new Map([["a", ["b", "c"]], ["b", ["c"]]])), []);
});

Deno.test("no import cycle among src/ files (deno info --json)", async () => {
  const graph = await importGraph();
  assert.ok([...graph.values()].some((deps) => deps.length > 0));
  assert.deepEqual(cycles(graph), []);
});

Deno.test("tests/ import nothing from scripts/ (scripts may use tests/support)", async () => {
  const files = await tsFiles(join(ROOT, "tests"));
  assert.ok(files.length > 50);
  const offenders: string[] = [];
  for (const file of files) {
    const text = await Deno.readTextFile(file);
    if (/(?:from|import\()\s*["'][./]*\/scripts\//.test(text)) {
      offenders.push(file.slice(ROOT.length));
    }
  }
  assert.deepEqual(offenders, []);
});

/**
 * The layers of src/ from the bottom up (docs/development.md, "Where things
 * are"): its folders, with its top-level files as two layers of their own
 * (`version.ts`, a leaf, and the entry points, which nothing under them may
 * import).
 */
const LAYERS = [
  "client", // runs in browsers, imports nothing
  "version.ts",
  "_util",
  "pod",
  "registries",
  "serving",
  "signaling",
  "operator",
  "config",
  "bundler", // pod-broker build: imports pod/ and serving/, nothing of the server
  "http",
  "adapters",
  "cli",
  "entries", // mod.ts, mod_node.ts, core.ts, adapter.ts
];

/** The layer a src/ file belongs to. */
function layerOf(file: string): string {
  if (file.includes("/")) return file.slice(0, file.indexOf("/"));
  return file === "version.ts" ? file : "entries";
}

Deno.test("src/ is layers, its top-level files included: each imports only from the layers below it", async () => {
  const graph = await importGraph();
  const upward: string[] = [];
  const seen = new Set<string>();
  for (const [file, deps] of graph) {
    const from = layerOf(file);
    seen.add(from);
    for (const dep of deps) {
      const to = layerOf(dep);
      if (to === from) continue;
      if (to === "client" || LAYERS.indexOf(to) > LAYERS.indexOf(from)) {
        upward.push(`${file} -> ${dep}`);
      }
    }
  }
  assert.deepEqual([...seen].sort(), [...LAYERS].sort());
  assert.deepEqual(upward, []);
});

Deno.test("the bundler pulls in nothing of the server: only pod/, serving/, _util/ and version.ts", async () => {
  const graph = await importGraph();
  const reached = new Set<string>();
  const visit = (file: string) => {
    if (reached.has(file)) return;
    reached.add(file);
    for (const dep of graph.get(file) ?? []) visit(dep);
  };
  const bundler = [...graph.keys()].filter((file) =>
    file.startsWith("bundler/")
  );
  assert.ok(bundler.includes("bundler/mod.ts"));
  bundler.forEach(visit);
  const outside = [...reached].filter((file) =>
    !["bundler", "pod", "serving", "_util", "version.ts"].includes(
      layerOf(file),
    )
  );
  assert.deepEqual(outside, []);
});
