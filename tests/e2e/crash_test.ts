// A small crash loop (scripts/crash_loop.ts, `deno task crash-loop` runs 100):
// a SQLite broker in a child process, SIGKILLed under concurrent uploads, and
// after each kill and restart every acknowledged pod byte-exact, no record
// without its blob, no stray file.
import assert from "node:assert/strict";
import { runCrashLoop } from "../../scripts/crash_loop.ts";

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
