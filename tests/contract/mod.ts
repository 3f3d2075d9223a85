// The contract suite: every case, in the order both runtimes run them.
// tests/contract/deno_test.ts registers them against the Deno server;
// tests/contract/node_test.ts runs them on Node 22 against the installed npm
// package. Importing this module defines the cases and runs nothing: each
// suite file below adds its cases with `test()` as it is evaluated, in the
// order of these imports.
import { type ContractCase, definedCases } from "./_suite.ts";
import "./http.ts";
import "./uploads.ts";
import "./operator.ts";
import "./pod_domain.ts";
import "./operations.ts";
import "./signaling.ts";
import "./drain.ts";
import "./resume.ts";
import "./ice.ts";
import "./scaleout.ts";
import "./private_rooms.ts";
import "./cli.ts";
import "./adapters.ts";
import "./framing.ts";
import "./idle.ts";
import "./updates.ts";
import "./update_binding.ts";
import "./script_policy.ts";
import "./hardening.ts";
import "./front_page.ts";
import "./origin.ts";
import "./fidelity.ts";
import "./hardening_node.ts";
import "./ready_pod.ts";
import "./compat.ts";
import "./nostr.ts";
import "./permissions.ts";

export type { ContractApi, ContractCase, Runtime } from "./_suite.ts";

/** Every case of the suite; names are unique. */
export const CASES: readonly ContractCase[] = definedCases();

const names = new Set<string>();
for (const { name } of CASES) {
  if (names.has(name)) {
    throw new Error(`Cannot define the suite: '${name}' twice`);
  }
  names.add(name);
}
