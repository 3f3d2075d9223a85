// The package's public surface: the main entries export a small, stable set
// of names (the building blocks are the unstable `./adapter` subpath), no
// type helper leaks into it, and `deno doc --lint` is clean on every entry.
import assert from "node:assert/strict";

const ROOT = new URL("../..", import.meta.url);

/** The names a module exports, as `deno doc --json` lists them. */
async function exportedNames(entry: string): Promise<string[]> {
  const { code, stdout, stderr } = await new Deno.Command(Deno.execPath(), {
    args: ["doc", "--json", new URL(entry, ROOT).pathname],
    stdin: "null",
    env: { NO_COLOR: "1" },
  }).output();
  assert.equal(code, 0, new TextDecoder().decode(stderr));
  const { nodes } = JSON.parse(new TextDecoder().decode(stdout)) as {
    nodes: Record<string, { symbols: { name: string }[] }>;
  };
  return Object.values(nodes).flatMap(({ symbols }) =>
    symbols.map(({ name }) => name)
  ).sort();
}

const STABLE = [
  "createSignalServer",
  "createPod",
  "signPod",
  "verifyPod",
  "MemoryRegistry",
  "SqliteRegistry",
  "SignalServerOptions",
  "Registry",
];
const TYPE_HELPERS = ["Simplify", "IsAlways", "Nullable", "ValueOf", "Fields"];
const BUILDING_BLOCKS = ["createBroker", "SignalingHub", "Metrics", "TABLE"];

for (const entry of ["src/mod.ts", "src/mod_node.ts"]) {
  Deno.test(`${entry} exports at most 50 names: the stable ones, no type helper, no building block`, async () => {
    const names = await exportedNames(entry);
    assert.ok(names.length <= 50, `${names.length} names: ${names}`);
    for (const name of STABLE) assert.ok(names.includes(name), name);
    for (const name of [...TYPE_HELPERS, ...BUILDING_BLOCKS]) {
      assert.ok(!names.includes(name), name);
    }
  });
}

Deno.test("the building blocks are the ./adapter subpath, which says it is unstable", async () => {
  const config = JSON.parse(
    await Deno.readTextFile(new URL("deno.json", ROOT)),
  );
  assert.equal(config.exports["./adapter"], "./src/adapter.ts");
  const names = await exportedNames("src/adapter.ts");
  for (const name of BUILDING_BLOCKS) assert.ok(names.includes(name), name);
  for (const name of TYPE_HELPERS) assert.ok(!names.includes(name), name);
  const text = await Deno.readTextFile(new URL("src/adapter.ts", ROOT));
  assert.match(text, /\*\*Unstable\.\*\*/);
});

Deno.test("deno doc --lint is clean on every entry of deno.json", async () => {
  const config = JSON.parse(
    await Deno.readTextFile(new URL("deno.json", ROOT)),
  );
  const entries = Object.values(config.exports as Record<string, string>)
    .map((file) => new URL(file, ROOT).pathname);
  const { code, stdout, stderr } = await new Deno.Command(Deno.execPath(), {
    args: ["doc", "--lint", ...entries],
    stdin: "null",
    env: { NO_COLOR: "1" },
  }).output();
  const text = new TextDecoder().decode(stdout) +
    new TextDecoder().decode(stderr);
  const problems = text.split("\n").filter((line) =>
    /^error\[/.test(line.trim())
  );
  assert.deepEqual(problems, []);
  assert.equal(code, 0, text);
});
