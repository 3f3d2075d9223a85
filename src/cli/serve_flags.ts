/**
 * The `serve` command's flags, derived from the options table: the
 * `parseArgs` configuration, the `--help` lines, and the conversion of flag
 * text into `createSignalServer` options. The CLI-only flags (`--registry`,
 * `--data-dir`, `--database-url`, `--bus`, `--redis-url`) are rows here too, with
 * {@linkcode openBus}.
 *
 * @module
 */

import { readFileSync } from "node:fs";
import process from "node:process";
import type { ParseArgsConfig } from "node:util";
import { isIceUrl } from "../signaling/ice.ts";
import { jsonLogger } from "../_util/log.ts";
import {
  type OptionError,
  OPTIONS,
  type OptionSpec,
} from "../config/options.ts";
import type { Bus } from "../signaling/bus/mod.ts";
import type { SignalServerOptions } from "../config/types.ts";
import { UsageError } from "./usage_error.ts";

/** A flag of `serve` that is not an option of `createSignalServer`. */
interface CliOnlyFlag {
  flag: string;
  arg: string;
  help: string;
}

/** Flags that only the CLI has: they choose and open the registry and the bus. */
export const CLI_ONLY_FLAGS: readonly CliOnlyFlag[] = [
  {
    flag: "registry",
    arg: "memory|sqlite|postgres",
    help: "where pods are kept (default memory)",
  },
  {
    flag: "data-dir",
    arg: "PATH",
    help: "data directory, required with sqlite",
  },
  {
    flag: "database-url",
    arg: "URL",
    help:
      "PostgreSQL of --registry postgres, postgres:// (or env DATABASE_URL, which keeps a password out of the process list)",
  },
  {
    flag: "bus",
    arg: "local|redis",
    help:
      "signaling bus between brokers (default local: sessions stay in this process)",
  },
  {
    flag: "redis-url",
    arg: "URL",
    help:
      "Redis of --bus redis, redis:// or rediss:// (or env REDIS_URL, which keeps a password out of the process list)",
  },
];

/**
 * Opens the signaling bus that `--bus` names: none for `local` (the
 * default), a `RedisBus` for `redis` (its module, and the Redis client, are
 * loaded only then). The caller closes it after the server.
 *
 * @param values What `parseArgs` returned.
 * @param env The environment (`REDIS_URL`).
 * @returns The bus, or undefined for the in-process default.
 * @throws {UsageError} For a bad choice, a missing or bad URL, or a Redis
 * that cannot be reached (the URL, which may hold a password, is not named).
 */
export async function openBus(
  values: FlagValues,
  env: Record<string, string | undefined> = process.env,
): Promise<Bus | undefined> {
  const kind = (values.bus as string | undefined) ?? "local";
  const given = values["redis-url"] as string | undefined;
  if (kind === "local") {
    if (given !== undefined) {
      throw new UsageError("--redis-url needs --bus redis");
    }
    return undefined;
  }
  if (kind !== "redis") {
    throw new UsageError(`Cannot use --bus '${kind}': expected local or redis`);
  }
  const url = given ?? env.REDIS_URL;
  if (url === undefined || url === "") {
    throw new UsageError("--bus redis needs --redis-url URL or env REDIS_URL");
  }
  const { createRedisBus } = await import("../signaling/bus/redis.ts");
  try {
    return await createRedisBus({ url, logger: jsonLogger });
  } catch (error) {
    throw new UsageError(
      `${(error as Error).message.replace("the Redis URL", "--redis-url")}`,
    );
  }
}

type FlagConfig = NonNullable<ParseArgsConfig["options"]>;

/** The `parseArgs` options of `serve`. */
export function serveFlagConfig(): FlagConfig {
  const config: FlagConfig = {
    help: { type: "boolean", short: "h" },
    version: { type: "boolean", short: "V" },
  };
  for (const { flag } of CLI_ONLY_FLAGS) config[flag] = { type: "string" };
  for (const spec of OPTIONS) {
    if (spec.flag === null) continue;
    config[spec.flag] = spec.kind === "boolean"
      ? { type: "boolean" }
      : { type: "string", multiple: spec.repeatable ?? false };
  }
  return config;
}

/** The `Serve options:` lines of `--help`. */
export function serveHelp(): string {
  const rows: [string, string][] = CLI_ONLY_FLAGS.map((
    f,
  ) => [`--${f.flag} ${f.arg}`, f.help]);
  for (const spec of OPTIONS) {
    if (spec.flag === null) continue;
    const name = `--${spec.flag}${spec.arg ? ` ${spec.arg}` : ""}`;
    const extras = [
      spec.repeatable ? "repeatable" : "",
      spec.env ? `or env ${spec.env}` : "",
      defaultLabel(spec),
    ].filter(Boolean);
    rows.push([
      name,
      `${spec.help}${extras.length ? ` (${extras.join("; ")})` : ""}`,
    ]);
  }
  rows.push(["-h, --help", "show this help"]);
  rows.push(["-V, --version", "show the version"]);
  const width = Math.max(...rows.map(([name]) => name.length)) + 2;
  return rows.map(([name, help]) => `  ${name.padEnd(width)}${help}`).join(
    "\n",
  );
}

function defaultLabel(spec: OptionSpec): string {
  if (spec.default === undefined || spec.kind === "boolean") return "";
  if (Array.isArray(spec.default)) return "";
  return `default ${spec.default}`;
}

/** Flag values as `parseArgs` returns them. */
export type FlagValues = Record<
  string,
  string | boolean | string[] | undefined
>;

/** Options read from flags, and the text each came from (for messages). */
export interface ServeOptionsFromFlags {
  /** The options, without `registry`. */
  options: Omit<SignalServerOptions, "registry">;
  /** The flag text each option key came from. */
  given: Map<string, string>;
}

/**
 * Turns flag values into options. Only the shape of the text is checked
 * here (an integer is digits); ranges and the rest are `resolveOptions`'s.
 *
 * @param values What `parseArgs` returned.
 * @param env The environment (for secrets given by variable).
 * @returns The options and the text they came from.
 * @throws {UsageError} For text that cannot be an option's value.
 */
export function optionsFromFlags(
  values: FlagValues,
  env: Record<string, string | undefined> = process.env,
): ServeOptionsFromFlags {
  const options: Record<string, unknown> = {};
  const given = new Map<string, string>();
  for (const spec of OPTIONS) {
    if (spec.flag === null) continue;
    const raw = values[spec.flag];
    let value: unknown;
    if (raw === undefined || raw === false) {
      // A secret from the environment counts only with the option it
      // belongs to, so a variable set for another tool changes nothing
      // (and the environment is not read without need).
      if (spec.env === undefined || !groupGiven(values, spec)) continue;
      const fromEnv = env[spec.env];
      if (fromEnv === undefined) continue;
      value = fromEnv.trim();
      given.set(spec.key, `$${spec.env}`);
    } else {
      given.set(spec.key, Array.isArray(raw) ? raw.join(" ") : String(raw));
      value = fromText(spec, raw);
    }
    setAt(options, spec.key, value);
  }
  return { options, given };
}

function groupGiven(values: FlagValues, spec: OptionSpec): boolean {
  const group = spec.key.split(".")[0];
  return OPTIONS.some((other) =>
    other !== spec && other.flag !== null &&
    other.key.split(".")[0] === group && values[other.flag] !== undefined
  );
}

function fromText(spec: OptionSpec, raw: string | boolean | string[]): unknown {
  const flag = `--${spec.flag}`;
  switch (spec.kind) {
    case "boolean":
      return true;
    case "integer": {
      const text = String(raw);
      if (!/^\d{1,16}$/.test(text)) {
        throw new UsageError(
          `Cannot use ${flag} '${text}': expected an integer from ${
            spec.min ?? 0
          } to ${spec.max ?? Number.MAX_SAFE_INTEGER}`,
        );
      }
      return Number(text);
    }
    case "iceServers":
      return (raw as string[]).map((url) => {
        if (!url.startsWith("stun:") || !isIceUrl(url)) {
          throw new UsageError(
            `Cannot use ${flag} '${url}': expected a stun: URL`,
          );
        }
        return { urls: url };
      });
    case "secret":
      return readSecret(flag, String(raw));
    default:
      return raw;
  }
}

function readSecret(flag: string, path: string): string {
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (error) {
    throw new UsageError(
      `Cannot read ${flag} '${path}': ${
        (error as { code?: string }).code ?? "unreadable"
      }`,
    );
  }
  const secret = text.trim();
  if (secret === "") {
    throw new UsageError(`Cannot use ${flag} '${path}': the file is empty`);
  }
  return secret;
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
 * The one-line CLI message for a bad option: it names the flag, and the
 * text given (never a secret's).
 *
 * @param error The option error from `resolveOptions`.
 * @param given The flag text of each option key.
 * @returns The message.
 */
export function describeOptionError(
  error: OptionError,
  given: ReadonlyMap<string, string>,
): string {
  const spec = OPTIONS.find((row) => row.key === error.key);
  if (spec?.flag == null) return error.message;
  const reason = error.reason.replace(
    /\b([a-z]+(?:\.[a-zA-Z]+)?)\b/g,
    (word) => {
      const other = OPTIONS.find((row) => row.key === word && row.flag);
      return other ? `--${other.flag}` : word;
    },
  );
  const flag = `--${spec.flag}`;
  const text = given.get(error.key);
  if (text === undefined) {
    const source = spec.env ? `${flag} or env ${spec.env}` : flag;
    return `Cannot start: ${source} ${reason}`;
  }
  if (spec.kind === "secret") return `Cannot use ${flag}: ${reason}`;
  return `Cannot use ${flag} '${text}': ${reason}`;
}
