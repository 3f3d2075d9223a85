/**
 * The `serve` command's flags, all derived from the options table
 * (`config/table.ts`): the flag specs, the `--help` lines,
 * and the conversion of flag text into `createSignalServer` options by each
 * kind's `fromText`. The CLI-only rows (`--registry`, `--bus` and their
 * locations) are read here too, with {@linkcode openBus}.
 *
 * @module
 */

import { hostEnv } from "../_util/host.ts";
import type { FlagSpec, FlagSpecs } from "./flags.ts";
import { jsonLogger } from "../_util/log.ts";
import {
  argOf,
  defaultLabel,
  isOption,
  KINDS,
  type OptionError,
  type OptionRowsOf,
  type OptionsFrom,
  type OptionSpec,
  OptionTextError,
  TABLE,
  type TableRow,
} from "../config/options.ts";
import type { Bus } from "../signaling/bus/mod.ts";
import { parse } from "./io.ts";
import { suggest } from "./suggest.ts";
import { UsageError } from "./usage_error.ts";
import { missingPermission } from "./permission.ts";

/** Flag values as `parseFlags` returns them. */
export type FlagValues = Record<
  string,
  string | boolean | string[] | undefined
>;

/** The flags every command has besides the table's. */
const STANDARD_FLAGS = {
  help: { type: "boolean", short: "h" },
  version: { type: "boolean", short: "V" },
} as const satisfies FlagSpecs;

/** The flags of `serve`, one per row with a flag. */
export function serveFlagSpecs(
  table: readonly TableRow[] = TABLE,
): FlagSpecs {
  const config: Record<string, FlagSpec> = { ...STANDARD_FLAGS };
  for (const row of table) {
    if (row.flag === null) continue;
    config[row.flag] = KINDS[row.kind].flagType === "boolean"
      ? { type: "boolean" }
      : { type: "string", multiple: row.repeatable ?? false };
  }
  return config;
}

/**
 * Parses the arguments of `serve`. A flag that is not known is refused with
 * the nearest known one ("did you mean --port?"), and a long word after a
 * single dash (`-port`) is refused rather than read as `-p -o -r -t`.
 *
 * @param args The arguments after the command.
 * @param table The options table.
 * @returns The flag values.
 * @throws {UsageError} For an unknown or malformed flag.
 */
export function parseServeArgs(
  args: readonly string[],
  table: readonly TableRow[] = TABLE,
): FlagValues {
  const config = serveFlagSpecs(table);
  const known = Object.keys(config);
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    if (arg === "--") break;
    if (arg.startsWith("--")) {
      const name = arg.slice(2).split("=", 1)[0]!;
      const spec = config[name];
      if (spec === undefined) {
        const near = suggest(name, known);
        throw new UsageError(
          `Unknown option '--${name}'${
            near ? `: did you mean --${near}?` : ""
          }`,
        );
      }
      // The value after a flag that takes one is not a flag.
      if (spec.type === "string" && !arg.includes("=")) i++;
    } else if (/^-[^-\d]./.test(arg) && !isShortCluster(arg, config)) {
      const near = suggest(arg.slice(1).split("=", 1)[0]!, known);
      throw new UsageError(
        `Unknown option '${arg}': a long flag takes two dashes${
          near ? `; did you mean --${near}?` : ""
        }`,
      );
    }
  }
  return parse([...args], config, false).values as FlagValues;
}

/** Whether `arg` is short flags written together, such as `-hV`. */
function isShortCluster(arg: string, config: FlagSpecs): boolean {
  const shorts = new Set(Object.values(config).map((spec) => spec.short));
  return [...arg.slice(1)].every((letter) => shorts.has(letter));
}

/** The `Serve options:` lines of `--help`: each flag, its help, its default. */
export function serveHelp(table: readonly TableRow[] = TABLE): string {
  const rows: [string, string][] = [];
  for (const row of table) {
    if (row.flag === null) continue;
    const arg = argOf(row);
    const extras = [
      row.repeatable ? "repeatable" : "",
      row.env ? `or env ${row.env}` : "",
      row.default === undefined || row.kind === "boolean"
        ? ""
        : `default ${defaultLabel(row)}`,
    ].filter(Boolean);
    rows.push([
      `--${row.flag}${arg ? ` ${arg}` : ""}`,
      `${row.help}${extras.length ? ` (${extras.join("; ")})` : ""}`,
    ]);
  }
  rows.push(["-h, --help", "show this help"]);
  rows.push(["-V, --version", "show the version"]);
  const width = Math.max(...rows.map(([name]) => name.length)) + 2;
  return rows.map(([name, help]) => `  ${name.padEnd(width)}${help}`).join(
    "\n",
  );
}

/** The values of the CLI-only flags, with their defaults. */
export type CliValues<Rows extends readonly TableRow[] = typeof TABLE> = {
  [R in Extract<Rows[number], { readonly key: null }> as R["flag"]]: R extends
    { readonly default: unknown } ? string : string | undefined;
};

/** Options read from flags, and the text each came from (for messages). */
export interface ServeOptionsFromFlags<
  Rows extends readonly TableRow[] = typeof TABLE,
> {
  /** The options, without `registry`. */
  options: Omit<OptionsFrom<OptionRowsOf<Rows>>, "registry">;
  /** The flag text each option key came from. */
  given: Map<string, string>;
  /** The CLI-only flags' text, with their defaults. */
  cli: CliValues<Rows>;
}

/**
 * Turns flag values into options with each kind's `fromText` (a deny list
 * or a secret file is read here). Ranges and the rest are checked by
 * `resolveOptions`.
 *
 * @param values What `parseFlags` returned.
 * @param env The environment (for secrets given by variable).
 * @param table The options table.
 * @returns The options, the text they came from, and the CLI-only values.
 * @throws {UsageError} For text that cannot be an option's value.
 */
export async function optionsFromFlags<
  const Rows extends readonly TableRow[] = typeof TABLE,
>(
  values: FlagValues,
  env: Record<string, string | undefined> = hostEnv(),
  table: Rows = TABLE as unknown as Rows,
): Promise<ServeOptionsFromFlags<Rows>> {
  const options: Record<string, unknown> = {};
  const given = new Map<string, string>();
  const cli: Record<string, unknown> = {};
  for (const row of table) {
    if (row.flag === null) continue;
    const raw = values[row.flag];
    if (!isOption(row)) {
      cli[row.flag] = raw === undefined ? row.default : raw;
      continue;
    }
    let value: unknown;
    if (raw === undefined || raw === false) {
      // A secret from the environment counts only with the option it
      // belongs to, so a variable set for another tool changes nothing
      // (and the environment is not read without need).
      if (row.env === undefined || !groupGiven(table, values, row)) continue;
      const fromEnv = env[row.env];
      if (fromEnv === undefined) continue;
      value = fromEnv.trim();
      given.set(row.key, `$${row.env}`);
    } else {
      given.set(row.key, Array.isArray(raw) ? raw.join(" ") : String(raw));
      value = Array.isArray(raw)
        ? await Promise.all(raw.map((text) => fromText(row, text)))
        : await fromText(row, String(raw));
    }
    setAt(options, row.key, value);
  }
  return { options, given, cli } as ServeOptionsFromFlags<Rows>;
}

/** One flag text through its kind's `fromText`, as a one-line usage error. */
async function fromText(row: OptionSpec, text: string): Promise<unknown> {
  const convert = KINDS[row.kind].fromText;
  if (convert === null) return text;
  try {
    return await convert(text, row, (reason, verb) => {
      throw new OptionTextError(row.flag!, text, reason, verb);
    });
  } catch (error) {
    if (error instanceof OptionTextError) throw new UsageError(error.message);
    throw error;
  }
}

function groupGiven(
  table: readonly TableRow[],
  values: FlagValues,
  row: OptionSpec,
): boolean {
  const group = row.key.split(".")[0];
  return table.some((other) =>
    other !== row && other.flag !== null && isOption(other) &&
    other.key.split(".")[0] === group && values[other.flag] !== undefined
  );
}

function setAt(object: Record<string, unknown>, key: string, value: unknown) {
  const [head, tail] = key.split(".") as [string, string | undefined];
  if (tail === undefined) {
    object[head] = value;
    return;
  }
  const group = (object[head] ??= {}) as Record<string, unknown>;
  group[tail] = value;
}

/**
 * Opens the signaling bus that `--bus` names: none for `local` (the
 * default), a `RedisBus` for `redis` (its module, and the Redis client, are
 * loaded only then). The caller closes it after the server.
 *
 * @param values What `parseFlags` returned.
 * @param env The environment (`REDIS_URL`).
 * @returns The bus, or undefined for the in-process default.
 * @throws {UsageError} For a bad choice, a missing or bad URL, or a Redis
 * that cannot be reached (the URL, which may hold a password, is not named).
 */
export async function openBus(
  values: FlagValues,
  env: Record<string, string | undefined> = hostEnv(),
): Promise<Bus | undefined> {
  const busRow = cliRow("bus");
  const urlRow = cliRow("redis-url");
  const kind = (values.bus as string | undefined) ?? busRow.default;
  const given = values["redis-url"] as string | undefined;
  if (kind === "local") {
    if (given !== undefined) {
      throw new UsageError("--redis-url needs --bus redis");
    }
    return undefined;
  }
  if (kind !== "redis") {
    throw new UsageError(
      `Cannot use --bus '${kind}': expected ${busRow.choices.join(" or ")}`,
    );
  }
  const url = given ?? env[urlRow.env];
  if (url === undefined || url === "") {
    throw new UsageError(
      `--bus redis needs --redis-url URL or env ${urlRow.env}`,
    );
  }
  const { createRedisBus, RedisUrlError } = await import(
    "../signaling/bus/redis.ts"
  );
  try {
    return await createRedisBus({ url, logger: jsonLogger });
  } catch (error) {
    if (missingPermission(error) !== undefined) throw error; // runCli says which
    throw new UsageError(
      error instanceof RedisUrlError
        ? `Cannot use --redis-url: ${error.reason}`
        : (error as Error).message,
    );
  }
}

/** The CLI-only row of `flag`. */
function cliRow<
  F extends Extract<(typeof TABLE)[number], { key: null }>["flag"],
>(
  flag: F,
): Extract<(typeof TABLE)[number], { flag: F }> {
  return TABLE.find((row) => row.flag === flag) as Extract<
    (typeof TABLE)[number],
    { flag: F }
  >;
}

/**
 * The line for a port another program listens on, the same for `serve`
 * (on either runtime) and `dev`: it names the port and the flag to change.
 *
 * @param port The port.
 * @param flag The flag that sets it, without dashes.
 * @returns The message.
 */
export function portInUseLine(port: number | string, flag: string): string {
  return `Cannot start: port ${port} is in use by another program: choose another with --${flag}`;
}

/**
 * The one-line CLI message for a bad option: it names the flag, and the
 * text given (never a secret's).
 *
 * @param error The option error from `resolveOptions`.
 * @param given The flag text of each option key.
 * @param table The options table.
 * @returns The message.
 */
export function describeOptionError(
  error: OptionError,
  given: ReadonlyMap<string, string>,
  table: readonly TableRow[] = TABLE,
): string {
  const flagOf = (key: string) =>
    table.find((row) => row.key === key && row.flag !== null)?.flag;
  const flag = flagOf(error.key);
  if (flag === undefined) return error.message;
  const reason = error.reasonNaming((key) => {
    const other = flagOf(key);
    return other ? `--${other}` : key;
  });
  const row = table.find((row) => row.key === error.key)!;
  const text = given.get(error.key);
  if (/^is in use\b/.test(error.reason)) {
    return portInUseLine(text ?? String(row.default), `${flag}`);
  }
  if (text === undefined) {
    const source = row.env ? `--${flag} or env ${row.env}` : `--${flag}`;
    return `Cannot start: ${source} ${reason}`;
  }
  if (row.kind === "secret") return `Cannot use --${flag}: ${reason}`;
  return `Cannot use --${flag} '${text}': ${reason}`;
}
