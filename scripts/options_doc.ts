/**
 * `deno task docs`: writes the README's options table from the options table
 * in `src/config/table.ts` (the rendering is `tests/support/options_doc.ts`,
 * which `tests/unit/options_test.ts` also uses to fail when the README
 * drifts).
 *
 * @module
 */

import { withOptionsTable } from "../tests/support/options_doc.ts";

const README = new URL("../README.md", import.meta.url);

if (import.meta.main) {
  const text = await Deno.readTextFile(README);
  await Deno.writeTextFile(README, withOptionsTable(text));
  console.log("README.md: options table written");
}
