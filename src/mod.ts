/**
 * pod-broker: accepts Ed25519-signed single-file web apps ("pods"), stores
 * them through a pluggable registry, serves them at short URLs under a strict
 * Content-Security-Policy, and relays WebRTC signaling between their peers.
 *
 * Run as the main module it is the CLI:
 * `deno run -A jsr:@pod/broker --registry memory`.
 *
 * @example Start a broker on the memory registry
 * ```ts ignore
 * import { createSignalServer, MemoryRegistry } from "jsr:@pod/broker";
 *
 * const server = await createSignalServer({ registry: new MemoryRegistry(), port: 8080 });
 * // ... later
 * await server.close();
 * ```
 *
 * @module
 */

import { createSignalServer } from "./adapters/deno.ts";
import { type CreateSignalServer, runCli } from "./cli/main.ts";

export * from "./core.ts";
export { createSignalServer };
export { type CreateSignalServer, runCli };

if (import.meta.main) {
  Deno.exitCode = await runCli(Deno.args, createSignalServer);
}
