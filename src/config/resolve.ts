/**
 * Option resolution: checks what a caller passed against the options table
 * and fills in the defaults. The rules are the table's (see `derive.ts` for
 * how a row reads); nothing here names an option.
 *
 * @module
 */

import { createIceServerSource, type IceServer } from "../signaling/ice.ts";
import { OptionError } from "./errors.ts";
import { scriptPolicyConflict } from "../serving/pod_headers.ts";
import { podDomainListingConflict } from "../serving/pod_origin.ts";
import { KINDS } from "./kinds.ts";
import type { OptionRowsOf, ResolvedFrom } from "./derive.ts";
import { type OptionSpec, TABLE, type TableRow } from "./table.ts";
import { isOption } from "./row.ts";
import type { SignalingOptions, SignalServerOptions } from "./types.ts";

/** Server options with every default applied. */
export type ResolvedOptions =
  & ResolvedFrom<OptionRowsOf<typeof TABLE>>
  & {
    /** The ICE servers of one peer: static entries plus minted TURN. */
    iceServersFor: (peerId: string) => IceServer[];
  };

/** Signaling options with every default applied. */
export type ResolvedSignalingOptions = ResolvedOptions["signaling"];

/** TURN with every default applied. */
export type ResolvedTurnOptions = NonNullable<ResolvedOptions["turn"]>;

/**
 * Checks `options` against the option rows of `table` and applies their
 * defaults: the values given are checked first, in table order; then each
 * group is decided (null, or an object), and each missing value is filled
 * in (its default, null, or left out) or refused when required.
 *
 * @param table The table (a test may pass a copy with one more row).
 * @param options What the caller passed.
 * @returns The resolved options, typed from the table.
 * @throws {OptionError} (a `TypeError`) naming the first unknown, missing or
 * bad option.
 */
export function resolveWith<const Table extends readonly TableRow[]>(
  table: Table,
  options: object,
): ResolvedFrom<OptionRowsOf<Table>> {
  if (typeof options !== "object" || options === null) {
    throw new TypeError("Cannot start the broker: options must be an object");
  }
  const given = options as Record<string, unknown>;
  const rows = table.filter(isOption);
  const groups = new Set(rows.flatMap((row) => groupOf(row.key) ?? []));
  checkKeys(rows, groups, given);
  const checked = new Map<OptionSpec, unknown>();
  for (const row of rows) {
    const value = valueAt(given, row.key);
    if (value !== undefined) checked.set(row, checkRow(row, value));
  }
  const out: Record<string, unknown> = {};
  for (const group of groups) {
    out[group] = groupGiven(rows, group, given) ? {} : null;
  }
  for (const row of rows) {
    const group = groupOf(row.key);
    const target = group === undefined ? out : out[group];
    if (target === null || typeof target !== "object") continue;
    const name = group === undefined
      ? row.key
      : row.key.slice(group.length + 1);
    const value = checked.has(row) ? checked.get(row) : missing(row);
    if (value !== undefined) (target as Record<string, unknown>)[name] = value;
  }
  return out as ResolvedFrom<OptionRowsOf<Table>>;
}

/**
 * Checks `options` and applies the defaults.
 *
 * @param options What the caller passed.
 * @returns The complete options.
 * @throws {OptionError} (a `TypeError`) naming the first unknown, missing or
 * out-of-range option.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { MemoryRegistry } from "../core.ts";
 * import { resolveOptions } from "./resolve.ts";
 *
 * const resolved = resolveOptions({ registry: new MemoryRegistry() });
 * assert.equal(resolved.port, 8080);
 * assert.throws(() => resolveOptions({ registry: new MemoryRegistry(), port: -1 }), TypeError);
 * ```
 */
export function resolveOptions(options: SignalServerOptions): ResolvedOptions {
  const resolved = resolveWith(TABLE, options);
  // Options that are valid alone but not together.
  const scripts = scriptPolicyConflict(resolved.podHeaderOptions);
  if (scripts !== null) throw new OptionError("podHeaderOptions.csp", scripts);
  const listing = podDomainListingConflict(
    resolved.podDomain,
    resolved.podDomainPsl,
  );
  if (listing !== null) throw new OptionError("podDomainPsl", listing);
  return {
    ...resolved,
    iceServersFor: createIceServerSource(resolved.iceServers, resolved.turn),
  };
}

/**
 * The default of the option at `key`.
 *
 * @param key A key path from the options table.
 * @returns Its default value.
 * @throws {RangeError} For a key with no row or no default.
 */
export function defaultOf(key: string): unknown {
  const row = TABLE.find((row: TableRow) => row.key === key);
  if (row === undefined || !("default" in row)) {
    throw new RangeError(`Cannot find a default for option '${key}'`);
  }
  return row.default;
}

export { DEFAULT_MAX_BLOB_BYTES } from "../pod/limits.ts";

/** Defaults of the signaling limits, from the options table. */
export const DEFAULT_SIGNALING: Readonly<
  Required<Omit<SignalingOptions, "allowedOrigins">>
> = Object.freeze(
  Object.fromEntries(
    TABLE.flatMap((row: TableRow) =>
      row.key?.startsWith("signaling.") && row.default !== undefined
        ? [[row.key.slice("signaling.".length), row.default]]
        : []
    ),
  ) as Omit<ResolvedSignalingOptions, "allowedOrigins">,
);

function checkRow(row: OptionSpec, value: unknown): unknown {
  return KINDS[row.kind].check(value, row, (reason) => {
    throw new OptionError(row.key, reason);
  });
}

/** The value of a row that was not given: its default, null, or nothing. */
function missing(row: OptionSpec): unknown {
  if (row.required) {
    if (row.missing !== undefined) {
      throw new OptionError(row.key, row.missing, row.missingWith);
    }
    return checkRow(row, undefined);
  }
  if (row.default !== undefined) {
    return Array.isArray(row.default) ? [...row.default] : row.default;
  }
  return row.orNull ? null : undefined;
}

function groupOf(key: string): string | undefined {
  const dot = key.indexOf(".");
  return dot === -1 ? undefined : key.slice(0, dot);
}

/**
 * Whether a group resolves to an object: always, unless it has a `switch`
 * row (then only with that option) or a required row (then only when given).
 */
function groupGiven(
  rows: readonly OptionSpec[],
  group: string,
  given: Record<string, unknown>,
): boolean {
  const members = rows.filter((row) => groupOf(row.key) === group);
  const switchRow = members.find((row) => row.switch);
  if (switchRow) return valueAt(given, switchRow.key) !== undefined;
  if (members.some((row) => row.required)) return given[group] !== undefined;
  return true;
}

/** Refuses keys that no row names, at the top level and in each group. */
function checkKeys(
  rows: readonly OptionSpec[],
  groups: ReadonlySet<string>,
  options: Record<string, unknown>,
): void {
  const allowed = new Set(rows.map((row) => row.key));
  for (const key of Object.keys(options)) {
    if (groups.has(key)) {
      const group = options[key];
      if (group === undefined) continue;
      if (typeof group !== "object" || group === null || Array.isArray(group)) {
        throw new OptionError(key, "must be an object");
      }
      for (const inner of Object.keys(group)) {
        if (!allowed.has(`${key}.${inner}`)) unknown(`${key}.${inner}`);
      }
    } else if (!allowed.has(key)) {
      unknown(key);
    }
  }
}

function unknown(key: string): never {
  throw new TypeError(`Cannot start the broker: unknown option '${key}'`);
}

function valueAt(object: Record<string, unknown>, key: string): unknown {
  const group = groupOf(key);
  if (group === undefined) return object[key];
  const value = object[group] as Record<string, unknown> | undefined;
  return value?.[key.slice(group.length + 1)];
}
