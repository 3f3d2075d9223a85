// Uploads pods to a PostgresRegistry until it is killed, for the SIGKILL
// test: three loops at once, each printing "ack N" once putPod of pod N has
// resolved. The URL comes from the environment (DATABASE_URL, never argv:
// it holds a password). Pod N is `childPod(N)`, so the test can rebuild it.
import { createHash } from "node:crypto";
import { PostgresRegistry } from "../../src/registries/postgres.ts";
import type { PodRecord } from "../../src/registries/types.ts";
import { pseudoRandomBytes, sampleRecord } from "./registry_contract.ts";

const WORKERS = 3;

/** Pod `index` of the child: up to 2 MiB of fixed bytes, its real SHA-256. */
export function childPod(index: number): {
  record: PodRecord;
  blob: Uint8Array;
} {
  const size = 1 + (index * 104_729) % (2 * 1024 * 1024);
  const blob = pseudoRandomBytes(size, index + 1);
  const record = {
    ...sampleRecord(`kill${String(index).padStart(8, "0")}`, blob),
    sha256: createHash("sha256").update(blob).digest("base64url"),
    uploadedAt: new Date(Date.UTC(2026, 0, 1) + index * 1000).toISOString(),
  };
  return { record, blob };
}

if (import.meta.main) {
  const registry = await PostgresRegistry.open({
    url: Deno.env.get("DATABASE_URL")!,
    maxConnections: WORKERS,
  });
  const encoder = new TextEncoder();
  await Promise.all(
    Array.from({ length: WORKERS }, async (_, worker) => {
      // Bounded: the test kills it long before.
      for (let index = worker; index < 10_000; index += WORKERS) {
        const { record, blob } = childPod(index);
        await registry.putPod(record, blob);
        await Deno.stdout.write(encoder.encode(`ack ${index}\n`));
      }
    }),
  );
}
