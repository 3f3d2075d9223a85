// The CLI's flag parser (src/cli/flags.ts) held to Node's util.parseArgs
// with strict: true, on generated command lines: the same values and
// positionals, or the same message (Node's lines joined by spaces).
import assert from "node:assert/strict";
import { parseArgs } from "node:util";
import fc from "fast-check";
import { FlagError, type FlagSpecs, parseFlags } from "../../src/cli/flags.ts";

const SPECS = {
  out: { type: "string", short: "o" },
  help: { type: "boolean", short: "h" },
  version: { type: "boolean", short: "V" },
  tag: { type: "string", multiple: true },
  quiet: { type: "boolean", multiple: true, short: "q" },
  owner: { type: "string" },
} as const satisfies FlagSpecs;

const WORDS = [
  "--out",
  "--out=",
  "--out=a",
  "--out=-a",
  "-o",
  "-oa",
  "-ho",
  "-oh",
  "--help",
  "-h",
  "--help=1",
  "-hV",
  "-hx",
  "-Vh",
  "-V",
  "-q",
  "-qq",
  "--quiet",
  "--quiet=yes",
  "--tag",
  "--tag=b",
  "--owner",
  "--owner=-k",
  "--",
  "-",
  "x",
  "y.html",
  "-a",
  "-5",
  "--bogus",
  "--bogus=1",
  "--=x",
  "--Help",
  "--out=a=b",
  "",
];

/** Node's answer, or its message on one line. */
function node(args: string[], allowPositionals: boolean) {
  try {
    const { values, positionals } = parseArgs({
      args,
      options: SPECS,
      allowPositionals,
      strict: true,
    });
    return { values: { ...values }, positionals };
  } catch (error) {
    return { error: (error as Error).message.replaceAll("\n", " ") };
  }
}

function ours(args: string[], allowPositionals: boolean) {
  try {
    const { values, positionals } = parseFlags(args, SPECS, allowPositionals);
    return { values: { ...values }, positionals };
  } catch (error) {
    assert.ok(error instanceof FlagError);
    return { error: error.message };
  }
}

Deno.test("parseFlags answers as Node's util.parseArgs (strict) on generated command lines", () => {
  fc.assert(
    fc.property(
      fc.array(fc.constantFrom(...WORDS), { maxLength: 6 }),
      fc.boolean(),
      (args, allowPositionals) => {
        assert.deepEqual(
          ours(args, allowPositionals),
          node(args, allowPositionals),
          JSON.stringify(args),
        );
      },
    ),
    { numRuns: 3000 },
  );
});

Deno.test("parseFlags' values have no prototype: a flag named toString is not there unless given", () => {
  const { values } = parseFlags([], { toString: { type: "boolean" } }, false);
  assert.equal(values.toString, undefined);
  assert.throws(() => parseFlags(["--constructor"], {}, false), FlagError);
});
