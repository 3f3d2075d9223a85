/**
 * A command's input file, read once: a path, `/dev/stdin`, or `-` for
 * standard input. A pipe can be read only once, so a command reads its
 * input here, once, and passes the bytes on. The read is bounded, and a
 * file that cannot be read is one line that says why in words (never a
 * bare errno such as `ENOENT`).
 *
 * @module
 */

import { nodeBuiltin } from "../_util/host.ts";
import { UsageError } from "./usage_error.ts";

/** The largest input read: a pod is far smaller (a broker's default is 50 MiB). */
export const MAX_INPUT_BYTES: number = 256 * 1024 * 1024;

/** A command's input: what the user named it, and its bytes. */
export interface Input {
  /** The path as given (`-` for standard input), for messages. */
  path: string;
  /** Its bytes, read once. */
  bytes: Uint8Array;
}

/** The words for a file system error code; the code itself when unknown. */
const PROBLEMS: Readonly<Record<string, string>> = {
  ENOENT: "no such file",
  ENOTDIR: "no such file (a part of the path is not a folder)",
  EISDIR: "it is a folder, not a file",
  EACCES: "permission denied",
  EPERM: "permission denied",
  EEXIST: "the file exists already",
  ENOSPC: "no space left on the device",
  EROFS: "the file system is read-only",
  ELOOP: "too many symbolic links",
  ENAMETOOLONG: "the name is too long",
};

/**
 * Why a file operation failed, in words: `no such file`, not `ENOENT`.
 *
 * @param error What the file system threw.
 * @returns A few words, without the errno.
 */
export function fileProblem(error: unknown): string {
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code === "string") return PROBLEMS[code] ?? `failed (${code})`;
  return (error as Error)?.message?.split("\n")[0] ?? String(error);
}

/**
 * Reads `path` (`-` or `/dev/stdin`: standard input) once, to the end.
 *
 * @param path The path as given.
 * @returns Its bytes.
 * @throws {UsageError} When it cannot be read, is over
 * {@linkcode MAX_INPUT_BYTES}, or is standard input left to a terminal.
 */
export async function readInput(path: string): Promise<Input> {
  // `/dev/stdin` is read as standard input, not opened: where standard input
  // is a socket (a program's spawned child on Node), opening it fails.
  const stdin = path === "-" || path === "/dev/stdin";
  const process = nodeBuiltin("node:process");
  if (stdin && process.stdin.isTTY) {
    // Nothing was piped in: waiting for the terminal would look like a hang.
    throw new UsageError(
      `Cannot read '${path}': standard input is a terminal; pipe a page into it (pod-broker build index.html | ...)`,
    );
  }
  const source = stdin
    ? process.stdin
    : nodeBuiltin("node:fs").createReadStream(path);
  const chunks: Uint8Array[] = [];
  let size = 0;
  try {
    for await (const chunk of source as AsyncIterable<Uint8Array>) {
      size += chunk.length;
      if (size > MAX_INPUT_BYTES) {
        throw new UsageError(
          `Cannot read '${path}': it is over ${MAX_INPUT_BYTES} bytes`,
        );
      }
      chunks.push(chunk);
    }
  } catch (error) {
    if (error instanceof UsageError) throw error;
    throw new UsageError(`Cannot read '${path}': ${fileProblem(error)}`);
  } finally {
    if (!stdin) (source as { destroy(): void }).destroy();
  }
  const bytes = new Uint8Array(size);
  let at = 0;
  for (const chunk of chunks) {
    bytes.set(chunk, at);
    at += chunk.length;
  }
  return { path, bytes };
}

/**
 * Reads a page to sign or send, once; an empty or whitespace-only one is
 * refused, since signing it would publish a blank page.
 *
 * @param path The path as given (`-`: standard input).
 * @param command The command, for the message ("publish").
 * @returns The page.
 * @throws {UsageError} When it cannot be read, or holds nothing.
 */
export async function readPage(path: string, command: string): Promise<Input> {
  const input = await readInput(path);
  if (isBlank(input.bytes)) {
    throw new UsageError(
      `Cannot ${command} '${path}': it is ${
        input.bytes.length === 0 ? "empty" : "only white space"
      } (did the command that writes it fail?); nothing was signed or sent`,
    );
  }
  return input;
}

/** Whether `bytes` hold nothing but ASCII white space (or nothing). */
function isBlank(bytes: Uint8Array): boolean {
  return bytes.every((b) => b === 0x20 || (b >= 0x09 && b <= 0x0d));
}
