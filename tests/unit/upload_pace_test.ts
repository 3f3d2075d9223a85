import assert from "node:assert/strict";
import {
  MIN_UPLOAD_BYTES_PER_SECOND,
  UPLOAD_DEADLINE_WINDOWS,
  UploadPace,
} from "../../src/http/upload_pace.ts";
import { UploadBudget } from "../../src/http/upload_budget.ts";

const WINDOW = 15_000;
const MIN = MIN_UPLOAD_BYTES_PER_SECOND * WINDOW / 1000;

Deno.test("upload pace: a burst earns no credit: the trickle after it must bring the minimum within one window", () => {
  const pace = new UploadPace(WINDOW, 0);
  pace.add(256 * 1024 * 1024, 100);
  for (let t = 10_000; t < 15_000; t += 1_000) pace.add(1, t);
  // The window from the burst ends at 15,100 ms with 5 bytes in it.
  assert.deepEqual(pace.next(15_000, WINDOW), { waitMs: 100, limit: "slow" });
});

Deno.test("upload pace: a body at twice the minimum rate, in small chunks, is only ever limited by a pause", () => {
  const pace = new UploadPace(WINDOW, 0);
  const step = 2 * MIN_UPLOAD_BYTES_PER_SECOND / 10; // every 100 ms
  for (let t = 100; t < 5 * 60_000; t += 100) {
    pace.add(step, t);
    const { waitMs, limit } = pace.next(t, WINDOW);
    assert.ok(waitMs > 100, `at ${t} ms: ${waitMs} ms (${limit})`);
  }
});

Deno.test("upload pace: a body below the minimum over a window is cut at that window's end, however fast it began", () => {
  const pace = new UploadPace(WINDOW, 0);
  for (let t = 100; t <= 60_000; t += 100) pace.add(10_000, t);
  // From 60 s on, half the minimum: 1,536 bytes a 3 s.
  let t = 60_000;
  let cut: number | null = null;
  while (cut === null && t < 120_000) {
    t += 3_000;
    const { waitMs, limit } = pace.next(t - 3_000, WINDOW);
    if (waitMs <= 3_000) {
      assert.equal(limit, "slow");
      cut = t - 3_000 + waitMs;
    } else pace.add(MIN / 10, t);
  }
  assert.ok(cut !== null && cut <= 60_000 + WINDOW, `cut at ${cut}`);
});

Deno.test("upload pace: the total deadline, 40 windows, ends any body at its time", () => {
  assert.equal(UPLOAD_DEADLINE_WINDOWS, 40);
  const pace = new UploadPace(WINDOW, 1_000);
  const end = 1_000 + 40 * WINDOW;
  pace.add(1_000_000, end - 3_000);
  assert.deepEqual(pace.next(end - 3_000, WINDOW), {
    waitMs: 3_000,
    limit: "deadline",
  });
});

Deno.test("upload pace: the marks kept stay few, however small and many the chunks", () => {
  const pace = new UploadPace(WINDOW, 0);
  // One byte every 0.4 ms: 2,500 bytes a second, for two minutes.
  let most = 0;
  for (let t = 0.4; t < 120_000; t += 0.4) {
    pace.add(1, t);
    assert.ok(pace.next(t, WINDOW).waitMs > 0, `cut at ${t}`);
    most = Math.max(most, pace.marks);
  }
  assert.ok(most <= 34, `${most} marks`);
});

Deno.test("UploadBudget: a per-address cap counts uploads in flight by address, and each release frees one", () => {
  const budget = new UploadBudget(1_000_000, 2);
  const a = budget.reserve(10, "a")!;
  const b = budget.reserve(10, "a")!;
  assert.ok(a && b);
  assert.equal(budget.isAddressFull("a"), true);
  assert.equal(budget.reserve(10, "a"), null);
  assert.ok(budget.reserve(10, "b"));
  assert.ok(budget.reserve(10), "no address, no cap");
  a.release();
  a.release();
  assert.equal(budget.isAddressFull("a"), false);
  assert.ok(budget.reserve(10, "a"));
  assert.equal(budget.reserve(10, "a"), null);
  const off = new UploadBudget(1_000_000);
  for (let i = 0; i < 10; i++) assert.ok(off.reserve(10, "a"));
});
