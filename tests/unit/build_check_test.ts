// What sign and build warn about (src/bundler/check.ts): remote references,
// with their lines, and a page past the broker's default upload limit.
import assert from "node:assert/strict";
import { pageWarnings, REMOTE_HINT } from "../../src/bundler/check.ts";
import { DEFAULT_MAX_BLOB_BYTES } from "../../src/adapter.ts";

Deno.test("pageWarnings() names remote references with their lines, and a page past the default limit", () => {
  const page = new TextEncoder().encode(
    '<p>\n<img srcset="//cdn.example/a.png 2x, b.png"><div style="background:url(https://x.example/c.png)"></div>',
  );
  assert.deepEqual(pageWarnings("p.html", page), [
    `p.html: remote references the pod's policy blocks, line 2: '//cdn.example/a.png', line 2: 'https://x.example/c.png' (${REMOTE_HINT})`,
  ]);
  assert.deepEqual(pageWarnings("p.html", page, false), []);
  const large = new Uint8Array(DEFAULT_MAX_BLOB_BYTES + 1).fill(0x20);
  assert.deepEqual(pageWarnings("big.html", large), [
    "big.html: 52,428,801 bytes is more than a broker accepts by default (52,428,800, --max-blob-bytes)",
  ]);
  assert.deepEqual(pageWarnings("ok.html", large.subarray(1)), []);
});
