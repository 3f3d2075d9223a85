// The README's own commands and code, run as a reader would run them: the
// code blocks of the sections a newcomer follows (the opening, the quick
// tour, "Write a pod in five minutes", the chat pod, "Running a broker")
// are extracted and executed. sh blocks run in order, one bash script a
// section, against a broker the test starts with the opening's own command;
// a block marked `<!-- readme-test: file NAME -->` is written to NAME where
// the script stands; ts blocks are type-checked in a project that links this
// repository as the README's Install says. A block that cannot run carries
// `<!-- readme-test: skip: REASON -->`, and those stay few.
import assert from "node:assert/strict";
import { join } from "node:path";
import { spawnBroker } from "../support/helpers.ts";

const ROOT = new URL("../..", import.meta.url).pathname.replace(/\/$/, "");

/** The sections run, by heading ("" is the opening, before the first). */
const SECTIONS = [
  "",
  "Quick tour for pod authors",
  "Write a pod in five minutes",
  "Try the chat pod in two tabs",
  "Running a broker",
];

/** Sections whose commands run in the repository itself ("In this repository"). */
const IN_REPOSITORY = new Set(["Try the chat pod in two tabs"]);

/** What each section's script must print, beyond exiting 0. */
const EXPECTED: Record<string, RegExp[]> = {
  "Quick tour for pod authors": [/"name":"Hello"/, /HTTP\/1\.1 201/],
  "Write a pod in five minutes": [
    /"name": "Hello room"/,
    /http:\/\/127\.0\.0\.1:\d+\/[A-Za-z0-9]{12}\n/,
  ],
  "Try the chat pod in two tabs": [
    /^http:\/\/127\.0\.0\.1:\d+\/[A-Za-z0-9]{12}\n$/,
  ],
};

/** The most blocks that may be skipped in these sections. */
const MAX_SKIPPED = 6;

interface Block {
  lang: string;
  text: string;
  /** The `readme-test:` marker before it, if any. */
  marker?: string;
}

/** The README's sections (heading to text) at level 2. */
function sections(readme: string): Map<string, string> {
  const found = new Map<string, string>();
  const parts = readme.split(/^## /m);
  found.set("", parts[0]!);
  for (const part of parts.slice(1)) {
    found.set(part.slice(0, part.indexOf("\n")).trim(), part);
  }
  return found;
}

/** The fenced blocks of a section, with their markers, unindented. */
function blocks(section: string): Block[] {
  const found: Block[] = [];
  const fence =
    /(?:^( *)<!-- readme-test: ([^>]*?) -->\n\n?)?^( *)```(\w*)\n([\s\S]*?)^\3```$/gm;
  for (const match of section.matchAll(fence)) {
    const indent = match[3]!;
    const text = match[5]!.split("\n").map((line) =>
      line.startsWith(indent) ? line.slice(indent.length) : line
    ).join("\n");
    found.push({
      lang: match[4]!,
      text,
      ...(match[2] === undefined ? {} : { marker: match[2] }),
    });
  }
  return found;
}

/**
 * What the reader does differently in the test: the Deno under test for
 * `npx -y deno@2.9.6` (no download), the test's broker for localhost:8080,
 * this checkout for the repository's root and for `../pod-broker`.
 */
function substitute(text: string, port: number): string {
  return text
    .replaceAll("npx -y deno@2.9.6", Deno.execPath())
    .replaceAll("$PWD/src/mod.ts", `${ROOT}/src/mod.ts`)
    .replaceAll("localhost:8080", `127.0.0.1:${port}`)
    .replaceAll("../pod-broker", ROOT);
}

async function run(
  command: string,
  args: string[],
  cwd: string,
): Promise<{ code: number; stdout: string; stderr: string }> {
  const output = await new Deno.Command(command, {
    args,
    cwd,
    stdin: "null",
    env: { NO_COLOR: "1" },
  }).output();
  const text = new TextDecoder();
  return {
    code: output.code,
    stdout: text.decode(output.stdout),
    stderr: text.decode(output.stderr),
  };
}

Deno.test("the README's commands and code run as written", async () => {
  const readme = await Deno.readTextFile(join(ROOT, "README.md"));
  const all = sections(readme);
  const opening = blocks(all.get("")!)[0]!;
  assert.match(opening.marker ?? "", /^broker: /);
  // The broker, started with the opening's first line.
  const first = opening.text.split("\n")[0]!.replace(/\s+#.*$/, "");
  const [program, ...args] = substitute(first, 0).split(/\s+/);
  assert.equal(program, Deno.execPath());
  const portAt = args.indexOf("--port");
  args.splice(portAt, 2, "--port", "0", "--hostname", "127.0.0.1");
  await using broker = await spawnBroker(args, ROOT);

  let skipped = 0;
  const temp = await Deno.makeTempDir({ prefix: "pod-readme-" });
  try {
    for (const heading of SECTIONS) {
      const section = all.get(heading);
      assert.ok(section !== undefined, `README.md has "## ${heading}"`);
      const cwd = IN_REPOSITORY.has(heading)
        ? ROOT
        : await Deno.makeTempDir({ dir: temp });
      const script = ["set -euo pipefail", "shopt -s expand_aliases"];
      const typeScript: string[] = [];
      for (const block of blocks(section)) {
        const where = `"${heading || "opening"}", a ${block.lang} block`;
        const marker = block.marker ?? "";
        if (/^(skip|broker): \S/.test(marker)) {
          if (marker.startsWith("skip")) skipped++;
          continue;
        }
        const file = /^file (\S+)$/.exec(marker);
        if (file) {
          const body = substitute(block.text, broker.port);
          assert.ok(!body.includes("README_EOF"));
          script.push(`cat > '${file[1]}' <<'README_EOF'\n${body}README_EOF`);
        } else if (block.lang === "sh" && marker === "") {
          script.push(substitute(block.text, broker.port));
        } else if (block.lang === "ts" && marker === "") {
          typeScript.push(block.text);
        } else {
          assert.fail(
            `${where}: run it, or mark it <!-- readme-test: skip: REASON --> (marker: '${marker}')`,
          );
        }
      }
      const path = join(temp, `section-${SECTIONS.indexOf(heading)}.sh`);
      await Deno.writeTextFile(path, script.join("\n") + "\n");
      const result = await run("bash", [path], cwd);
      assert.equal(
        result.code,
        0,
        `"${heading || "opening"}" failed:\n${result.stdout}\n${result.stderr}`,
      );
      for (const expected of EXPECTED[heading] ?? []) {
        assert.match(result.stdout, expected, `"${heading}" printed`);
      }
      // ts blocks: type-checked where the script left its files (the
      // Install section's deno.json links this repository).
      for (const [index, code] of typeScript.entries()) {
        const file = join(cwd, `block-${index}.ts`);
        await Deno.writeTextFile(file, code);
        const checked = await run(Deno.execPath(), ["check", file], cwd);
        assert.equal(
          checked.code,
          0,
          `"${heading}" ts block ${index}:\n${checked.stderr}`,
        );
      }
    }
  } finally {
    await Deno.remove(temp, { recursive: true });
  }
  assert.ok(skipped <= MAX_SKIPPED, `${skipped} blocks skipped`);
});
