// What a broker holds for its away peers (src/signaling/bus/held.ts): each
// peer within its own bounds, and all of them within the broker's.
import assert from "node:assert/strict";
import {
  HeldBudget,
  HeldSignals,
  MAX_HELD_BYTES,
  MAX_HELD_BYTES_TOTAL,
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
