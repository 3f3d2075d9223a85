/**
 * The command line's flags, parsed strictly by the rules and with the
 * messages of Node's `util.parseArgs` (`strict: true`): written here so that
 * a serving start on Deno loads no `node:` module (see `_util/host.ts`).
 * `tests/unit/flags_test.ts` holds the two to the same answers.
 *
 * @module
 */

/** A flag of a command: a switch, or one that takes a value. */
export interface FlagSpec {
  /** `boolean` for a switch, `string` for a flag that takes a value. */
  readonly type: "boolean" | "string";
  /** A one-letter alias, given as `-x`. */
  readonly short?: string;
  /** Whether the flag may be given more than once: its values are a list. */
  readonly multiple?: boolean;
}

/** The flags of a command, by name (`out` for `--out`). */
export type FlagSpecs = Readonly<Record<string, FlagSpec>>;

type ValueOf<S extends FlagSpec> = S["type"] extends "boolean" ? boolean
  : string;

/** What {@linkcode parseFlags} found: each flag given, and the rest. */
export interface ParsedFlags<T extends FlagSpecs> {
  /** The value of each flag given (the last one, or all for `multiple`). */
  values: {
    [K in keyof T]?: T[K]["multiple"] extends true ? ValueOf<T[K]>[]
      : ValueOf<T[K]>;
  };
  /** The arguments that are not flags, in order. */
  positionals: string[];
}

/** A command line that breaks the rules; its message is one line. */
export class FlagError extends Error {
  override name = "FlagError";
}

/**
 * Parses `args` against `specs`: `--name`, `--name=VALUE`, `--name VALUE`,
 * `-x` and `-xyz` for short aliases, and `--` before arguments that are not
 * flags. An unknown flag, a switch given a value, a value missing or that
 * starts with a dash when given apart, and an argument where the command
 * takes none are errors.
 *
 * @param args The arguments.
 * @param specs The command's flags.
 * @param allowPositionals Whether the command takes other arguments.
 * @returns The values and the other arguments.
 * @throws {FlagError} For a command line that breaks a rule.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { parseFlags } from "./flags.ts";
 *
 * const { values, positionals } = parseFlags(
 *   ["--out=a.html", "-q", "page.html"],
 *   { out: { type: "string" }, quiet: { type: "boolean", short: "q" } },
 *   true,
 * );
 * assert.deepEqual({ ...values }, { out: "a.html", quiet: true });
 * assert.deepEqual(positionals, ["page.html"]);
 * ```
 */
export function parseFlags<const T extends FlagSpecs>(
  args: readonly string[],
  specs: T,
  allowPositionals: boolean,
): ParsedFlags<T> {
  const parser = new Parser(specs, allowPositionals);
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    if (arg === "--") {
      for (const rest of args.slice(i + 1)) parser.positional(rest);
      break;
    }
    if (arg.startsWith("--")) i += parser.long(arg, args[i + 1]);
    else if (arg.length > 1 && arg.startsWith("-")) {
      i += parser.shorts(arg, args[i + 1]);
    } else parser.positional(arg);
  }
  return {
    values: parser.values as ParsedFlags<T>["values"],
    positionals: parser.positionals,
  };
}

/** The state of one parse. */
class Parser {
  readonly values: Record<string, unknown> = Object.create(null);
  readonly positionals: string[] = [];
  readonly #specs: FlagSpecs;
  readonly #allowPositionals: boolean;
  readonly #byShort = new Map<string, string>();

  constructor(specs: FlagSpecs, allowPositionals: boolean) {
    this.#specs = specs;
    this.#allowPositionals = allowPositionals;
    for (const [name, spec] of Object.entries(specs)) {
      if (spec.short !== undefined) this.#byShort.set(spec.short, name);
    }
  }

  positional(arg: string): void {
    if (!this.#allowPositionals) {
      throw new FlagError(
        `Unexpected argument '${arg}'. This command does not take positional arguments`,
      );
    }
    this.positionals.push(arg);
  }

  /** `--name`, `--name=VALUE` or `--name VALUE`; returns the args taken after. */
  long(arg: string, next: string | undefined): number {
    const equals = arg.indexOf("=");
    const name = equals < 0 ? arg.slice(2) : arg.slice(2, equals);
    if (name === "" || !Object.hasOwn(this.#specs, name)) {
      throw this.#unknown(equals < 0 || name === "" ? arg : `--${name}`);
    }
    if (equals >= 0) {
      if (this.#specs[name]!.type === "boolean") {
        throw new FlagError(
          `Option '${this.#label(name)}' does not take an argument`,
        );
      }
      this.#set(name, arg.slice(equals + 1));
      return 0;
    }
    return this.#take(name, `--${name}`, next);
  }

  /** `-x` or `-xyz`; returns the args taken after. */
  shorts(arg: string, next: string | undefined): number {
    for (let at = 1; at < arg.length; at++) {
      const name = this.#byShort.get(arg[at]!);
      if (name === undefined) throw this.#unknown(`-${arg[at]}`);
      if (this.#specs[name]!.type === "string") {
        // The rest of the group is the value (`-ofile`), or the next arg.
        if (at + 1 < arg.length) {
          this.#set(name, arg.slice(at + 1));
          return 0;
        }
        return this.#take(name, `-${arg[at]}`, next);
      }
      this.#set(name, true);
    }
    return 0;
  }

  /** A switch, or a value given apart as `next`; returns the args taken. */
  #take(name: string, given: string, next: string | undefined): number {
    if (this.#specs[name]!.type === "boolean") {
      this.#set(name, true);
      return 0;
    }
    if (next === undefined) {
      throw new FlagError(
        `Option '${this.#label(name)} <value>' argument missing`,
      );
    }
    if (next.length > 1 && next.startsWith("-")) {
      throw new FlagError(
        `Option '${given}' argument is ambiguous. Did you forget to specify the option argument for '${given}'? To specify an option argument starting with a dash use '--${name}=-XYZ'${
          given.startsWith("--") ? "" : ` or '${given}-XYZ'`
        }.`,
      );
    }
    this.#set(name, next);
    return 1;
  }

  #set(name: string, value: string | boolean): void {
    if (this.#specs[name]!.multiple) {
      ((this.values[name] ??= []) as unknown[]).push(value);
    } else {
      this.values[name] = value;
    }
  }

  #label(name: string): string {
    const short = this.#specs[name]!.short;
    return short === undefined ? `--${name}` : `-${short}, --${name}`;
  }

  #unknown(option: string): FlagError {
    return new FlagError(
      `Unknown option '${option}'${
        this.#allowPositionals
          ? `. To specify a positional argument starting with a '-', place it at the end of the command after '--', as in '-- "${option}"`
          : ""
      }`,
    );
  }
}
