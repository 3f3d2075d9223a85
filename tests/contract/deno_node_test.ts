// The contract suite (tests/contract/) on Deno through the node:http adapter
// (src/mod_node.ts on Deno's node:http and `ws`): what the container and the
// docs' public recipe run. Same cases as tests/contract/deno_test.ts,
// with Deno's sanitizers on.
import { CASES } from "./mod.ts";
import { DENO_API } from "../support/helpers.ts";
import { createSignalServer } from "../../src/adapters/node.ts";
import type { ContractApi } from "./_suite.ts";

const API: ContractApi = {
  ...DENO_API,
  createSignalServer,
  http: "node:http",
  cli: [
    Deno.execPath(),
    "run",
    "-A",
    new URL("../../src/mod_node.ts", import.meta.url).pathname,
  ],
};

for (const { name, fn, only } of CASES) {
  if (only !== undefined && only.runtime !== "deno") {
    Deno.test({
      name: `[deno node:http] ${name} (Node only: ${only.why})`,
      ignore: true,
      fn: () => {},
    });
  } else {
    Deno.test(`[deno node:http] ${name}`, () => fn(API));
  }
}
