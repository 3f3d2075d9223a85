/**
 * The options table's rows, checked against the row types, and the two
 * lists made from them: the options of `createSignalServer` and the flags
 * only the CLI has.
 *
 * @module
 */

import { TABLE } from "./table.ts";
import {
  type CliFlagSpec,
  isOption,
  type OptionSpec,
  type TableRow,
} from "./row.ts";

// The table's rows are checked against the row types here (`satisfies`
// would hide the table's type from declaration emit).
const ROWS: readonly TableRow[] = TABLE;

// And no row has a field the row types do not name (a misspelt `requird`).
type RowField = (typeof TABLE)[number] extends infer R
  ? R extends unknown ? keyof R : never
  : never;
const _noStrayField: [Exclude<RowField, keyof OptionSpec>] extends [never]
  ? true
  : false = true;

/** Every option of `createSignalServer`, once: the rows of the table with a key. */
export const OPTIONS: readonly OptionSpec[] = ROWS.filter(isOption);

/** The flags that only the CLI has: they choose and open the registry and the bus. */
export const CLI_ONLY_FLAGS: readonly CliFlagSpec[] = ROWS.filter((
  row,
): row is CliFlagSpec => row.key === null);
