/**
 * The runtime's server factory, the one thing of the runtime the command
 * line is given: `serve` and `dev` start their broker with it.
 *
 * @module
 */

import type { SignalServer, SignalServerOptions } from "../config/types.ts";

/** The runtime's `createSignalServer`, passed in by `mod.ts` or `mod_node.ts`. */
export type CreateSignalServer = (
  options: SignalServerOptions,
) => Promise<SignalServer>;
