// The contract every Registry must keep, run against each implementation.
import assert from "node:assert/strict";
import type { PodRecord, Registry } from "../src/types.ts";

/** A record for `id` with fixed fields. */
export function sampleRecord(id: string, blob: Uint8Array): PodRecord {
  return {
    id,
    ownerPubkey: "A".repeat(43),
    blobSize: blob.length,
    sha256: "B".repeat(43),
    contentSha256: "C".repeat(43),
    name: "Sample",
    createdAt: null,
    uploadedAt: "2026-11-21T12:00:00.000Z",
    hits: 0,
  };
}

async function readAll(
  stream: ReadableStream<Uint8Array>,
): Promise<Uint8Array> {
  return new Uint8Array(await new Response(stream as BodyInit).arrayBuffer());
}

/**
 * Registers the shared registry tests under `name`; `open` makes a fresh
 * registry. `takedown: false` for a registry without the optional
 * deletePod, isDeleted and listPods.
 */
export function registryContract(
  name: string,
  open: () => Promise<Registry & { close?: () => void }>,
  { takedown = true }: { takedown?: boolean } = {},
): void {
  Deno.test(`${name}: putPod() then getRecord() and getBlob() return what was stored`, async () => {
    const registry = await open();
    try {
      const blob = new Uint8Array([0, 1, 2, 0xff, 0xfe, 0x3c]);
      const record = sampleRecord("abcDEF123456", blob);
      await registry.putPod(record, blob);
      assert.deepEqual(await registry.getRecord("abcDEF123456"), record);
      assert.deepEqual(await registry.getBlob("abcDEF123456"), blob);
      if (registry.getBlobStream) {
        const stream = await registry.getBlobStream("abcDEF123456");
        assert.ok(stream);
        assert.deepEqual(await readAll(stream), blob);
      }
    } finally {
      registry.close?.();
    }
  });

  Deno.test(`${name}: unknown ids give null`, async () => {
    const registry = await open();
    try {
      assert.equal(await registry.getRecord("zzzzzzzzzzzz"), null);
      assert.equal(await registry.getBlob("zzzzzzzzzzzz"), null);
      if (registry.getBlobStream) {
        assert.equal(await registry.getBlobStream("zzzzzzzzzzzz"), null);
      }
    } finally {
      registry.close?.();
    }
  });

  Deno.test(`${name}: bumpHits() counts each hit`, async () => {
    const registry = await open();
    try {
      const blob = new TextEncoder().encode("<p>x</p>");
      await registry.putPod(sampleRecord("hits00000001", blob), blob);
      await registry.bumpHits("hits00000001");
      await registry.bumpHits("hits00000001");
      assert.equal((await registry.getRecord("hits00000001"))?.hits, 2);
      await registry.bumpHits("zzzzzzzzzzzz");
    } finally {
      registry.close?.();
    }
  });

  Deno.test(`${name}: a large blob round-trips exactly`, async () => {
    const registry = await open();
    try {
      const blob = new Uint8Array(3 * 1024 * 1024 + 7);
      for (let i = 0; i < blob.length; i += 4096) blob[i] = i % 251;
      await registry.putPod(sampleRecord("large0000001", blob), blob);
      assert.deepEqual(await registry.getBlob("large0000001"), blob);
      if (registry.getBlobStream) {
        assert.deepEqual(
          await readAll((await registry.getBlobStream("large0000001"))!),
          blob,
        );
      }
    } finally {
      registry.close?.();
    }
  });

  if (!takedown) return;
  Deno.test(`${name}: deletePod() takes a pod down for good and listPods() lists the rest`, async () => {
    const registry = await open();
    try {
      if (!registry.deletePod || !registry.isDeleted || !registry.listPods) {
        throw new Error(
          `${name} must implement deletePod, isDeleted, listPods`,
        );
      }
      const blob = new Uint8Array([1, 2, 3]);
      const kept = sampleRecord("keptKEPT1234", blob);
      const gone = sampleRecord("goneGONE1234", blob);
      const other = {
        ...sampleRecord("otherOTHER12", blob),
        ownerPubkey: "D".repeat(43),
      };
      await registry.putPod(kept, blob);
      await registry.putPod(gone, blob);
      await registry.putPod(other, blob);
      assert.equal(await registry.deletePod(gone.id), true);
      assert.equal(await registry.deletePod(gone.id), false);
      assert.equal(await registry.deletePod("neverNEVER12"), false);
      assert.equal(await registry.isDeleted(gone.id), true);
      assert.equal(await registry.isDeleted(kept.id), false);
      assert.equal(await registry.isDeleted("neverNEVER12"), false);
      assert.equal(await registry.getRecord(gone.id), null);
      assert.equal(await registry.getBlob(gone.id), null);
      await assert.rejects(registry.putPod(gone, blob));
      const all = [];
      for await (const record of registry.listPods()) all.push(record.id);
      assert.deepEqual(all.sort(), [kept.id, other.id].sort());
      const mine = [];
      for await (const record of registry.listPods({ owner: "D".repeat(43) })) {
        mine.push(record);
      }
      assert.deepEqual(mine, [other]);
    } finally {
      registry.close?.();
    }
  });
}
