// What a broker holds for its away peers (src/signaling/bus/held.ts): each
// peer within its own bounds, and all of them within the broker's.
import assert from "node:assert/strict";
import {
  HeldBudget,
  heldBytes,
  HeldSignals,
  HeldWindow,
  MAX_HELD_BYTES,
  MAX_HELD_BYTES_TOTAL,
  RESUME_MS,
} from "../../src/signaling/bus/held.ts";

Deno.test("away peers hold within the broker's budget together: past it the oldest goes, then the newest, and what was taken or dropped goes back to it", () => {
  assert.ok(MAX_HELD_BYTES_TOTAL >= 64 * MAX_HELD_BYTES);
  const budget = new HeldBudget(100);
  const [a, b] = [new HeldSignals(budget), new HeldSignals(budget)];
  a.push("x", "a".repeat(60));
  assert.equal(budget.used, 60);
  // b's signal does not fit beside a's: b has nothing older, so it goes.
  b.push("y", "b".repeat(50));
  assert.equal(budget.used, 60);
  assert.deepEqual(b.take(), { signals: [], dropped: ["y"] });
  // a's own older signal goes for its newer one.
  a.push("z", "c".repeat(50));
  assert.equal(budget.used, 50);
  assert.deepEqual(a.take(), {
    signals: [{ from: "z", data: "c".repeat(50) }],
    dropped: ["x"],
  });
  assert.equal(budget.used, 0);
  b.push("y", "d".repeat(40));
  assert.equal(budget.used, 40);
});

Deno.test("a broker's window on a shared bus: bytes taken count for the whole resume window and no longer, a refusal takes nothing, and what was given back is free again", () => {
  let now = 1_700_000_000_500;
  const window = new HeldWindow(1000, () => now);
  assert.equal(window.max, 1000);
  assert.equal(new HeldWindow().max, MAX_HELD_BYTES_TOTAL);
  assert.ok(window.take(600));
  now += 10_000;
  assert.ok(window.take(400));
  // Full: a refusal takes nothing, however small.
  assert.equal(window.take(1), false);
  window.give(400);
  assert.ok(window.take(300));
  assert.equal(window.take(101), false);
  assert.ok(window.take(100));
  // The first 600 stay counted for the whole window, then leave it.
  now += RESUME_MS - 10_000 - 1;
  assert.equal(window.take(600), false);
  now += 2_000;
  assert.ok(window.take(600));
  assert.equal(window.take(1), false);
  // A long pause forgets everything, once.
  now += 10 * RESUME_MS;
  assert.ok(window.take(1000));
  assert.equal(window.take(1), false);
});

Deno.test("a window gives back no more than its current second holds, so giving cannot open it past its bound", () => {
  let now = 0;
  const window = new HeldWindow(100, () => now);
  assert.ok(window.take(80));
  now += 1_000;
  // Taken in an earlier second: that second keeps them.
  window.give(80);
  assert.equal(window.take(21), false);
  assert.ok(window.take(20));
  window.give(500);
  assert.ok(window.take(20));
  assert.equal(window.take(1), false);
});

Deno.test("a window's bound is a whole number of at least 1, and bytes are counted as UTF-8", () => {
  for (const max of [0, -1, 1.5, NaN, Infinity]) {
    assert.throws(() => new HeldWindow(max), TypeError);
  }
  assert.equal(heldBytes('{"x":"é"}'), 10);
  assert.equal(heldBytes(""), 0);
});
