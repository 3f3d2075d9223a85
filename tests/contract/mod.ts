// The contract suite: every case, in the order both runtimes run them.
// tests/contract/deno_test.ts registers them against the Deno server;
// tests/contract/node_test.ts runs them on Node 22 against the installed npm
// package. Importing this module defines the cases and runs nothing.
import type { ContractCase } from "./_support.ts";
import { ADAPTER_CASES } from "./adapters.ts";
import { FIDELITY_CASES } from "./fidelity.ts";
import { CLI_CASES } from "./cli.ts";
import { FRONT_PAGE_CASES } from "./front_page.ts";
import { COMPAT_CASES } from "./compat.ts";
import { HARDENING_CASES } from "./hardening.ts";
import { HARDENING_NODE_CASES } from "./hardening_node.ts";
import { READY_POD_CASES } from "./ready_pod.ts";
import { HTTP_CASES } from "./http.ts";
import { ICE_CASES } from "./ice.ts";
import { OPERATIONS_CASES } from "./operations.ts";
import { OPERATOR_CASES } from "./operator.ts";
import { ORIGIN_CASES } from "./origin.ts";
import { PERMISSION_CASES } from "./permissions.ts";
import { POD_DOMAIN_CASES } from "./pod_domain.ts";
import { SCALEOUT_CASES } from "./scaleout.ts";
import { SCRIPT_POLICY_CASES } from "./script_policy.ts";
import { SIGNALING_CASES } from "./signaling.ts";
import { UPDATE_CASES } from "./updates.ts";
import { UPDATE_BINDING_CASES } from "./update_binding.ts";
import { UPLOAD_CASES } from "./uploads.ts";

export type { ContractApi, ContractCase, Runtime } from "./_support.ts";

/** Every case of the suite; names are unique. */
export const CASES: readonly ContractCase[] = [
  ...HTTP_CASES,
  ...UPLOAD_CASES,
  ...OPERATOR_CASES,
  ...POD_DOMAIN_CASES,
  ...OPERATIONS_CASES,
  ...SIGNALING_CASES,
  ...ICE_CASES,
  ...SCALEOUT_CASES,
  ...CLI_CASES,
  ...ADAPTER_CASES,
  ...UPDATE_CASES,
  ...UPDATE_BINDING_CASES,
  ...SCRIPT_POLICY_CASES,
  ...HARDENING_CASES,
  ...FRONT_PAGE_CASES,
  ...ORIGIN_CASES,
  ...FIDELITY_CASES,
  ...HARDENING_NODE_CASES,
  ...READY_POD_CASES,
  ...COMPAT_CASES,
  ...PERMISSION_CASES,
];

const names = new Set<string>();
for (const { name } of CASES) {
  if (names.has(name)) {
    throw new Error(`Cannot define the suite: '${name}' twice`);
  }
  names.add(name);
}
