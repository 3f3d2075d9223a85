import assert from "node:assert/strict";
import { isPodId, randomAlphanumeric } from "../../src/_util/id.ts";

Deno.test("random ids have the pod id's shape and do not repeat across many draws of the pool", () => {
  const ids = new Set<string>();
  // 2,000 ids of 12 characters draw the 4 KiB pool about six times.
  for (let i = 0; i < 2_000; i++) {
    const id = randomAlphanumeric(12);
    assert.ok(isPodId(id), id);
    ids.add(id);
  }
  assert.equal(ids.size, 2_000);
});

Deno.test("random ids use every character of [A-Za-z0-9] about equally often", () => {
  const counts = new Map<string, number>();
  const text = randomAlphanumeric(124_000);
  assert.equal(text.length, 124_000);
  for (const char of text) counts.set(char, (counts.get(char) ?? 0) + 1);
  assert.equal(counts.size, 62);
  // 2,000 expected each, with a standard deviation of about 44. Taking
  // every byte modulo 62 (no dropped bytes) would give 8 characters about
  // 2,420 and the rest about 1,940; chance alone stays far within 300.
  for (const [char, count] of counts) {
    assert.ok(Math.abs(count - 2_000) < 300, `${char}: ${count}`);
  }
});
