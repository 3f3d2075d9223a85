// The docs' own commands and code, run as a reader would run them. The sh
// blocks of the newcomer's pages (the README's opening and tour, the
// tutorial, then the call example: see RUNNABLE in
// tests/support/doc_blocks.ts) run in order, one bash script a section,
// against a broker the test starts with the README's own first command; a
// section whose page starts another broker (a `broker:` block with other
// flags) stops the one running and starts that one, as its page says. One
// author key all along: the one `init` makes under the reader's home. A
// block marked `<!-- doc-test: file NAME -->` is written to NAME where the
// script stands. Every ts block of README.md and docs/ is type-checked, and
// every js block resolved, in a project that links this repository as
// "Install from a clone" says. tests/unit/docs_test.ts checks that every
// other block is run by a test or says why not.
import assert from "node:assert/strict";
import { join } from "node:path";
import {
  type BrokerProcess,
  runCommand,
  spawnBroker,
} from "../support/helpers.ts";
import {
  allBlocks,
  autoCheck,
  type DocBlock,
  ROOT,
  RUNNABLE,
} from "../support/doc_blocks.ts";
import {
  brokerArgs,
  denoDir,
  keepScratch,
  substitute,
} from "../support/doc_reader.ts";

/**
 * One section's sh and file blocks as a bash script, after the aliases an
 * earlier section defined (the reader's terminal keeps them).
 */
function scriptOf(
  blocks: DocBlock[],
  port: number,
  aliases: readonly string[],
): string {
  const script = ["set -euo pipefail", "shopt -s expand_aliases", ...aliases];
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

/**
 * The call example's promise: the printed URL sends the browser on to the
 * pod's own origin, where calls work.
 */
async function onItsOwnOrigin(printed: string): Promise<void> {
  const url = printed.trim().split("\n").at(-1)!;
  const response = await fetch(url, { redirect: "manual" });
  await response.body?.cancel();
  assert.equal(response.status, 302, `${url} answers`);
  assert.match(
    response.headers.get("Location") ?? "",
    /^http:\/\/[a-z2-7]{20}\.localhost:\d+\/$/,
  );
}

/** The broker a section's page starts, if it has a `broker:` block. */
function brokerOf(blocks: DocBlock[]): DocBlock | undefined {
  return blocks.find((block) =>
    block.lang === "sh" && block.marker?.startsWith("broker: ")
  );
}

Deno.test("the README's, the tutorial's and the call example's commands run as written, in order, on one broker at a time and with one key", async () => {
  const blocks = await allBlocks();
  const opening = blocks.find((block) => block.page === "README.md")!;
  assert.match(opening.marker ?? "", /^broker: /);
  // The broker, started with the README's first line.
  let args = brokerArgs(opening.text);
  let broker: BrokerProcess = await spawnBroker(args, ROOT);

  const temp = await Deno.makeTempDir({ prefix: "pod-docs-" });
  // The reader's home, where `init` keeps the author key (`~/.config/...`,
  // as the pages name it): the test's own folder, never the home of
  // whoever runs it. Deno keeps its cache where it is.
  const home = join(temp, "home");
  await Deno.mkdir(home);
  const env = { HOME: home, XDG_CONFIG_HOME: "", DENO_DIR: await denoDir() };
  await using scratch = await keepScratch();
  const aliases: string[] = [];
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
        const other = brokerOf(own);
        if (other && other !== opening) {
          const wanted = brokerArgs(other.text);
          if (wanted.join(" ") !== args.join(" ")) {
            await broker.stop();
            [args, broker] = [wanted, await spawnBroker(wanted, ROOT)];
          }
        }
        const cwd = inRepository?.includes(section)
          ? ROOT
          : await Deno.makeTempDir({ dir: temp });
        const path = join(temp, `${page.replaceAll("/", "_")}-${index}.sh`);
        const script = scriptOf(own, broker.port, aliases);
        await Deno.writeTextFile(path, script);
        aliases.push(...script.match(/^alias .*$/gm) ?? []);
        const result = await runCommand("bash", [path], { cwd, env });
        assert.equal(
          result.code,
          0,
          `${name} failed:\n${result.stdout}\n${result.stderr}`,
        );
        if (page === "docs/authors/calls.md") {
          await onItsOwnOrigin(result.stdout);
        }
        for (const pattern of expected?.[section] ?? []) {
          assert.match(
            result.stdout,
            pattern,
            `${name} printed:\n${result.stdout}`,
          );
        }
      }
    }
    const keys = [...Deno.readDirSync(join(home, ".config/pod-broker/keys"))];
    assert.deepEqual(keys.map((key) => key.name), ["author.pem"], "one key");
    // The reader's files are all in scratch/, which git ignores.
    assert.deepEqual(scratch.leftovers(), [], "files left in the clone");
    const ignored = await runCommand("git", ["check-ignore", "scratch/x"], {
      cwd: ROOT,
    });
    assert.equal(ignored.stdout.trim(), "scratch/x", "git ignores scratch/");
  } finally {
    await broker.stop();
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
