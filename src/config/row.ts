/**
 * What one row of the options table is ({@linkcode OptionSpec} for an
 * option of `createSignalServer`, {@linkcode CliFlagSpec} for a flag only
 * the CLI has), and how a row reads in `--help` and the docs.
 *
 * @module
 */

import type { KindRow, OptionKind } from "./kinds.ts";

/** One row of {@linkcode OPTIONS}: an option of `createSignalServer`. */
export interface OptionSpec extends KindRow {
  /** Key path in the options object, such as `signaling.maxFrameBytes`. */
  readonly key: string;
  /** The CLI flag without dashes, or null when there is none. */
  readonly flag: string | null;
  /** Placeholder of the flag's value in `--help` (a choice lists its values). */
  readonly arg?: string;
  /** Whether the flag may be repeated (its values are collected). */
  readonly repeatable?: boolean;
  /** Environment variable read when the flag is not given. */
  readonly env?: string;
  /** How the value is checked, and how the flag's text is read. */
  readonly kind: OptionKind;
  /** The default, or undefined when the option has none. */
  readonly default?: unknown;
  /** How the default reads in docs, when it is not the value itself. */
  readonly defaultText?: string;
  /**
   * Whether the option must be given. In a group (`turn`), it must be given
   * with the group, and the group as a whole is then optional (null).
   */
  readonly required?: boolean;
  /** The reason given when a required option is missing. */
  readonly missing?: string;
  /** The other option that reason ends by naming ("is required with" it). */
  readonly missingWith?: string;
  /** Resolved to null when not given (else left out). */
  readonly orNull?: true;
  /** In a group (`metrics`): the group is null unless this option is given. */
  readonly switch?: true;
  /** One line of help. */
  readonly help: string;
}

/** A row for a flag that only the CLI has (it chooses the registry or bus). */
export interface CliFlagSpec extends Omit<OptionSpec, "key" | "flag"> {
  /** No option key: the CLI reads the value itself. */
  readonly key: null;
  /** The flag without dashes. */
  readonly flag: string;
}

/** A row of {@linkcode TABLE}. */
export type TableRow = OptionSpec | CliFlagSpec;

/**
 * The placeholder of a row's flag value in `--help` and the docs: its
 * `arg`, or its choices; none for a switch.
 */
export function argOf(row: TableRow): string | undefined {
  return row.arg ?? row.choices?.join("|");
}

/**
 * How a row's default reads, written once for `--help` and the docs: the
 * `defaultText`, or the value (with MiB or KiB for a byte count).
 *
 * @returns The text, or undefined when there is no default to show.
 */
export function defaultLabel(row: TableRow): string | undefined {
  if (row.defaultText !== undefined) return row.defaultText;
  const value = row.default;
  if (value === undefined) return undefined;
  if (typeof value === "number" && /bytes/i.test(row.flag ?? row.key ?? "")) {
    for (const [unit, size] of [["MiB", 1 << 20], ["KiB", 1 << 10]] as const) {
      if (value >= size && value % size === 0) {
        return `${value} = ${value / size} ${unit}`;
      }
    }
  }
  return String(value);
}

/**
 * Whether `row` is an option of `createSignalServer` (not CLI-only).
 *
 * @param row A row of the options table.
 * @returns Whether it has a key.
 */
export function isOption(row: TableRow): row is OptionSpec {
  return row.key !== null;
}
