// The docs' code blocks, checked without running a broker: every block of
// README.md and docs/ is run by a test or says why not; the blocks this file
// runs (policies, the front page's facts, a deny list, JSON, metric names)
// match the code; the error table lists every problem code; and no page
// speaks of the project's own process (issue numbers, review rounds, commit
// ids, folders outside the repository). tests/e2e/docs_test.ts runs the sh,
// ts and js blocks; tests/unit/docs_links_test.ts checks the links.
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { join } from "node:path";
import {
  allBlocks,
  autoCheck,
  type DocBlock,
  docPages,
  ROOT,
} from "../support/doc_blocks.ts";
import { PROBLEM_CODES } from "../../src/http/problem.ts";
import { frontFacts } from "../../src/http/routes/front.ts";
import {
  DEFAULT_SANDBOX,
  defaultContentPolicy,
} from "../../src/serving/pod_headers.ts";
import { parseDenyList } from "../../src/operator/deny_list.ts";
import { DEFAULT_MAX_BLOB_BYTES } from "../../src/config/options.ts";

const SELF = "tests/unit/docs_test.ts";

/** The most blocks that may be skipped, so that skipping stays the exception. */
const MAX_SKIPPED = 24;

const where = (block: DocBlock) => `${block.page}:${block.line}`;

Deno.test("every code block in README.md and docs/ is run by a test or says why not", async () => {
  const blocks = await allBlocks();
  assert.ok(blocks.length > 40, `${blocks.length} blocks found`);
  let skipped = 0;
  for (const block of blocks) {
    const marker = block.marker ?? "";
    if (marker.startsWith("skip:")) {
      assert.match(marker, /^skip: \S.{10,}/, `${where(block)}: a reason`);
      skipped++;
    } else if (marker.startsWith("run-by: ")) {
      const test = marker.slice("run-by: ".length);
      assert.ok(existsSync(join(ROOT, test)), `${where(block)}: ${test}`);
      const source = await Deno.readTextFile(join(ROOT, test));
      assert.ok(
        source.includes(block.page),
        `${where(block)}: ${test} does not name ${block.page}`,
      );
    } else if (/^(file \S+|broker: \S.*)$/.test(marker)) {
      continue;
    } else {
      assert.equal(marker, "", `${where(block)}: unknown marker '${marker}'`);
      assert.ok(
        autoCheck(block) !== null,
        `${where(block)}: a ${
          block.lang || "plain"
        } block: run it, or mark it <!-- doc-test: skip: REASON --> or run-by: TEST`,
      );
    }
  }
  assert.ok(skipped <= MAX_SKIPPED, `${skipped} blocks skipped`);
});

/** The blocks of `page` marked as run by this file, in order. */
async function ownBlocks(page: string): Promise<DocBlock[]> {
  return (await allBlocks()).filter((block) =>
    block.page === page && block.marker === `run-by: ${SELF}`
  );
}

Deno.test("the HTTP reference's policies and front page are the broker's own", async () => {
  const [front, sandbox, content] = await ownBlocks("docs/reference/http.md");
  assert.equal(
    sandbox!.text.trim(),
    `sandbox ${DEFAULT_SANDBOX}; object-src 'none'; base-uri 'none'`,
  );
  assert.equal(
    content!.text.trim(),
    // (A URL's host is lower case: the page writes it as HOST.)
    defaultContentPolicy("wss://host/signal").replaceAll("://host", "://HOST"),
  );
  assert.deepEqual(
    JSON.parse(front!.text),
    frontFacts({ maxBlobBytes: DEFAULT_MAX_BLOB_BYTES }),
  );
});

Deno.test("the takedown page's deny list parses", async () => {
  const [list] = await ownBlocks("docs/operators/takedown.md");
  const parsed = parseDenyList(list!.text);
  assert.equal(parsed.keys.size, 1);
  assert.equal(parsed.contents.size, 1);
});

Deno.test("json blocks parse; promql names only the broker's metrics", async () => {
  const metrics = await Deno.readTextFile(
    join(ROOT, "src/operator/metrics.ts"),
  );
  for (const block of await allBlocks()) {
    if (block.lang === "json") {
      assert.doesNotThrow(() => JSON.parse(block.text), where(block));
    }
    if (block.lang === "promql") {
      const names = [...block.text.matchAll(/\bpod_broker_\w+/g)].map((m) =>
        m[0].replace(/_(bucket|count|sum)$/, "")
      );
      assert.ok(names.length > 0, where(block));
      for (const name of names) {
        assert.ok(metrics.includes(`"${name}"`), `${where(block)}: ${name}`);
      }
    }
  }
});

const PROMTOOL = "/usr/bin/promtool";

Deno.test({
  name: "yaml blocks are Prometheus configurations promtool accepts",
  ignore: !existsSync(PROMTOOL) && !Deno.env.get("CI"),
  async fn() {
    const yaml = (await allBlocks()).filter((block) => block.lang === "yaml");
    assert.ok(yaml.length > 0);
    const dir = await Deno.makeTempDir({ prefix: "pod-docs-yaml-" });
    try {
      for (const block of yaml) {
        const file = join(dir, "prometheus.yml");
        await Deno.writeTextFile(file, block.text);
        const out = await new Deno.Command(PROMTOOL, {
          args: ["check", "config", file],
          stdout: "piped",
          stderr: "piped",
        }).output();
        assert.equal(
          out.code,
          0,
          `${where(block)}: ${new TextDecoder().decode(out.stderr)}`,
        );
      }
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});

Deno.test("the HTTP reference has one error table, with every problem code and its status", async () => {
  const page = await Deno.readTextFile(join(ROOT, "docs/reference/http.md"));
  const rows = [...page.matchAll(/^\| (\d{3}) +\| `([a-z_]+)` +\|/gm)];
  const headers = [...page.matchAll(/^\| status \| code /gm)];
  assert.equal(headers.length, 1, "one error table");
  const documented = new Map<string, number>();
  for (const [, status, code] of rows) {
    assert.ok(!documented.has(code!), `${code} is listed once`);
    documented.set(code!, Number(status));
  }
  assert.deepEqual(
    [...documented.keys()].sort(),
    Object.keys(PROBLEM_CODES).sort(),
  );
  for (const [code, { status }] of Object.entries(PROBLEM_CODES)) {
    assert.equal(documented.get(code), status, code);
  }
});

Deno.test("no page speaks of the project's own process", async () => {
  const words = [
    /\bissue \d+/i,
    /\bissues? \d+,? item/i,
    /\bround \d+\b/i,
    /\bthis round\b/i,
    /\.\.\/shared\b/,
    /\bsecurity item \d/i,
    /\b(?!ed25519\b)(?=[0-9a-f]*[a-f])(?=[0-9a-f]*\d)[0-9a-f]{7,40}\b/,
  ];
  for (const page of await docPages()) {
    const text = await Deno.readTextFile(join(ROOT, page));
    for (const [index, line] of text.split("\n").entries()) {
      for (const word of words) {
        assert.doesNotMatch(line, word, `${page}:${index + 1}`);
      }
    }
  }
});

Deno.test("the README stays a front door: at most 300 lines, the two commands first", async () => {
  const readme = await Deno.readTextFile(join(ROOT, "README.md"));
  assert.ok(readme.split("\n").length <= 300, "README.md is over 300 lines");
  const [first] = (await allBlocks()).filter((b) => b.page === "README.md");
  assert.deepEqual(
    first!.text.trim().split("\n").map((line) =>
      line.replace(/\s+#.*$/, "").trim()
    ),
    [
      "npx -y deno@2.9.6 run -A --lock=serve.lock --frozen src/mod.ts --registry memory --port 8080",
      "npx -y deno@2.9.6 task test",
    ],
  );
});
