/**
 * `deno task fuzz`: runs every fuzz target of `tests/support/fuzz_targets.ts` with
 * fast-check, one million cases a target by default, and prints per target
 * the cases, the time, the rate and the failures (with the first failing
 * inputs). Exits 1 when any target failed.
 *
 * Usage: `deno task fuzz [--runs N] [--seed N] [--target NAME]...`
 *
 * @module
 */

import { parseArgs } from "node:util";
import {
  createFuzzTargets,
  type FuzzReport,
  runFuzzTarget,
} from "../tests/support/fuzz_targets.ts";

/** Cases a target when `--runs` is not given. */
export const DEFAULT_RUNS = 1_000_000;
/** Cases between two progress lines. */
const CHUNK = 50_000;

if (import.meta.main) {
  const { values } = parseArgs({
    args: Deno.args,
    options: {
      runs: { type: "string" },
      seed: { type: "string" },
      target: { type: "string", multiple: true },
    },
  });
  const runs = values.runs === undefined ? DEFAULT_RUNS : Number(values.runs);
  if (!Number.isSafeInteger(runs) || runs < 1) {
    console.error(`Cannot fuzz: --runs '${values.runs}' is not a count`);
    Deno.exit(2);
  }
  const seed = values.seed === undefined
    ? (Math.random() * 2 ** 31) | 0
    : Number(values.seed);
  await using fuzz = await createFuzzTargets();
  const targets = fuzz.targets.filter((t) =>
    values.target === undefined || values.target.includes(t.name)
  );
  console.log(
    `fuzz: ${runs.toLocaleString("en")} cases a target, seed ${seed}, ${
      targets.map((t) => t.name).join(", ")
    }`,
  );
  const reports: FuzzReport[] = [];
  for (const target of targets) {
    // Runs in chunks (one seed each, derived from the main one) so progress
    // shows and memory stays flat.
    const total: FuzzReport = {
      name: target.name,
      cases: 0,
      failures: 0,
      examples: [],
      ms: 0,
      seed,
    };
    for (let done = 0, chunk = 0; done < runs; chunk++) {
      const n = Math.min(CHUNK, runs - done);
      const report = await runFuzzTarget(target, {
        runs: n,
        seed: (seed + chunk * 7_919) | 0,
        maxExamples: 3,
      });
      done += n;
      total.cases += report.cases;
      total.failures += report.failures;
      total.ms += report.ms;
      if (total.examples.length < 3) total.examples.push(...report.examples);
      if (runs > CHUNK) {
        console.error(
          `  ${target.name}: ${done.toLocaleString("en")} cases, ${
            (total.ms / 1000).toFixed(1)
          } s, ${total.failures} failures`,
        );
      }
    }
    reports.push(total);
    printReport(total);
  }
  console.log("\n| target | cases | time | cases/s | failures |");
  console.log("|---|---:|---:|---:|---:|");
  for (const r of reports) {
    console.log(
      `| ${r.name} | ${r.cases.toLocaleString("en")} | ${
        (r.ms / 1000).toFixed(1)
      } s | ${
        Math.round(r.cases / (r.ms / 1000)).toLocaleString("en")
      } | ${r.failures} |`,
    );
  }
  if (reports.some((r) => r.failures > 0)) Deno.exitCode = 1;
}

function printReport(r: FuzzReport): void {
  console.log(
    `${r.name}: ${r.cases.toLocaleString("en")} cases in ${
      (r.ms / 1000).toFixed(1)
    } s (${
      Math.round(r.cases / (r.ms / 1000)).toLocaleString("en")
    }/s), ${r.failures} failures`,
  );
  for (const example of r.examples.slice(0, 3)) console.log(`  - ${example}`);
}
