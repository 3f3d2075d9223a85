// Every relative link and #anchor in README.md and docs/ resolves: the file
// (or folder) exists, and the anchor is a heading of the target page under
// GitHub's slug rules (lower case; punctuation but '-' and '_' dropped;
// spaces to '-'; a repeated heading gets -1, -2...) or an explicit id.
// Links to other sites are not fetched.
import assert from "node:assert/strict";
import { existsSync, statSync } from "node:fs";
import { dirname, join, normalize } from "node:path";
import { docPages, ROOT } from "../support/doc_blocks.ts";

/**
 * GitHub's anchor for a heading's text: inline markup reduced to its text,
 * lower case, everything but letters, marks, digits, connector punctuation,
 * spaces and '-' dropped, spaces turned into '-'.
 */
export function slugOf(heading: string): string {
  return heading
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, "$1") // links and images: their text
    .replace(/<[^>]+>/g, "") // inline HTML tags
    .toLowerCase()
    .replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, "")
    .replace(/ /g, "-");
}

/** The anchors a page defines: its headings' slugs and explicit ids. */
function anchorsOf(text: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  const headings = withoutFences(text).matchAll(/^#{1,6} +(.+?) *#*$/gm);
  for (const [, heading] of headings) {
    const slug = slugOf(heading!);
    const count = seen.get(slug) ?? 0;
    seen.set(slug, count + 1);
    anchors.add(count === 0 ? slug : `${slug}-${count}`);
  }
  for (const [, id] of text.matchAll(/<a (?:id|name)="([^"]+)"/g)) {
    anchors.add(id!);
  }
  return anchors;
}

/** The text without fenced blocks (a `#` line there is code). */
function withoutFences(text: string): string {
  return text.replace(/^( *)(`{3,})[^\n]*\n[\s\S]*?^\1\2$/gm, "");
}

/** The text without fenced blocks and inline code (links there are code). */
function withoutCode(text: string): string {
  return withoutFences(text).replace(/`[^`\n]*`/g, "");
}

/** The link targets of a page: `[text](target)` and `<a href>`, with lines. */
function linksOf(text: string): { target: string; line: number }[] {
  const prose = withoutCode(text);
  const links: { target: string; line: number }[] = [];
  const patterns = [
    /!?\[(?:[^\]\n]|\n(?!\n))*\]\(([^)\s]+)(?: "[^"]*")?\)/g,
    /<a [^>]*href="([^"]+)"/g,
  ];
  for (const pattern of patterns) {
    for (const match of prose.matchAll(pattern)) {
      links.push({
        target: match[1]!,
        line: prose.slice(0, match.index).split("\n").length,
      });
    }
  }
  return links;
}

Deno.test("slugOf follows GitHub's rules", () => {
  assert.equal(slugOf("Behind a TLS front"), "behind-a-tls-front");
  assert.equal(
    slugOf("The browser client: `pod-broker/client`"),
    "the-browser-client-pod-brokerclient",
  );
  assert.equal(slugOf("Node (22.13+)"), "node-2213");
  assert.equal(
    slugOf("In the open: the `node:http` adapter"),
    "in-the-open-the-nodehttp-adapter",
  );
  assert.equal(slugOf("Stop, restart, reload"), "stop-restart-reload");
  assert.equal(slugOf("A 60-second tour"), "a-60-second-tour");
  assert.equal(slugOf("snake_case stays"), "snake_case-stays");
});

Deno.test("every relative link and anchor in README.md and docs/ resolves", async () => {
  const pages = await docPages();
  const texts = new Map<string, string>();
  for (const page of pages) {
    texts.set(page, await Deno.readTextFile(join(ROOT, page)));
  }
  const problems: string[] = [];
  let checked = 0;
  for (const page of pages) {
    for (const { target, line } of linksOf(texts.get(page)!)) {
      if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // another site
      checked++;
      const [path, anchor] = target.split("#", 2) as [string, string?];
      const file = path === ""
        ? page
        : normalize(join(dirname(page), decodeURIComponent(path)));
      const at = `${page}:${line}: ${target}`;
      if (file.startsWith("..") || !existsSync(join(ROOT, file))) {
        problems.push(`${at}: no such file`);
        continue;
      }
      if (anchor === undefined) continue;
      if (!file.endsWith(".md") || statSync(join(ROOT, file)).isDirectory()) {
        problems.push(`${at}: an anchor into a file that is not a page`);
        continue;
      }
      const text = texts.get(file) ??
        await Deno.readTextFile(join(ROOT, file));
      if (!anchorsOf(text).has(anchor)) {
        problems.push(`${at}: no heading '#${anchor}' in ${file}`);
      }
    }
  }
  assert.deepEqual(problems, []);
  assert.ok(checked > 50, `only ${checked} links checked`);
});

Deno.test("the newcomer's questions are answered one link from the README", async () => {
  const readme = await Deno.readTextFile(join(ROOT, "README.md"));
  const table = readme.slice(readme.indexOf("## Questions newcomers ask"));
  const questions: [RegExp, string][] = [
    [/Is it up\?/, "docs/reference/http.md#is-it-up"],
    [/full TLS config/, "docs/operators/proxy.md"],
    [/What can a pod not do\?/, "docs/authors/capabilities.md"],
    [/stop and restart/, "docs/operators/service.md#stop-restart-reload"],
    [/from Node\?/, "docs/operators/install.md#node-2213"],
    [/podman/, "docs/operators/install.md#container"],
  ];
  for (const [question, target] of questions) {
    const row = table.split("\n").find((line) => question.test(line));
    assert.ok(row, `the README asks ${question}`);
    assert.ok(row.includes(`(${target})`), `${question} links ${target}`);
  }
  const install = await Deno.readTextFile(
    join(ROOT, "docs/operators/install.md"),
  );
  assert.match(install, /podman build/);
});
