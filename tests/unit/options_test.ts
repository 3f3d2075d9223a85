import assert from "node:assert/strict";
import { readdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import ts from "typescript";
import { MARKERS, renderOptionsTable } from "../support/options_doc.ts";
import {
  DEFAULT_MAX_BLOB_BYTES,
  DEFAULT_SIGNALING,
  KINDS,
  OptionError,
  type OptionRowsOf,
  OPTIONS,
  type OptionsFrom,
  type ResolvedFrom,
  resolveOptions,
  resolveWith,
  TABLE,
  type TableRow,
} from "../../src/config/options.ts";
import {
  describeOptionError,
  openBus,
  optionsFromFlags,
  parseServeArgs,
  serveHelp,
} from "../../src/cli/serve_flags.ts";
import type { SignalServerOptions } from "../../src/config/types.ts";
import { MemoryRegistry } from "../../src/registries/memory.ts";
import { UsageError } from "../../src/cli/usage_error.ts";

const ROOT = new URL("../..", import.meta.url).pathname;

/** Table rows as lists of trimmed cells, whatever the column padding. */
function rows(markdown: string): string[][] {
  return markdown.split("\n").filter((line) => line.startsWith("|")).map((
    line,
  ) => line.slice(1, -1).split(/(?<!\\)\|/).map((cell) => cell.trim())).filter((
    cells,
  ) => !cells.every((cell) => /^-+$/.test(cell)));
}

Deno.test("the options page's table is the one generated from OPTIONS", async () => {
  const page = await readFile(
    join(ROOT, "docs", "operators", "options.md"),
    "utf8",
  );
  const start = page.indexOf(MARKERS[0]);
  const end = page.indexOf(MARKERS[1]);
  assert.ok(start !== -1 && end > start, "the markers are in the page");
  assert.deepEqual(
    rows(page.slice(start, end)),
    rows(renderOptionsTable()),
    "docs/operators/options.md is stale: run `deno task docs`",
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

Deno.test("every option default is written once in src/ code", async () => {
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
    // Whole numbers only: 130_000 is not 30_000.
    const whole = (text: string) =>
      code.match(new RegExp(`(?<![\\d_.])${text}(?![\\d_])`, "g"))?.length ?? 0;
    const plain = literal.replaceAll("_", "");
    const count = whole(literal) + (plain === literal ? 0 : whole(plain));
    assert.equal(count, 1, `${literal} appears ${count} times in src/ code`);
  }
  assert.equal(DEFAULT_MAX_BLOB_BYTES, 52_428_800);
  assert.equal(DEFAULT_SIGNALING.maxFrameBytes, 65_536);
});

// SignalServerOptions is written by hand for its doc comments. The type
// test below proves its keys and value types are the table's; this one
// reads its `@default` tags (with the TypeScript compiler, through the
// interfaces it names) and proves they are the table's defaults.
Deno.test("SignalServerOptions documents exactly the table's keys and defaults", () => {
  const file = join(ROOT, "src/config/types.ts");
  const program = ts.createProgram([file], {
    allowImportingTsExtensions: true,
    noEmit: true,
    noResolve: false,
    skipLibCheck: true,
    target: ts.ScriptTarget.ESNext,
    module: ts.ModuleKind.ESNext,
    moduleResolution: ts.ModuleResolutionKind.Bundler,
  });
  const checker = program.getTypeChecker();
  const source = program.getSourceFile(file)!;
  const declaration = source.statements.find((node) =>
    ts.isInterfaceDeclaration(node) && node.name.text === "SignalServerOptions"
  )!;
  const groups = new Set(
    OPTIONS.flatMap((row) =>
      row.key.includes(".") ? row.key.split(".")[0]! : []
    ),
  );
  const documented = new Map<string, string | undefined>();
  const walk = (type: ts.Type, prefix: string) => {
    for (const member of checker.getPropertiesOfType(type)) {
      const key = `${prefix}${member.name}`;
      if (prefix === "" && groups.has(key)) {
        const inner = checker.getNonNullableType(
          checker.getTypeOfSymbolAtLocation(member, declaration),
        );
        walk(inner, `${key}.`);
        continue;
      }
      const tag = member.getJsDocTags(checker).find((t) =>
        t.name === "default"
      );
      documented.set(
        key,
        tag
          ? ts.displayPartsToString(tag.text).replace(/^\{|\}$/g, "")
          : undefined,
      );
    }
  };
  walk(checker.getTypeAtLocation(declaration), "");
  assert.deepEqual(
    [...documented.keys()].sort(),
    OPTIONS.map((row) => row.key).sort(),
  );
  for (const row of OPTIONS) {
    const doc = documented.get(row.key);
    if (row.default === undefined) {
      assert.equal(
        doc,
        undefined,
        `${row.key}: @default ${doc} but no default`,
      );
    } else if (typeof row.default === "function") {
      assert.equal(doc, row.default.name, row.key);
    } else {
      assert.ok(doc !== undefined, `${row.key}: no @default in its doc`);
      assert.deepEqual(JSON.parse(doc), row.default, row.key);
    }
  }
});

type Equal<A, B> = (<T>() => T extends A ? 1 : 2) extends
  (<T>() => T extends B ? 1 : 2) ? true : false;

// A type-level test: it fails `deno check` (and so this file) on drift.
const _sameKeysAndTypes: Equal<
  OptionsFrom<OptionRowsOf<typeof TABLE>>,
  SignalServerOptions
> = true;
const _drifted: Equal<
  OptionsFrom<OptionRowsOf<typeof TABLE>>,
  Omit<SignalServerOptions, "port">
> = false;

Deno.test("OPTIONS has one row per key and per flag, each with help", () => {
  const keys = OPTIONS.map((row) => row.key);
  assert.equal(new Set(keys).size, keys.length);
  const flags = TABLE.flatMap((row) => row.flag ?? []);
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

// Adding an option is one row plus its use: a copy of the table with one
// more option row and one more CLI-only row, and nothing else edited, gives
// the flag, its help line, its row on the options page, its resolved value and its type.
const WITH_NEW_ROWS = [
  ...TABLE,
  {
    key: "signaling.maxRooms",
    flag: "max-rooms",
    arg: "N",
    kind: "integer",
    default: 7,
    min: 1,
    max: 99,
    help: "rooms one broker keeps open at once",
  },
  {
    key: null,
    flag: "pid-file",
    arg: "PATH",
    kind: "string",
    help: "where the CLI writes its process id",
  },
] as const satisfies readonly TableRow[];

// The type follows the row: `signaling.maxRooms` is a resolved number.
const _newRowType: Equal<
  ResolvedFrom<OptionRowsOf<typeof WITH_NEW_ROWS>>["signaling"]["maxRooms"],
  number
> = true;

Deno.test("a new row in the table is a flag, a help line, a row of the options page and a resolved value", async () => {
  const registry = new MemoryRegistry();
  // Resolution: the default, a given value, and the range, from the row.
  assert.equal(resolveWith(WITH_NEW_ROWS, { registry }).signaling.maxRooms, 7);
  assert.throws(
    () =>
      resolveWith(WITH_NEW_ROWS, { registry, signaling: { maxRooms: 100 } }),
    (error) =>
      error instanceof OptionError && error.key === "signaling.maxRooms" &&
      error.reason === "must be an integer from 1 to 99",
  );
  // Without the row, the same option is unknown.
  assert.throws(
    () => resolveWith(TABLE, { registry, signaling: { maxRooms: 3 } }),
    /unknown option 'signaling.maxRooms'/,
  );
  // The CLI: the flag parses, converts and resolves; the CLI-only flag is read.
  const values = parseServeArgs(
    ["--max-rooms", "9", "--pid-file", "/run/b.pid"],
    WITH_NEW_ROWS,
  );
  const { options, cli, given } = await optionsFromFlags(
    values,
    {},
    WITH_NEW_ROWS,
  );
  assert.equal(cli["pid-file"], "/run/b.pid");
  assert.equal(
    resolveWith(WITH_NEW_ROWS, { ...options, registry }).signaling.maxRooms,
    9,
  );
  assert.throws(() => parseServeArgs(["--max-rooms", "9"]), /max-rooms/);
  // A bad value names the new flag, on one line.
  const bad = await optionsFromFlags(
    parseServeArgs(["--max-rooms", "100"], WITH_NEW_ROWS),
    {},
    WITH_NEW_ROWS,
  );
  try {
    resolveWith(WITH_NEW_ROWS, { ...bad.options, registry });
    assert.fail("no error");
  } catch (error) {
    assert.ok(error instanceof OptionError);
    assert.equal(
      describeOptionError(error, bad.given, WITH_NEW_ROWS),
      "Cannot use --max-rooms '100': must be an integer from 1 to 99",
    );
  }
  assert.equal(given.get("signaling.maxRooms"), "9");
  // --help and the options page.
  assert.match(
    serveHelp(WITH_NEW_ROWS),
    /^ {2}--max-rooms N +rooms one broker keeps open at once \(default 7\)$/m,
  );
  assert.match(
    serveHelp(WITH_NEW_ROWS),
    /^ {2}--pid-file PATH +where the CLI/m,
  );
  assert.deepEqual(
    rows(renderOptionsTable(WITH_NEW_ROWS)).slice(-2),
    [
      [
        "`signaling.maxRooms`",
        "`--max-rooms N`",
        "7",
        "rooms one broker keeps open at once",
      ],
      ["—", "`--pid-file PATH`", "", "where the CLI writes its process id"],
    ],
  );
});

Deno.test("every kind a flag uses can read text, and every choice lists its values", () => {
  for (const row of TABLE) {
    if (row.flag !== null) {
      assert.ok(KINDS[row.kind].fromText !== null, `${row.flag}: no fromText`);
    }
    if (row.kind === "choice") assert.ok(row.choices.length > 1, row.flag);
  }
});

Deno.test("the CLI names flags from the errors' fields, not their text: a TURN secret required with --turn-url, a bad Redis URL", async () => {
  const registry = new MemoryRegistry();
  const flags = await optionsFromFlags(
    parseServeArgs(["--turn-url", "turn:127.0.0.1:3478"]),
    {},
  );
  try {
    resolveOptions({ ...flags.options, registry });
    assert.fail("no error");
  } catch (error) {
    assert.ok(error instanceof OptionError);
    assert.equal(error.key, "turn.secret");
    assert.equal(error.other, "turn.urls");
    // The library's own message names the option keys ...
    assert.match(
      error.message,
      /option 'turn.secret' is required with turn.urls$/,
    );
    // ... and the CLI's names their flags.
    assert.equal(
      describeOptionError(error, flags.given),
      "Cannot start: --turn-secret-file or env POD_BROKER_TURN_SECRET is required with --turn-url",
    );
  }
  // A word of a reason that happens to be an option's key stays a word.
  assert.equal(
    describeOptionError(
      new OptionError("port", "must be a free port"),
      new Map(),
    ),
    "Cannot start: --port must be a free port",
  );
  for (
    const [url, reason] of [
      ["not a url", "it is not a URL"],
      ["http://127.0.0.1:6379", "expected redis:// or rediss://"],
    ]
  ) {
    await assert.rejects(
      openBus({ bus: "redis", "redis-url": url }, {}),
      (error: Error) => {
        assert.ok(error instanceof UsageError);
        assert.equal(error.message, `Cannot use --redis-url: ${reason}`);
        return true;
      },
    );
  }
});
