#!/usr/bin/env node
/**
 * pod-broker for Node.js 22.13+ (the npm package): accepts Ed25519-signed
 * single-file web apps ("pods"), stores them through a pluggable registry,
 * serves them at short URLs under a strict Content-Security-Policy, and
 * relays WebRTC signaling between their peers.
 *
 * The same surface as the Deno entry point, with `createSignalServer` on
 * `node:http` and `ws`. Run as the main module (as the `pod-broker` bin) it
 * is the CLI: `npx pod-broker --registry memory`.
 *
 * Deno runs it too (`deno run ... src/mod_node.ts`, as the container does):
 * through Deno's `node:http`, `ws` refuses a frame over the limit from its
 * header, where `Deno.upgradeWebSocket` reads up to 64 MiB of it first, and
 * a request head has a time limit. That is the public recipe of docs/operators/install.md.
 *
 * @example Start a broker on the memory registry
 * ```ts ignore
 * import { createSignalServer, MemoryRegistry } from "pod-broker";
 *
 * const server = await createSignalServer({ registry: new MemoryRegistry(), port: 8080 });
 * // ... later
 * await server.close();
 * ```
 *
 * @module
 */

import {
  hostArgs,
  hostScriptPath,
  nodeBuiltin,
  setExitCode,
} from "./_util/host.ts";
import { createSignalServer } from "./adapters/node.ts";
import { runCli } from "./cli/main.ts";

export * from "./core.ts";
export { createSignalServer };
export { runCli };

if (isMainModule(import.meta.url)) {
  // No top-level await: it would keep `require("pod-broker")` from working.
  runCli(hostArgs(), createSignalServer).then(setExitCode);
}

/**
 * Whether the module at `url` is the program the runtime was started with:
 * `import.meta.main` where there is one (Deno, which runs this entry point
 * in the container, and may not be allowed to read the script's path), else
 * the path of `process.argv[1]`, through a bin symlink too (Node 22 has no
 * `import.meta.main`). `node:fs` and `node:url` are loaded here, not
 * imported: importing a `node:` module makes Node build its ESM facade,
 * and the three this needed (with `node:process`, whose facade opens
 * standard input) cost a Node start about 5 to 14 ms.
 */
function isMainModule(url: string): boolean {
  const { main } = import.meta as { main?: boolean };
  if (main !== undefined) return main;
  const entry = hostScriptPath();
  if (entry === undefined) return false;
  const { realpathSync } = nodeBuiltin("node:fs");
  try {
    return realpathSync(entry) ===
      realpathSync(nodeBuiltin("node:url").fileURLToPath(url));
  } catch {
    return false;
  }
}
