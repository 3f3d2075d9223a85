// The docs' own commands and code, run as a reader would run them. The sh
// blocks of the newcomer's pages (the README's opening and tour, the
// tutorial: see RUNNABLE in tests/support/doc_blocks.ts) run in order, one
// bash script a section, against a broker the test starts with the README's
// own first command; a block marked `<!-- doc-test: file NAME -->` is written
// to NAME where the script stands. Every ts block of README.md and docs/ is
// type-checked, and every js block resolved, in a project that links this
// repository as "Install from a clone" says. tests/unit/docs_test.ts checks
// that every other block is run by a test or says why not.
import assert from "node:assert/strict";
import { join } from "node:path";
import { runCommand, spawnBroker } from "../support/helpers.ts";
import {
  allBlocks,
  autoCheck,
  type DocBlock,
  ROOT,
  RUNNABLE,
} from "../support/doc_blocks.ts";

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

/** One section's sh and file blocks as a bash script. */
function scriptOf(blocks: DocBlock[], port: number): string {
  const script = ["set -euo pipefail", "shopt -s expand_aliases"];
  for (const block of blocks) {
    const file = /^file (\S+)$/.exec(block.marker ?? "");
    if (file) {
      const body = substitute(block.text, port);
      assert.ok(!body.includes("DOC_EOF"));
      script.push(`cat > '${file[1]}' <<'DOC_EOF'\n${body}DOC_EOF`);
    } else if (autoCheck(block) === "run" && block.marker === undefined) {
      script.push(substitute(block.text, port));
    }
  }
  return script.join("\n") + "\n";
}

Deno.test("the README's and the tutorial's commands run as written", async () => {
  const blocks = await allBlocks();
  const opening = blocks.find((block) => block.page === "README.md")!;
  assert.match(opening.marker ?? "", /^broker: /);
  // The broker, started with the README's first line.
  const first = opening.text.split("\n")[0]!.replace(/\s+#.*$/, "");
  const [program, ...args] = substitute(first, 0).split(/\s+/);
  assert.equal(program, Deno.execPath());
  const portAt = args.indexOf("--port");
  args.splice(portAt, 2, "--port", "0", "--hostname", "127.0.0.1");
  await using broker = await spawnBroker(args, ROOT);

  const temp = await Deno.makeTempDir({ prefix: "pod-docs-" });
  try {
    for (
      const [page, { sections, inRepository, expected }] of Object.entries(
        RUNNABLE,
      )
    ) {
      for (const [index, section] of sections.entries()) {
        const name = `${page} "${section || "opening"}"`;
        const own = blocks.filter((block) =>
          block.page === page && block.section === section
        );
        assert.ok(own.length > 0, `${name} has blocks`);
        const cwd = inRepository?.includes(section)
          ? ROOT
          : await Deno.makeTempDir({ dir: temp });
        const path = join(temp, `${page.replaceAll("/", "_")}-${index}.sh`);
        await Deno.writeTextFile(path, scriptOf(own, broker.port));
        // `pod-broker init` keeps the author key under XDG_CONFIG_HOME:
        // the test's own folder, never the home of whoever runs it.
        const result = await runCommand("bash", [path], {
          cwd,
          env: { XDG_CONFIG_HOME: join(temp, "config") },
        });
        assert.equal(
          result.code,
          0,
          `${name} failed:\n${result.stdout}\n${result.stderr}`,
        );
        for (const pattern of expected?.[section] ?? []) {
          assert.match(result.stdout, pattern, `${name} printed`);
        }
      }
    }
  } finally {
    await Deno.remove(temp, { recursive: true });
  }
});

Deno.test("every ts block of the docs type-checks, and every js block resolves, in a project that links this repository", async () => {
  const blocks = await allBlocks();
  const link = blocks.find((block) =>
    block.page === "docs/operators/install.md" &&
    block.marker === "file deno.json"
  );
  assert.ok(link, "install.md has the deno.json that links a clone");
  const project = await Deno.makeTempDir({ prefix: "pod-docs-check-" });
  try {
    // The page's deno.json, plus the bare name the client's examples use
    // (`pod-broker/client`, as the npm package and `build` resolve it),
    const config = JSON.parse(substitute(link.text, 0));
    // and the browser's types, which the client's modules need.
    config.imports = { "pod-broker/client": "jsr:@pod/broker/client" };
    config.compilerOptions = { lib: ["deno.window", "dom", "dom.iterable"] };
    await Deno.writeTextFile(
      join(project, "deno.json"),
      JSON.stringify(config),
    );
    const files: string[] = [];
    for (const block of blocks) {
      const check = block.marker === undefined ? autoCheck(block) : null;
      if (check !== "typecheck" && check !== "resolve") continue;
      const file = `${block.page.replaceAll("/", "_")}-${block.line}.${
        check === "typecheck" ? "ts" : "js"
      }`;
      await Deno.writeTextFile(join(project, file), block.text);
      files.push(file);
    }
    assert.ok(files.length >= 8, `${files.length} blocks checked`);
    const checked = await runCommand(Deno.execPath(), ["check", ...files], {
      cwd: project,
    });
    assert.equal(checked.code, 0, checked.stderr);
  } finally {
    await Deno.remove(project, { recursive: true });
  }
});
