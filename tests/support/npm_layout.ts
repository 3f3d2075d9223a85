/**
 * Where things are in the npm package that `scripts/build_npm.ts` makes:
 * one home for the paths the build writes and the tests and benchmarks
 * run.
 *
 * @module
 */

/** Name of the npm package. */
export const PACKAGE_NAME = "pod-broker";

/**
 * Where the bundled server goes, in `esm/`: one folder, flat, one level
 * down, so that a module's `../client/mod.js` (src/bundler/client_url.ts)
 * is the client wherever the bundler put that module.
 */
export const SERVER_DIR = "server";

/** The npm entry point in `src/`, standing in for `mod.ts`. */
export const NODE_ENTRY = "mod_node.ts";

/** The npm entry point's path in the package: the `bin` and the main export. */
export const NODE_BIN = `esm/${SERVER_DIR}/${
  NODE_ENTRY.replace(/\.ts$/, ".js")
}`;
