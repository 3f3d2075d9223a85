// HitBatcher's reads: the stored hits plus the pending ones count each hit
// once, even when a write lands in the store while the read runs.
import assert from "node:assert/strict";
import { HitBatcher } from "../../src/registries/hit_batcher.ts";

const ID = "AAAAAAAAAAAA";

/** A store whose write lands at once but is acknowledged `ackMs` later. */
function slowAckStore(ackMs: number) {
  const stored = new Map<string, number>();
  const hits = new HitBatcher(async (batch) => {
    for (const [id, n] of batch) stored.set(id, (stored.get(id) ?? 0) + n);
    await new Promise((resolve) => setTimeout(resolve, ackMs));
  }, 60_000);
  const select = async () => {
    await new Promise((resolve) => setTimeout(resolve, 5));
    return stored.get(ID) ?? 0;
  };
  return { hits, select };
}

Deno.test("HitBatcher.read: a write stored but not yet acknowledged is counted once", async () => {
  const { hits, select } = slowAckStore(30);
  hits.count(ID);
  hits.count(ID);
  const writing = hits.flush();
  // The store holds the 2 hits now, and the batcher still has them pending.
  assert.equal(await hits.read(select) + hits.pending(ID), 2);
  await writing;
  assert.equal(await hits.read(select) + hits.pending(ID), 2);
});

Deno.test("HitBatcher.read: a write that begins while the read runs is read again after it", async () => {
  const { hits, select } = slowAckStore(20);
  hits.count(ID);
  let flushed: void | Promise<void> = undefined;
  const read = hits.read(() => {
    // A write begins (and lands in the store) as the read starts.
    flushed ??= hits.flush();
    return select();
  });
  const total = await read + hits.pending(ID);
  await flushed;
  assert.equal(total, 1);
});
