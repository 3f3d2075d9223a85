// The contract every Registry must keep, run against each implementation.
import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import type { PodRecord, Registry } from "../../src/registries/types.ts";

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

/** `size` bytes of a fixed pseudo-random sequence (xorshift32 from `seed`). */
export function pseudoRandomBytes(size: number, seed: number): Uint8Array {
  const words = new Uint32Array(Math.ceil(size / 4));
  let x = seed >>> 0 || 1;
  for (let i = 0; i < words.length; i++) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    words[i] = x >>> 0;
  }
  return new Uint8Array(words.buffer, 0, size);
}

/** Asserts two byte arrays are equal, naming the first difference. */
export function assertSameBytes(
  actual: Uint8Array | null,
  expected: Uint8Array,
  what: string,
): void {
  assert.ok(actual, `${what}: got null`);
  assert.equal(actual.length, expected.length, `${what}: length`);
  const a = Buffer.from(actual.buffer, actual.byteOffset, actual.length);
  const b = Buffer.from(expected.buffer, expected.byteOffset, expected.length);
  if (!a.equals(b)) {
    const at = a.findIndex((byte, i) => byte !== b[i]);
    assert.fail(`${what}: bytes differ from offset ${at}`);
  }
}

/**
 * Hit batching (`HitBatcher`): `registry` counts 50 hits at once, `other`
 * (another connection to the same store) sees them within 3 s, and
 * `registry.close()` writes the ones counted since. Closes `registry`.
 */
export async function checkHitBatching(
  registry: Registry,
  other: Registry,
): Promise<void> {
  const id = "hotpod000001";
  const blob = new TextEncoder().encode("<p>hot</p>");
  await registry.putPod(sampleRecord(id, blob), blob);
  for (let i = 0; i < 50; i++) await registry.bumpHits(id);
  assert.equal((await registry.getRecord(id))?.hits, 50);
  if (registry.getRecordNow) assert.equal(registry.getRecordNow(id)?.hits, 50);
  assert.equal((await other.getRecord(id))?.hits, 0, "written at once");
  const seen = async (hits: number, ms: number) => {
    let written = 0;
    for (let waited = 0; waited < ms && written !== hits; waited += 100) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      written = (await other.getRecord(id))?.hits ?? 0;
    }
    return written;
  };
  assert.equal(
    await seen(50, 3_000),
    50,
    "the 50 hits were written within 3 s",
  );
  assert.equal((await registry.getRecord(id))?.hits, 50);
  await registry.bumpHits(id);
  await registry.close?.();
  // Before the timer's second is up (a record read is reused for 250 ms).
  assert.equal(await seen(51, 500), 51, "close() wrote them");
}

/** Reads a stream into one array, counting its chunks and the largest. */
async function readChunks(
  stream: ReadableStream<Uint8Array>,
  expectedSize: number,
): Promise<{ bytes: Uint8Array; chunks: number; largest: number }> {
  const bytes = new Uint8Array(expectedSize);
  let offset = 0;
  let chunks = 0;
  let largest = 0;
  for await (const chunk of stream) {
    assert.ok(
      offset + chunk.length <= expectedSize,
      `the stream yields more than ${expectedSize} bytes`,
    );
    bytes.set(chunk, offset);
    offset += chunk.length;
    chunks += 1;
    largest = Math.max(largest, chunk.length);
  }
  assert.equal(offset, expectedSize, "the stream ends early");
  return { bytes, chunks, largest };
}

/**
 * Registers the shared registry tests under `name`; `open` makes a fresh
 * registry. `takedown: false` for a registry without the optional
 * deletePod, isDeleted and listPods; `ignore: true` when its server is
 * missing (outside CI).
 */
export function registryContract(
  name: string,
  open: () => Promise<Registry>,
  { takedown = true, ignore = false }: {
    takedown?: boolean;
    ignore?: boolean;
  } = {},
): void {
  const test = (title: string, fn: () => Promise<void>) =>
    Deno.test({ name: title, ignore, fn });
  test(`${name}: putPod() then getRecord() and getBlob() return what was stored`, async () => {
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
      await registry.close?.();
    }
  });

  test(`${name}: unknown ids give null`, async () => {
    const registry = await open();
    try {
      assert.equal(await registry.getRecord("zzzzzzzzzzzz"), null);
      assert.equal(await registry.getBlob("zzzzzzzzzzzz"), null);
      if (registry.getBlobStream) {
        assert.equal(await registry.getBlobStream("zzzzzzzzzzzz"), null);
      }
    } finally {
      await registry.close?.();
    }
  });

  test(`${name}: bumpHits() counts each hit`, async () => {
    const registry = await open();
    try {
      const blob = new TextEncoder().encode("<p>x</p>");
      await registry.putPod(sampleRecord("hits00000001", blob), blob);
      await registry.bumpHits("hits00000001");
      await registry.bumpHits("hits00000001");
      assert.equal((await registry.getRecord("hits00000001"))?.hits, 2);
      await registry.bumpHits("zzzzzzzzzzzz");
    } finally {
      await registry.close?.();
    }
  });

  test(`${name}: a large blob round-trips exactly`, async () => {
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
      await registry.close?.();
    }
  });

  for (const size of [0, 1024 * 1024, 50 * 1024 * 1024]) {
    test(`${name}: a blob of ${size} bytes comes back byte-exact, streamed in chunks`, async () => {
      const registry = await open();
      try {
        const id = `size${String(size).padStart(8, "0")}`;
        const blob = pseudoRandomBytes(size, size + 1);
        await registry.putPod(sampleRecord(id, blob), blob);
        assert.equal((await registry.getRecord(id))?.blobSize, size);
        if (!registry.getBlobStream) {
          assertSameBytes(await registry.getBlob(id), blob, "getBlob");
          return;
        }
        const stream = await registry.getBlobStream(id);
        assert.ok(stream, "getBlobStream gave null");
        const { bytes, chunks, largest } = await readChunks(stream, size);
        assertSameBytes(bytes, blob, "getBlobStream");
        if (size >= 50 * 1024 * 1024) {
          // Streamed means never whole: many chunks, each a few MiB at most.
          assert.ok(chunks >= 10, `only ${chunks} chunks`);
          assert.ok(largest <= 4 * 1024 * 1024, `a chunk of ${largest} bytes`);
        }
        if (size <= 1024 * 1024) {
          assertSameBytes(await registry.getBlob(id), blob, "getBlob");
        }
      } finally {
        await registry.close?.();
      }
    });
  }

  test(`${name}: 50 concurrent putPod() calls all store their pod`, async () => {
    const registry = await open();
    try {
      const pods = Array.from({ length: 50 }, (_, i) => {
        const blob = pseudoRandomBytes((i * 15_013) % (600 * 1024), i + 7);
        const record = {
          ...sampleRecord(`storm${String(i).padStart(7, "0")}`, blob),
          uploadedAt: new Date(Date.UTC(2026, 0, 1, 0, 0, i)).toISOString(),
        };
        return { record, blob };
      });
      const results = await Promise.allSettled(
        pods.map(({ record, blob }) => registry.putPod(record, blob)),
      );
      assert.deepEqual(
        results.filter((result) => result.status === "rejected"),
        [],
      );
      for (const { record, blob } of pods) {
        assert.deepEqual(await registry.getRecord(record.id), record);
        assertSameBytes(await registry.getBlob(record.id), blob, record.id);
        if (registry.getBlobStream) {
          const stream = await registry.getBlobStream(record.id);
          assert.ok(stream);
          const { bytes } = await readChunks(stream, blob.length);
          assertSameBytes(bytes, blob, `${record.id} streamed`);
        }
      }
      if (takedown && registry.listPods) {
        const listed = [];
        for await (const record of registry.listPods()) listed.push(record.id);
        assert.deepEqual(listed, pods.map(({ record }) => record.id));
      }
    } finally {
      await registry.close?.();
    }
  });

  if (!takedown) return;
  test(`${name}: deletePod() takes a pod down for good and listPods() lists the rest`, async () => {
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
        uploadedAt: "2026-11-21T12:00:01.000Z",
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
      if (registry.getBlobStream) {
        assert.equal(await registry.getBlobStream(gone.id), null);
      }
      await registry.bumpHits(gone.id);
      assert.equal(await registry.getRecord(gone.id), null);
      await assert.rejects(registry.putPod(gone, blob));
      assert.equal(await registry.getRecord(gone.id), null);
      assert.equal(await registry.isDeleted(gone.id), true);
      const all = [];
      for await (const record of registry.listPods()) all.push(record.id);
      assert.deepEqual(all, [kept.id, other.id]);
      const mine = [];
      for await (const record of registry.listPods({ owner: "D".repeat(43) })) {
        mine.push(record);
      }
      assert.deepEqual(mine, [other]);
      const theirs = [];
      for await (const record of registry.listPods({ owner: "A".repeat(43) })) {
        theirs.push(record.id);
      }
      assert.deepEqual(theirs, [kept.id]);
      for await (const record of registry.listPods({ owner: "E".repeat(43) })) {
        assert.fail(`listed ${record.id} for an owner without pods`);
      }
    } finally {
      await registry.close?.();
    }
  });
}
