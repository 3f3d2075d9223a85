/**
 * Types derived from the options table: what `resolveOptions` returns
 * ({@linkcode ResolvedFrom}) and what a caller may pass
 * ({@linkcode OptionsFrom}), for any table. A row is read as:
 * - `default`, `required` or `switch`: the resolved value is always there;
 * - `orNull`: the resolved value is null when not given;
 * - otherwise: the resolved key is left out when not given.
 * A group (`turn.*`) with a `required` or `switch` row is null unless given.
 *
 * @module
 */

import type { KindValue, OptionKind } from "./kinds.ts";
import type { TableRow } from "./table.ts";

/** An object type with its intersections merged, for readable hovers. */
export type Simplify<T> = { [K in keyof T]: T[K] } & unknown;

/** The rows of a table that are options of `createSignalServer`. */
export type OptionRowsOf<Rows extends readonly TableRow[]> = Extract<
  Rows[number],
  { readonly key: string }
>;

/**
 * The value type of one row: its kind's, or the union of its choices (an
 * array of them for a `choiceList`).
 */
export type ValueOf<R> = R extends {
  readonly kind: "choice";
  readonly choices: readonly (infer C extends string)[];
} ? C
  : R extends {
    readonly kind: "choiceList";
    readonly choices: readonly (infer C extends string)[];
  } ? C[]
  : R extends { readonly kind: infer K extends OptionKind } ? KindValue<K>
  : never;

/** Whether a row always has a value once resolved (a default, required, or a switch). */
export type IsAlways<R> = R extends
  | { readonly default: unknown }
  | { readonly required: true }
  | { readonly switch: true } ? true
  : false;

/** Whether a resolved row's member may be absent. */
export type IsOptional<R> = IsAlways<R> extends true ? false
  : R extends { readonly orNull: true } ? false
  : true;

/** The member name of a row under the prefix `P` ("" or "group."). */
export type MemberName<R, P extends string> = R extends
  { readonly key: `${P}${infer N}` }
  ? N extends `${string}.${string}` ? never : N
  : never;

/** The resolved value type of one row (null when it may be unset). */
export type Resolved<R> = IsAlways<R> extends true ? ValueOf<R>
  : ValueOf<R> | null;

/** The resolved members of the rows under the prefix `P`. */
export type Fields<Rows, P extends string> = Simplify<
  & {
    [R in Rows as IsOptional<R> extends true ? never : MemberName<R, P>]:
      Resolved<R>;
  }
  & {
    [R in Rows as IsOptional<R> extends true ? MemberName<R, P> : never]?:
      ValueOf<R>;
  }
>;

/** The names of the groups (`signaling`, `turn`, ...) among the rows. */
export type GroupName<Rows> = Rows extends
  { readonly key: `${infer G}.${string}` } ? G
  : never;

/** The rows of group `G`. */
export type GroupRows<Rows, G extends string> = Extract<
  Rows,
  { readonly key: `${G}.${string}` }
>;

/** Whether a group is null unless given (it has a required or switch row). */
export type Nullable<Rows> = [
  Extract<Rows, { readonly required: true } | { readonly switch: true }>,
] extends [never] ? false
  : true;

/** The options with every default applied, for the option rows `Rows`. */
export type ResolvedFrom<Rows> = Simplify<
  & Fields<Rows, "">
  & {
    [G in GroupName<Rows>]: Nullable<GroupRows<Rows, G>> extends true
      ? Fields<GroupRows<Rows, G>, `${G}.`> | null
      : Fields<GroupRows<Rows, G>, `${G}.`>;
  }
>;

/** Whether a caller must give the row. */
export type IsRequired<R> = R extends { readonly required: true } ? true
  : false;

/** The members a caller may pass for the rows under the prefix `P`. */
export type InputFields<Rows, P extends string> = Simplify<
  & {
    [R in Rows as IsRequired<R> extends true ? MemberName<R, P> : never]:
      ValueOf<R>;
  }
  & {
    [R in Rows as IsRequired<R> extends true ? never : MemberName<R, P>]?:
      ValueOf<R>;
  }
>;

/** The options a caller may pass, for the option rows `Rows`. */
export type OptionsFrom<Rows> = Simplify<
  & InputFields<Rows, "">
  & { [G in GroupName<Rows>]?: InputFields<GroupRows<Rows, G>, `${G}.`> }
>;
