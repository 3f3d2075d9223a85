// The contract suite (tests/contract/) on Deno: every case is a Deno test
// against the Deno server and CLI (src/mod.ts), with the sanitizers on.
// tests/contract/node_test.ts runs the same cases on Node 22.
import { CASES } from "./mod.ts";
import { DENO_API } from "../support/helpers.ts";

for (const { name, fn, only } of CASES) {
  if (only !== undefined && only.runtime !== "deno") {
    Deno.test({
      name: `[deno] ${name} (Node only: ${only.why})`,
      ignore: true,
      fn: () => {},
    });
  } else {
    Deno.test(`[deno] ${name}`, () => fn(DENO_API));
  }
}
