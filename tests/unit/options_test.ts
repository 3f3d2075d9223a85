import assert from "node:assert/strict";
import { readdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { MARKERS, renderOptionsTable } from "../../scripts/options_doc.ts";
import {
  DEFAULT_MAX_BLOB_BYTES,
  DEFAULT_SIGNALING,
  OptionError,
  OPTIONS,
  resolveOptions,
} from "../../src/config/options.ts";
import { MemoryRegistry } from "../../src/registries/memory.ts";

const ROOT = new URL("../..", import.meta.url).pathname;

/** Table rows as lists of trimmed cells, whatever the column padding. */
function rows(markdown: string): string[][] {
  return markdown.split("\n").filter((line) => line.startsWith("|")).map((
    line,
  ) => line.slice(1, -1).split(/(?<!\\)\|/).map((cell) => cell.trim())).filter((
    cells,
  ) => !cells.every((cell) => /^-+$/.test(cell)));
}

Deno.test("README's options table is the one generated from OPTIONS", async () => {
  const readme = await readFile(join(ROOT, "README.md"), "utf8");
  const start = readme.indexOf(MARKERS[0]);
  const end = readme.indexOf(MARKERS[1]);
  assert.ok(start !== -1 && end > start, "the markers are in the README");
  assert.deepEqual(
    rows(readme.slice(start, end)),
    rows(renderOptionsTable()),
    "README.md is stale: run `deno task docs`",
  );
});

async function sourcesOf(dir: string): Promise<Map<string, string>> {
  const sources = new Map<string, string>();
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) {
      for (const [p, text] of await sourcesOf(path)) sources.set(p, text);
    } else if (path.endsWith(".ts")) {
      sources.set(path, await readFile(path, "utf8"));
    }
  }
  return sources;
}

Deno.test("every option default is written once in src/ code, and doc defaults agree", async () => {
  // The browser client (src/client/) is a separate bundle with its own
  // constants; the broker's options are not its business.
  const sources = new Map(
    [...(await sourcesOf(join(ROOT, "src")))].filter(([path]) =>
      !path.includes("/src/client/")
    ),
  );
  const code = [...sources.values()].map((text) =>
    text.replace(/\/\*[^]*?\*\//g, "").replace(/(^|[^:])\/\/.*$/gm, "$1")
  ).join("\n");
  for (const literal of ["52_428_800", "65_536", "30_000", "3_600", "8080"]) {
    const plain = literal.replaceAll("_", "");
    const count = code.split(literal).length - 1 +
      (plain === literal ? 0 : code.split(plain).length - 1);
    assert.equal(count, 1, `${literal} appears ${count} times in src/ code`);
  }
  // `@default {X}` in the option types' doc comments must match the table.
  const docs = [...sources.values()].join("\n");
  let checked = 0;
  // The doc comment names the member only (`hostname` is both the server's
  // and the metrics listener's): it must match one of the rows so named.
  const defaultsByName = new Map<string, unknown[]>();
  for (const row of OPTIONS) {
    if (row.default === undefined) continue;
    const name = row.key.split(".").at(-1)!;
    defaultsByName.set(name, [
      ...(defaultsByName.get(name) ?? []),
      row.default,
    ]);
  }
  for (const [name, defaults] of defaultsByName) {
    const pattern = new RegExp(
      `@default \\{([^}]*)\\}\\s*\\*/\\s*${name}\\?:`,
      "g",
    );
    for (const [, documented] of docs.matchAll(pattern)) {
      const value = JSON.parse(documented!);
      assert.ok(
        defaults.some((d) => JSON.stringify(d) === JSON.stringify(value)),
        `${name}: @default ${documented} is not the table's`,
      );
      checked++;
    }
  }
  assert.ok(checked >= 10, `only ${checked} documented defaults found`);
  assert.equal(DEFAULT_MAX_BLOB_BYTES, 52_428_800);
  assert.equal(DEFAULT_SIGNALING.maxFrameBytes, 65_536);
});

Deno.test("OPTIONS has one row per key and per flag, each with help", () => {
  const keys = OPTIONS.map((row) => row.key);
  assert.equal(new Set(keys).size, keys.length);
  const flags = OPTIONS.flatMap((row) => row.flag ?? []);
  assert.equal(new Set(flags).size, flags.length);
  for (const row of OPTIONS) assert.ok(row.help.length > 10, row.key);
});

Deno.test("resolveOptions() fills every default from the table", () => {
  const resolved = resolveOptions({ registry: new MemoryRegistry() });
  assert.equal(resolved.port, 8080);
  assert.equal(resolved.hostname, "0.0.0.0");
  assert.equal(resolved.baseUrl, null);
  assert.equal(resolved.maxBlobBytes, DEFAULT_MAX_BLOB_BYTES);
  assert.deepEqual(resolved.signaling, {
    ...DEFAULT_SIGNALING,
    allowedOrigins: null,
  });
  assert.deepEqual(resolved.iceServers, []);
  assert.equal(resolved.turn, null);
  assert.deepEqual(resolved.iceServersFor("p"), []);
});

Deno.test("resolveOptions() checks iceServers and turn, naming the option", () => {
  const registry = new MemoryRegistry();
  const cases: [Record<string, unknown>, string][] = [
    [{ iceServers: [{ urls: "http://stun.example" }] }, "iceServers"],
    [{ iceServers: [{ urls: "turn:relay.example" }] }, "iceServers"],
    [{ iceServers: [{ urls: [], username: "u" }] }, "iceServers"],
    [{ iceServers: [{ urls: "stun:s.example", extra: 1 }] }, "iceServers"],
    [{ iceServers: "stun:s.example" }, "iceServers"],
    [{ turn: { urls: ["stun:s.example"], secret: "x" } }, "turn.urls"],
    [{ turn: { urls: [], secret: "x" } }, "turn.urls"],
    [{ turn: { urls: ["turn:r.example"] } }, "turn.secret"],
    [{ turn: { urls: ["turn:r.example"], secret: "" } }, "turn.secret"],
    [
      { turn: { urls: ["turn:r.example"], secret: "x", ttlSeconds: 0 } },
      "turn.ttlSeconds",
    ],
    [{ turn: { urls: ["turn:r.example"], secret: "x", ttl: 5 } }, "turn.ttl"],
  ];
  for (const [options, key] of cases) {
    assert.throws(
      () => resolveOptions({ registry, ...options }),
      (error: Error) =>
        error instanceof TypeError && error.message.includes(`'${key}'`) &&
        !error.message.includes("'x'"),
      JSON.stringify(options),
    );
  }
  const ok = resolveOptions({
    registry,
    iceServers: [
      { urls: "stun:stun.example:3478" },
      { urls: ["turn:fixed.example"], username: "u", credential: "c" },
    ],
    turn: {
      urls: ["turn:relay.example:3478", "turns:relay.example:443"],
      secret: "s",
    },
  });
  assert.equal(ok.turn?.ttlSeconds, 3_600);
  assert.equal(ok.iceServersFor("peer").length, 3);
});

Deno.test("OptionError is a TypeError that carries the key and reason", () => {
  try {
    resolveOptions({ registry: new MemoryRegistry(), port: 70_000 });
    assert.fail("no error");
  } catch (error) {
    assert.ok(error instanceof OptionError && error instanceof TypeError);
    assert.equal(error.key, "port");
    assert.equal(error.reason, "must be an integer from 0 to 65535");
  }
});
