/**
 * `deno task crash-loop`: SIGKILLs a SQLite broker under concurrent uploads,
 * again and again, and checks after each kill that nothing acknowledged was
 * lost and nothing torn was left (the loop itself is
 * `tests/support/crash_loop.ts`, which `tests/e2e/crash_test.ts` runs short).
 * Prints the figures and exits 1 on any violation.
 *
 * @module
 */

import { parseArgs } from "node:util";
import { runCrashLoop } from "../tests/support/crash_loop.ts";

if (import.meta.main) {
  const { values } = parseArgs({
    args: Deno.args,
    options: {
      kills: { type: "string", default: "100" },
      concurrency: { type: "string", default: "8" },
      node: { type: "boolean", default: false },
    },
  });
  const kills = Number(values.kills);
  console.log(
    `crash-loop: ${kills} SIGKILLs of a SQLite broker (${
      values.node ? "Node" : "Deno"
    }) under ${values.concurrency} concurrent uploads`,
  );
  const report = await runCrashLoop({
    kills,
    concurrency: Number(values.concurrency),
    node: values.node,
    log: (line) => console.log(`  ${line}`),
  });
  console.log(
    [
      `kills: ${report.kills}`,
      `uploads started: ${report.uploads}`,
      `acknowledged (201): ${report.acknowledged}`,
      `stored but not acknowledged (killed in between): ${report.unacknowledgedStored}`,
      `records checked after a kill (blob present, SHA-256 equal): ${report.recordChecks}`,
      `GETs compared byte for byte: ${report.podChecks}`,
      `temp files left by kills (all gone after restart): ${report.tempFilesAfterKill}`,
      `orphan blobs left by kills (all gone after restart): ${report.orphanBlobsAfterKill}`,
      `time: ${(report.ms / 1000).toFixed(1)} s`,
      `violations: ${report.violations.length}`,
    ].join("\n"),
  );
  for (const v of report.violations.slice(0, 20)) console.log(`  - ${v}`);
  if (report.violations.length > 0) Deno.exitCode = 1;
}
