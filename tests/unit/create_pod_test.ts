import assert from "node:assert/strict";
import { createPod } from "../../src/http/create_pod.ts";
import { BrokerError } from "../../src/http/problem.ts";
import { MemoryRegistry } from "../../src/registries/memory.ts";
import { signedPod } from "../support/helpers.ts";

Deno.test("createPod() retries an id that is already taken", async () => {
  const registry = new MemoryRegistry();
  const ids = ["takenTaken12", "takenTaken12", "freshFresh12"];
  const randomId = () => ids.shift()!;
  const first = await createPod(registry, await signedPod(), { randomId });
  assert.equal(first.id, "takenTaken12");
  const second = await createPod(registry, await signedPod(), { randomId });
  assert.equal(second.id, "freshFresh12");
  assert.equal(registry.size, 2);
});

Deno.test("createPod() builds the record from the manifest and the injected clock", async () => {
  const registry = new MemoryRegistry();
  const now = () => new Date("2026-11-21T12:00:00.000Z");
  const record = await createPod(
    registry,
    await signedPod(undefined, { name: "Named" }),
    { now },
  );
  assert.equal(record.uploadedAt, "2026-11-21T12:00:00.000Z");
  assert.equal(record.name, "Named");
  assert.equal(record.createdAt, null);
  assert.equal(record.hits, 0);
  assert.deepEqual(await registry.getRecord(record.id), record);
});

Deno.test("createPod() refuses a blob over maxBlobBytes before verifying it", async () => {
  const registry = new MemoryRegistry();
  await assert.rejects(
    createPod(registry, new Uint8Array(11), { maxBlobBytes: 10 }),
    (error) => error instanceof BrokerError && error.code === "blob_too_large",
  );
});

Deno.test("randomAlphanumeric() ids are 12 characters of [A-Za-z0-9] and spread over all 62", async () => {
  const { randomAlphanumeric } = await import("../../src/_util/id.ts");
  const seen = new Set<string>();
  for (let i = 0; i < 2000; i++) {
    const id = randomAlphanumeric(12);
    assert.match(id, /^[A-Za-z0-9]{12}$/);
    for (const c of id) seen.add(c);
  }
  assert.equal(seen.size, 62);
});
