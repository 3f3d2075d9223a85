/**
 * `deno task docs`: writes the options table of docs/operators/options.md from the options table
 * in `src/config/table.ts` (the rendering is `tests/support/options_doc.ts`,
 * which `tests/unit/options_test.ts` also uses to fail when the page
 * drifts).
 *
 * @module
 */

import { withOptionsTable } from "../tests/support/options_doc.ts";

const PAGE = new URL("../docs/operators/options.md", import.meta.url);

if (import.meta.main) {
  const text = await Deno.readTextFile(PAGE);
  await Deno.writeTextFile(PAGE, withOptionsTable(text));
  console.log("docs/operators/options.md: options table written");
}
