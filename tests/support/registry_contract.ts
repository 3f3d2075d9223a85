// The contract every Registry must keep, run against each implementation.
import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import fc from "fast-check";
import type { PodRecord, Registry } from "../../src/registries/types.ts";
import { FIXED_NAMES, TRICKY_CHARACTERS } from "../contract/_names.ts";

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
    version: 1,
    updatedAt: "2026-11-21T12:00:00.000Z",
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

/** A pod's version `n` for the update tests: varied sizes, up to 600 KiB. */
function version(
  id: string,
  n: number,
): { record: PodRecord; blob: Uint8Array } {
  const blob = pseudoRandomBytes(1 + (n * 104_729) % (600 * 1024), n + 11);
  const record = {
    ...sampleRecord(id, blob),
    sha256: `v${n}`.padEnd(43, "x"),
    contentSha256: `c${n}`.padEnd(43, "x"),
    name: `Version ${n}`,
    createdAt: new Date(Date.UTC(2026, 0, 1, 0, 0, n)).toISOString(),
    updatedAt: new Date(Date.UTC(2026, 0, 2, 0, 0, n)).toISOString(),
  };
  return { record, blob };
}

/**
 * Five rounds of 20 concurrent `updatePod` calls from the same version:
 * each round exactly one wins, the record and blob are the winner's (its
 * `version` one more, `hits` and `uploadedAt` carried over), while readers
 * running all along only ever get a whole version's bytes. A stale digest
 * or an unknown id changes nothing.
 */
export async function checkCompareAndSwap(registry: Registry): Promise<void> {
  if (!registry.updatePod) throw new Error("the registry has no updatePod");
  const id = "update000001";
  const first = version(id, 0);
  await registry.putPod(first.record, first.blob);
  await registry.bumpHits(id);
  await registry.bumpHits(id);
  const known = new Map<number, Uint8Array>([[first.blob.length, first.blob]]);
  let reading = true;
  let reads = 0;
  const reader = (async () => {
    while (reading) {
      const blob = await registry.getBlob(id);
      assert.ok(blob, "getBlob gave null during updates");
      const expected = known.get(blob.length);
      assert.ok(expected, `a blob of ${blob.length} bytes that no version has`);
      assertSameBytes(blob, expected, `read ${reads}`);
      if (registry.getBlobStream) {
        const before = (await registry.getRecord(id))?.version ?? 1;
        const stream = await registry.getBlobStream(id);
        assert.ok(stream, "getBlobStream gave null during updates");
        try {
          const bytes = await readAll(stream);
          assertSameBytes(bytes, known.get(bytes.length)!, `stream ${reads}`);
        } catch (error) {
          // A stream outlives the update of its version (the replaced
          // version stays readable for a while), not a second one: then it
          // fails, and never mixes versions.
          const now = (await registry.getRecord(id))?.version ?? 1;
          const superseded = /deleted while being read/.test(String(error));
          if (!superseded || now < before + 2) throw error;
        }
      }
      reads += 1;
    }
  })();
  // Observed at once: a failed read must fail the test, not the process.
  reader.catch(() => {});
  let current = first;
  try {
    for (let round = 1; round <= 5; round++) {
      const candidates = Array.from(
        { length: 20 },
        (_, i) => version(id, round * 100 + i),
      );
      for (const { blob } of candidates) known.set(blob.length, blob);
      const results = await Promise.all(
        candidates.map(({ record, blob }) =>
          registry.updatePod!(record, blob, current.record.sha256)
        ),
      );
      const winners = candidates.filter((_, i) => results[i]);
      assert.equal(winners.length, 1, `round ${round}: ${results}`);
      current = winners[0]!;
      const stored = await registry.getRecord(id);
      assert.deepEqual(stored, {
        ...current.record,
        hits: 2,
        uploadedAt: first.record.uploadedAt,
        version: round + 1,
      });
      assertSameBytes(await registry.getBlob(id), current.blob, "winner");
    }
  } finally {
    reading = false;
    await reader;
  }
  assert.ok(reads > 0, "the reader never read");
  const stale = version(id, 999);
  assert.equal(
    await registry.updatePod(stale.record, stale.blob, first.record.sha256),
    false,
  );
  assert.equal(
    await registry.updatePod(
      { ...stale.record, id: "neverNEVER12" },
      stale.blob,
      first.record.sha256,
    ),
    false,
  );
  assert.equal(await registry.getRecord("neverNEVER12"), null);
  assert.equal((await registry.getRecord(id))?.sha256, current.record.sha256);
  assertSameBytes(await registry.getBlob(id), current.blob, "after stale");
}

/**
 * Stores a pod of four 256 KiB chunks at `id`, opens a stream of it, and
 * updates it (a second update from the same digest changes nothing): the
 * stream still reads the old version whole, `getBlob` gives the new one.
 */
export async function checkStreamAcrossUpdate(
  registry: Registry,
  id: string,
): Promise<void> {
  const old = pseudoRandomBytes(3 * 256 * 1024 + 5, 1);
  await registry.putPod(sampleRecord(id, old), old);
  const stream = await registry.getBlobStream!(id);
  const next = pseudoRandomBytes(1000, 2);
  const record = { ...sampleRecord(id, next), sha256: "N".repeat(43) };
  assert.equal(await registry.updatePod!(record, next, "B".repeat(43)), true);
  assert.equal(await registry.updatePod!(record, next, "B".repeat(43)), false);
  assertSameBytes(await registry.getBlob(id), next, "new version");
  assertSameBytes(
    new Uint8Array(await new Response(stream).arrayBuffer()),
    old,
    "the stream opened before",
  );
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

/** A display name: 1 to 40 characters, tricky ones often. */
const NAME = fc.array(
  fc.oneof(
    fc.constantFrom(...TRICKY_CHARACTERS),
    fc.integer({ min: 0, max: 0x10ffff }).map((c) => String.fromCodePoint(c)),
    fc.integer({ min: 0xd800, max: 0xdfff }).map((c) => String.fromCharCode(c)),
  ),
  { minLength: 1, maxLength: 40 },
).map((chars) => chars.join(""));

/**
 * Each name (FIXED_NAMES, then fast-check's) is stored by putPod and read
 * back exactly by getRecord, getRecordNow and listPods; updatePod replaces
 * it exactly too. 60 runs a registry.
 */
async function checkSignedNames(registry: Registry): Promise<void> {
  const blob = new TextEncoder().encode("<p>named</p>");
  let n = 0;
  const check = async (name: string, renamed: string) => {
    const id = `named${String(n++).padStart(7, "0")}`;
    const record = { ...sampleRecord(id, blob), name };
    await registry.putPod(record, blob);
    const same = (got: string | null | undefined, want: string) =>
      assert.ok(
        got === want,
        `${JSON.stringify(got)} for ${JSON.stringify(want)}`,
      );
    same((await registry.getRecord(id))?.name, name);
    if (registry.getRecordNow) same(registry.getRecordNow(id)?.name, name);
    if (registry.updatePod) {
      const next = { ...record, name: renamed, sha256: "E".repeat(43) };
      assert.equal(await registry.updatePod(next, blob, record.sha256), true);
      same((await registry.getRecord(id))?.name, renamed);
    }
  };
  for (const name of FIXED_NAMES) await check(name, name);
  await fc.assert(fc.asyncProperty(NAME, NAME, check), { numRuns: 60 });
  if (registry.listPods) {
    for await (const record of registry.listPods()) {
      assert.equal(typeof record.name, "string");
      assert.deepEqual(record, await registry.getRecord(record.id));
    }
  }
}

/**
 * Registers the shared registry tests under `name`; `open` makes a fresh
 * registry. `takedown: false` for a registry without the optional
 * deletePod, isDeleted and listPods, `updates: false` for one without
 * updatePod; `ignore: true` when its server is missing (outside CI).
 */
export function registryContract(
  name: string,
  open: () => Promise<Registry>,
  { takedown = true, updates = takedown, ignore = false }: {
    takedown?: boolean;
    updates?: boolean;
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

  test(`${name}: a signed name comes back exactly, through putPod, updatePod and listPods (property: NUL, controls, U+2028, lone surrogates, non-BMP)`, async () => {
    const registry = await open();
    try {
      await checkSignedNames(registry);
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

  if (updates) {
    test(`${name}: updatePod() is a compare and swap: of 20 concurrent updates exactly one wins, readers see whole versions`, async () => {
      const registry = await open();
      try {
        await checkCompareAndSwap(registry);
      } finally {
        await registry.close?.();
      }
    });
  }

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
