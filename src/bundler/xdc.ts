/**
 * Reading a webxdc bundle (`.xdc`: a zip with `index.html`,
 * `manifest.toml` and assets), bounded, whoever made it: at most
 * {@linkcode XDC_MAX_ENTRIES} entries and `maxBytes` in total, every entry
 * inside the bundle (no `..`, no absolute path, no backslash), and no
 * entry that inflates past what its header declares or past
 * {@linkcode XDC_MAX_RATIO} times its compressed size. Sizes are checked
 * before an entry is inflated, and counted while it is, a small slice of
 * compressed bytes at a time, so a zip bomb stops at the bound.
 *
 * @module
 */

import { Unzip, type UnzipFile, UnzipInflate } from "fflate";

/** The most entries (files and folders) a bundle may have. */
export const XDC_MAX_ENTRIES = 4_096;
/** The most an entry may inflate to, as a multiple of its compressed size. */
export const XDC_MAX_RATIO = 100;
/** What any entry may inflate to regardless of the ratio (small files). */
const RATIO_SLACK = 64 * 1024;
/** Compressed bytes handed to the inflater at once: bounds one step's output. */
const SLICE = 1024;
/** The local file header's signature, and an empty zip's end record. */
const ZIP_MAGIC = [[0x50, 0x4b, 0x03, 0x04], [0x50, 0x4b, 0x05, 0x06]];

/** A bundle that cannot be imported; the message is one line. */
export class XdcError extends Error {
  /**
   * A refusal.
   *
   * @param message What is wrong, as "Cannot import 'X': ...".
   */
  constructor(message: string) {
    super(message);
    this.name = "XdcError";
  }
}

/** A bundle's files by their path inside it (`/`-separated, no folders). */
export type XdcFiles = Map<string, Uint8Array>;

/**
 * Whether `path` names a webxdc bundle, which `publish` and `dev` build
 * as `import` does before anything else.
 *
 * @param path A command's input, as given.
 * @returns Whether it ends with `.xdc` (in any case).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { isXdcPath } from "./xdc.ts";
 *
 * assert.ok(isXdcPath("apps/Poll.XDC"));
 * assert.ok(!isXdcPath("poll.pod.html"));
 * ```
 */
export function isXdcPath(path: string): boolean {
  return /\.xdc$/i.test(path);
}

/**
 * Why an entry's path does not stay inside the bundle, or undefined when
 * it does. Folder entries end with `/`.
 *
 * @param name The entry's name in the zip.
 * @returns The reason, or undefined.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { pathProblem } from "./xdc.ts";
 *
 * assert.equal(pathProblem("assets/app.js"), undefined);
 * assert.match(pathProblem("../evil.js")!, /outside/);
 * ```
 */
export function pathProblem(name: string): string | undefined {
  const path = name.endsWith("/") ? name.slice(0, -1) : name;
  // deno-lint-ignore no-control-regex
  if (path === "" || /[\\\x00-\x1f:]/.test(path) || path.startsWith("/")) {
    return `the entry '${printable(name)}' has a path outside the bundle`;
  }
  if (path.split("/").some((part) => part === "" || /^\.{1,2}$/.test(part))) {
    return `the entry '${printable(name)}' has a path outside the bundle`;
  }
  return undefined;
}

/**
 * The files of a zip, bounded (see the module's documentation).
 *
 * @param label The bundle's name, for messages.
 * @param bytes The zip.
 * @param maxBytes The most its files may hold together, inflated.
 * @returns The files (folder entries are left out).
 * @throws {XdcError} When it is not a zip or breaks a bound.
 */
export function readXdc(
  label: string,
  bytes: Uint8Array,
  maxBytes: number,
): XdcFiles {
  const refuse = (why: string) =>
    new XdcError(`Cannot import '${label}': ${why}`);
  if (!ZIP_MAGIC.some((magic) => magic.every((b, i) => bytes[i] === b))) {
    throw refuse("it is not a zip file (a .xdc is a zip)");
  }
  const reader = new BoundedReader(maxBytes);
  const unzip = new Unzip((file) => reader.entry(file));
  unzip.register(UnzipInflate);
  try {
    for (let at = 0; at < bytes.length && !reader.failed; at += SLICE) {
      const end = Math.min(bytes.length, at + SLICE);
      unzip.push(bytes.subarray(at, end), end === bytes.length);
    }
  } catch (error) {
    if (!reader.failed) reader.fail(`a broken zip (${errorText(error)})`);
  }
  if (reader.failed) throw refuse(reader.failed);
  return reader.files();
}

/** Collects entries while they inflate, and stops at the first bound broken. */
class BoundedReader {
  failed: string | undefined;
  #entries = 0;
  #total = 0;
  #open = new Map<string, Uint8Array[]>();
  #done = new Map<string, Uint8Array>();
  readonly maxBytes: number;

  constructor(maxBytes: number) {
    this.maxBytes = maxBytes;
  }

  fail(why: string): void {
    this.failed ??= why;
  }

  /** Judges one entry by its header, then counts it as it inflates. */
  entry(file: UnzipFile): void {
    if (this.failed) return file.terminate();
    if (++this.#entries > XDC_MAX_ENTRIES) {
      this.fail(`it has more than ${XDC_MAX_ENTRIES} entries`);
      return file.terminate();
    }
    const problem = pathProblem(file.name) ?? this.#twice(file.name);
    if (problem) {
      this.fail(problem);
      return file.terminate();
    }
    const limit = this.#limit(file);
    if (limit === undefined) return file.terminate();
    const chunks: Uint8Array[] = [];
    let size = 0;
    if (!file.name.endsWith("/")) this.#open.set(file.name, chunks);
    file.ondata = (error, chunk, final) => {
      if (error) return this.fail(`a broken entry '${file.name}'`);
      size += chunk.length;
      this.#total += chunk.length;
      if (size > limit || this.#total > this.maxBytes) {
        this.fail(this.#tooLarge(file.name, size > limit));
        return file.terminate();
      }
      chunks.push(chunk);
      if (final) this.#finish(file.name);
    };
    file.start();
  }

  files(): XdcFiles {
    return this.#done;
  }

  /** What one entry may inflate to; undefined (and a failure) if its header lies. */
  #limit(file: UnzipFile): number | undefined {
    if (file.compression !== 0 && file.compression !== 8) {
      this.fail(`the entry '${file.name}' uses an unknown compression`);
      return undefined;
    }
    const declared = file.originalSize;
    const packed = file.size;
    const ratio = packed === undefined
      ? this.maxBytes
      : packed * XDC_MAX_RATIO + RATIO_SLACK;
    if (declared !== undefined && declared > Math.min(ratio, this.maxBytes)) {
      this.fail(this.#tooLarge(file.name, declared <= this.maxBytes));
      return undefined;
    }
    return Math.min(declared ?? Infinity, ratio, this.maxBytes);
  }

  #tooLarge(name: string, ratio: boolean): string {
    return ratio
      ? `the entry '${name}' inflates more than ${XDC_MAX_RATIO} times its size or than its header says (a zip bomb?)`
      : `it is too large: more than ${
        this.maxBytes.toLocaleString("en")
      } bytes inflated`;
  }

  #twice(name: string): string | undefined {
    return this.#open.has(name) || this.#done.has(name)
      ? `the entry '${printable(name)}' is in the zip twice`
      : undefined;
  }

  #finish(name: string): void {
    const chunks = this.#open.get(name);
    if (!chunks) return;
    this.#open.delete(name);
    const joined = new Uint8Array(chunks.reduce((n, c) => n + c.length, 0));
    let at = 0;
    for (const chunk of chunks) {
      joined.set(chunk, at);
      at += chunk.length;
    }
    this.#done.set(name, joined);
  }
}

/**
 * The `name` of a webxdc `manifest.toml` (a top-level key, before any
 * table), or undefined when it has none.
 *
 * @param text The manifest.
 * @returns The name, trimmed, or undefined.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { manifestName } from "./xdc.ts";
 *
 * assert.equal(manifestName('name = "Poll"\nversion = "1.0"'), "Poll");
 * assert.equal(manifestName("[x]\nname = 'Other'"), undefined);
 * ```
 */
export function manifestName(text: string): string | undefined {
  for (const line of text.split(/\r?\n/)) {
    if (/^\s*\[/.test(line)) return undefined;
    const match = /^\s*name\s*=\s*("(?:[^"\\]|\\.)*"|'[^']*')\s*(?:#.*)?$/
      .exec(line);
    if (!match) continue;
    const quoted = match[1]!;
    try {
      const name = quoted.startsWith('"')
        ? JSON.parse(quoted) as string
        : quoted.slice(1, -1);
      return name.trim() || undefined;
    } catch {
      return undefined;
    }
  }
  return undefined;
}

/** A name from a hostile zip, shown on one line and not too long. */
function printable(name: string): string {
  // deno-lint-ignore no-control-regex
  const clean = name.replace(/[\x00-\x1f\x7f]/g, "?");
  return clean.length > 80 ? `${clean.slice(0, 80)}...` : clean;
}

function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
