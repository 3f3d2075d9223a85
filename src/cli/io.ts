/**
 * Small input/output helpers shared by the CLI's commands: argument
 * parsing, reading keys with one-line errors, printing (a command's input
 * file is read by `input.ts`).
 *
 * @module
 */

import { nodeBuiltin, writeStderr, writeStdout } from "../_util/host.ts";
import {
  FlagError,
  type FlagSpecs,
  type ParsedFlags,
  parseFlags,
} from "./flags.ts";
import { decodePrivateKeyPem } from "../pod/keys.ts";
import { fileProblem } from "./input.ts";
import { UsageError } from "./usage_error.ts";

/** What {@linkcode parse} returns for the flags `T`. */
export type Parsed<T extends FlagSpecs> = ParsedFlags<T>;

/** Strict flags ({@linkcode parseFlags}); a bad flag is a {@linkcode UsageError}. */
export function parse<const T extends FlagSpecs>(
  args: string[],
  options: T,
  allowPositionals: boolean,
): Parsed<T> {
  try {
    return parseFlags(joinDashValues(args, options), options, allowPositionals);
  } catch (error) {
    if (!(error instanceof FlagError)) throw error;
    throw new UsageError(error.message);
  }
}

/**
 * `args` with `--name VALUE` written `--name=VALUE` where `name` takes a
 * string and VALUE starts with a dash but names no option of the command
 * (nor is `--`): a public key in base64url can start with "-" or "--"
 * (`list --owner -Kq...`), and the parser refuses such a value given
 * apart, as "ambiguous" or as an unknown option. A forgotten value
 * (`--owner --data-dir x`) is still refused.
 */
function joinDashValues(
  args: string[],
  options: FlagSpecs,
): string[] {
  const shorts = new Set(
    Object.values(options).flatMap((o) => (o.short ? [`-${o.short}`] : [])),
  );
  const namesOption = (arg: string) =>
    arg === "--" || shorts.has(arg) ||
    (arg.startsWith("--") &&
      Object.hasOwn(options, arg.slice(2).split("=")[0]!));
  const out: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    const next = args[i + 1];
    const option = arg.startsWith("--") ? options[arg.slice(2)] : undefined;
    if (
      option?.type === "string" && next !== undefined &&
      next.length > 1 && next.startsWith("-") && !namesOption(next)
    ) {
      out.push(`${arg}=${next}`);
      i++;
    } else {
      out.push(arg);
    }
  }
  return out;
}

/** The single positional argument of `command` (a file unless named). */
export function onePositional(
  positionals: string[],
  command: string,
  what = "file",
): string {
  if (positionals.length !== 1) {
    throw new UsageError(`${command} takes exactly one ${what}`);
  }
  return positionals[0]!;
}

/** Writes `text` to standard output; returns exit code 0. */
export function print(text: string): number {
  writeStdout(text);
  return 0;
}

/** Writes one line (or more) to standard error. */
export function stderr(text: string): void {
  writeStderr(text);
}

/**
 * The seed in the key file at `path`; a missing file, or one that is no key,
 * is a usage error that says how to make one.
 */
export async function readKey(path: string): Promise<Uint8Array> {
  let text: string;
  try {
    text = await nodeBuiltin("node:fs/promises").readFile(path, "utf8");
  } catch (error) {
    const missing = (error as { code?: string }).code === "ENOENT";
    throw new UsageError(
      `Cannot read key '${path}': ${fileProblem(error)}${
        missing ? ": create one with pod-broker keygen --out FILE" : ""
      }`,
    );
  }
  try {
    return decodePrivateKeyPem(text);
  } catch {
    throw new UsageError(
      `Cannot use key '${path}': not an Ed25519 PKCS#8 PEM private key: create one with pod-broker keygen --out FILE`,
    );
  }
}
