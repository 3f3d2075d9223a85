// A small crash loop (scripts/crash_loop.ts, `deno task crash-loop` runs 100):
// a SQLite broker in a child process, SIGKILLed under concurrent uploads, and
// after each kill and restart every acknowledged pod byte-exact, no record
// without its blob, no stray file. Then the same for updates
// (tests/support/update_crash.ts).
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { runCrashLoop } from "../support/crash_loop.ts";
import { runUpdateCrashLoop } from "../support/update_crash.ts";

Deno.test("SqliteRegistry loses no acknowledged pod and leaves no stray file across 3 SIGKILLs under load", async () => {
  const report = await runCrashLoop({
    kills: 3,
    concurrency: 8,
    maxPodBytes: 256 * 1024,
    maxRunMs: 800,
  });
  assert.deepEqual(report.violations, []);
  assert.equal(report.kills, 3);
  assert.ok(report.acknowledged > 0, "no upload was acknowledged");
  // Each acknowledged pod was fetched at least once after a restart.
  assert.ok(report.podChecks >= report.acknowledged);
  assert.ok(report.recordChecks >= report.acknowledged);
});

Deno.test("SqliteRegistry: SIGKILLs during concurrent updates lose no acknowledged version and leave no torn pod", async () => {
  const dataDir = await Deno.makeTempDir();
  try {
    const report = await runUpdateCrashLoop({
      flags: ["--registry", "sqlite", "--data-dir", dataDir],
      kills: 3,
      // Right after each kill: every record's blob file is whole.
      afterKill: async () => {
        const db = new DatabaseSync(join(dataDir, "pods.sqlite"), {
          readOnly: true,
        });
        try {
          const rows = db.prepare("SELECT id, sha256, blob FROM pods").all();
          assert.ok(rows.length > 0);
          for (const row of rows) {
            const file = join(dataDir, "blobs", String(row.blob ?? row.id));
            const bytes = await readFile(file);
            assert.equal(
              createHash("sha256").update(bytes).digest("base64url"),
              row.sha256,
              `the record of ${row.id} names a blob with other bytes`,
            );
          }
        } finally {
          db.close();
        }
      },
    });
    assert.ok(report.acknowledged > 0, "no update was acknowledged");
    // After the last restart: one blob file per pod, no temporary file.
    assert.equal([...Deno.readDirSync(join(dataDir, "blobs"))].length, 4);
  } finally {
    await Deno.remove(dataDir, { recursive: true });
  }
});
