/** The broker's version; kept equal to `deno.json` by a test. */
export const VERSION = "0.1.0";
