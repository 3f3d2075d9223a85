/**
 * The configuration layer's entry: the options table (`table.ts`), its
 * kinds (`kinds.ts`), the types derived from it (`derive.ts`), resolution
 * (`resolve.ts`) and its errors (`errors.ts`). Adding an option is one row
 * in `table.ts` plus its use.
 *
 * @module
 */

export {
  argOf,
  type CliFlagSpec,
  defaultLabel,
  type OptionKind,
  type OptionSpec,
  TABLE,
  type TableRow,
} from "./table.ts";
export { isOption } from "./row.ts";
export { CLI_ONLY_FLAGS, OPTIONS } from "./table_lists.ts";
export { type Kind, KINDS, type KindValue } from "./kinds.ts";
export { OptionError, OptionTextError } from "./errors.ts";
export type {
  OptionRowsOf,
  OptionsFrom,
  ResolvedFrom,
  ValueOf,
} from "./derive.ts";
export {
  DEFAULT_MAX_BLOB_BYTES,
  DEFAULT_SIGNALING,
  defaultOf,
  type ResolvedOptions,
  type ResolvedSignalingOptions,
  type ResolvedTurnOptions,
  resolveOptions,
  resolveWith,
} from "./resolve.ts";
