// The table of docs/authors/capabilities.md is machine-checked by the
// capabilities journey in two browsers; here, without a browser: every row
// names its probes and has a verdict in every cell, and the probes the rows
// name are exactly the checks the probe pod and the journey make, so no row
// goes untested and no outcome undocumented.
import assert from "node:assert/strict";
import {
  CAPABILITIES_PAGE,
  capabilityRows,
  JOURNEY_PROBES,
} from "../support/capabilities_table.ts";

const page = await Deno.readTextFile(
  new URL(`../../${CAPABILITIES_PAGE}`, import.meta.url),
);
const probe = await Deno.readTextFile(
  new URL("../testdata/capabilities_probe.html", import.meta.url),
);

Deno.test("capabilities table: each row names its probes, each probe has one row", () => {
  const rows = capabilityRows(page);
  assert.ok(rows.length >= 25, `${rows.length} rows`);
  const named = rows.flatMap((row) => row.probes);
  assert.equal(new Set(named).size, named.length, "a probe named twice");
  const checks = [...probe.matchAll(/check\(\s*"(\w+)"/g)].map((m) => m[1]!);
  assert.deepEqual(
    [...named].sort(),
    [...checks, ...JOURNEY_PROBES].sort(),
  );
});

Deno.test("capabilities table: a cell that is not a verdict, or a row without a probe, is an error", () => {
  const table = (row: string) =>
    `## The table\n\n| what | broker's host | pod's own origin | pod's own origin, declared |\n| - | - | - | - |\n${row}\n`;
  assert.deepEqual(
    capabilityRows(
      table(
        "| x <!-- probe: a b --> | yes | Chromium no, Firefox asks | asks |",
      ),
    ),
    [{
      what: "x",
      probes: ["a", "b"],
      expected: {
        "broker's host": { chromium: "yes", firefox: "yes" },
        "pod's own origin": { chromium: "no", firefox: "asks" },
        "pod's own origin, declared": { chromium: "asks", firefox: "asks" },
      },
    }],
  );
  assert.throws(
    () => capabilityRows(table("| x <!-- probe: a --> | yes | maybe | no |")),
    /'maybe' is neither/,
  );
  assert.throws(
    () => capabilityRows(table("| x | yes | no | no |")),
    /names no probe/,
  );
  assert.throws(() => capabilityRows("# no table"), /no '## The table'/);
  assert.throws(
    () =>
      capabilityRows(
        "## The table\n\n| what | broker's host | pod's own origin |\n| - | - | - |\n",
      ),
    /lacks/,
  );
});
