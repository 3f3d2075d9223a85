// Bundles the browser client (src/client/mod.ts) with esbuild, minified, as
// the size test measures it and as the browser tests inline it.
import * as esbuild from "esbuild";

/** The client's entry point. */
export const CLIENT_ENTRY: string =
  new URL("../../src/client/mod.ts", import.meta.url).pathname;

/**
 * The minified bundle: an ES module, or an IIFE that sets `PodClient`.
 *
 * @param format `esm` or `iife`.
 * @returns The code.
 */
export async function bundleClient(format: "esm" | "iife"): Promise<string> {
  try {
    const result = await esbuild.build({
      entryPoints: [CLIENT_ENTRY],
      bundle: true,
      minify: true,
      format,
      ...(format === "iife" ? { globalName: "PodClient" } : {}),
      target: "es2022",
      write: false,
      logLevel: "silent",
    });
    return result.outputFiles[0]!.text;
  } finally {
    await esbuild.stop();
  }
}
