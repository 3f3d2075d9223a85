/**
 * The code blocks of the README and of `docs/`, as the tests that run them
 * read them. A block may follow a marker comment, one blank line before it:
 *
 * - `<!-- doc-test: skip: REASON -->`: not run, and why;
 * - `<!-- doc-test: run-by: tests/PATH -->`: that test extracts and runs it
 *   (it names the page, which tests/unit/docs_test.ts checks);
 * - `<!-- doc-test: file NAME -->`: written to NAME where the page's script
 *   stands (or, for `deno.json`, the project the ts blocks are checked in);
 * - `<!-- doc-test: broker: REASON -->`: starts the broker the page's
 *   script runs against (the test starts its own the same way).
 *
 * @module
 */

import { join, relative } from "node:path";

/** The repository's root, without a trailing slash. */
export const ROOT: string = new URL("../..", import.meta.url).pathname
  .replace(/\/$/, "");

/** One fenced code block of a page. */
export interface DocBlock {
  /** The page, relative to the root (`docs/operators/proxy.md`). */
  page: string;
  /** The level-2 heading it is under ("" before the first). */
  section: string;
  /** Its first line's number in the page (the fence). */
  line: number;
  /** The fence's language ("" for none). */
  lang: string;
  /** The code, unindented as far as the fence was indented. */
  text: string;
  /** The `doc-test:` marker before it, if any. */
  marker?: string;
}

/** The pages: README.md and every Markdown file under docs/ but `_pending`. */
export async function docPages(root: string = ROOT): Promise<string[]> {
  const pages = ["README.md"];
  async function walk(dir: string) {
    const entries = [...Deno.readDirSync(join(root, dir))].sort((a, b) =>
      a.name < b.name ? -1 : 1
    );
    for (const entry of entries) {
      const path = `${dir}/${entry.name}`;
      if (entry.isDirectory && !entry.name.startsWith("_")) await walk(path);
      else if (entry.isFile && entry.name.endsWith(".md")) pages.push(path);
    }
  }
  await walk("docs");
  return pages;
}

const FENCE =
  /(?:^( *)<!-- doc-test: ([^>]*?) -->\n\n?)?^( *)(`{3,})(\S*)\n([\s\S]*?)^\3\4$/gm;

/**
 * The fenced blocks of a page's text, with their markers and sections.
 *
 * @param page The page's path relative to the root.
 * @param text The page's text.
 * @returns The blocks, in order.
 */
export function blocksOf(page: string, text: string): DocBlock[] {
  const found: DocBlock[] = [];
  for (const match of text.matchAll(FENCE)) {
    const indent = match[3]!;
    const code = match[6]!.split("\n").map((line) =>
      line.startsWith(indent) ? line.slice(indent.length) : line
    ).join("\n");
    const fenceAt = match.index! + match[0].indexOf(match[4]!);
    const before = text.slice(0, fenceAt);
    const headings = [...before.matchAll(/^## (.*)$/gm)];
    found.push({
      page,
      section: headings.at(-1)?.[1]?.trim() ?? "",
      line: before.split("\n").length,
      lang: match[5]!,
      text: code,
      ...(match[2] === undefined ? {} : { marker: match[2] }),
    });
  }
  return found;
}

/** Every block of every page. */
export async function allBlocks(root: string = ROOT): Promise<DocBlock[]> {
  const blocks: DocBlock[] = [];
  for (const page of await docPages(root)) {
    blocks.push(
      ...blocksOf(page, await Deno.readTextFile(join(root, page))),
    );
  }
  return blocks;
}

/**
 * The blocks of one page that a test runs, found by language and marked
 * `run-by` that test: how a test takes a configuration from the docs.
 *
 * @param page The page, relative to the root.
 * @param lang The language of the blocks wanted.
 * @param test The test's `import.meta.url`.
 * @returns The blocks, in order.
 * @throws {Error} When the page has none.
 */
export async function blocksRunBy(
  page: string,
  lang: string,
  test: string,
): Promise<DocBlock[]> {
  const self = relative(ROOT, new URL(test).pathname);
  const blocks = blocksOf(page, await Deno.readTextFile(join(ROOT, page)))
    .filter((block) =>
      block.lang === lang && block.marker === `run-by: ${self}`
    );
  if (blocks.length === 0) {
    throw new Error(`${page} has no ${lang} block marked run-by: ${self}`);
  }
  return blocks;
}

/**
 * The pages whose sh blocks run as one bash script a section, in this order:
 * the newcomer's path (the README, the tutorial, then calls), on one broker
 * at a time and with one author key. What each section's script must print,
 * and which sections run in the repository itself rather than an empty
 * folder.
 */
export const RUNNABLE: Readonly<
  Record<string, {
    sections: readonly string[];
    inRepository?: readonly string[];
    expected?: Readonly<Record<string, readonly RegExp[]>>;
  }>
> = {
  "README.md": {
    sections: ["", "A 60-second tour"],
    inRepository: ["", "A 60-second tour"],
    expected: {
      "A 60-second tour": [
        /"status":"ok"/,
        /"name":"Hello"/,
        /HTTP\/1\.1 201/,
      ],
    },
  },
  "docs/authors/tutorial.md": {
    sections: ["", "Try the chat pod in two tabs"],
    inRepository: ["", "Try the chat pod in two tabs"],
    expected: {
      "": [
        /"name": "Hello room"/,
        /http:\/\/127\.0\.0\.1:\d+\/[A-Za-z0-9]{12}\n/,
      ],
      "Try the chat pod in two tabs": [
        /^http:\/\/127\.0\.0\.1:\d+\/[A-Za-z0-9]{12}\n$/,
      ],
    },
  },
  "docs/authors/calls.md": {
    sections: ["The call example"],
    inRepository: ["The call example"],
    expected: {
      "The call example": [/^http:\/\/127\.0\.0\.1:\d+\/[A-Za-z0-9]{12}\n$/],
    },
  },
};

/**
 * How a block is checked when it carries no marker: sh runs on a runnable
 * page; ts is type-checked and js resolved (tests/e2e/docs_test.ts); json
 * is parsed, a yaml Prometheus configuration goes through `promtool`, and a
 * promql query's metric names must be the broker's (tests/unit/docs_test.ts).
 * Null: the block needs a marker.
 */
export function autoCheck(
  block: DocBlock,
): "run" | "typecheck" | "resolve" | "parse" | "promtool" | "metrics" | null {
  switch (block.lang) {
    case "sh":
      return RUNNABLE[block.page]?.sections.includes(block.section)
        ? "run"
        : null;
    case "ts":
      return "typecheck";
    case "js":
      return "resolve";
    case "json":
      return "parse";
    case "yaml":
      return "promtool";
    case "promql":
      return "metrics";
    default:
      return null;
  }
}
