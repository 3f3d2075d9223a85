/**
 * What `pod-broker build` may read: the page's folder, and the packages a
 * script imports by name from `node_modules`, each confined to its own
 * package tree. Every path is judged after its links are resolved
 * (`realpath`), so neither `../`, nor a root-relative `/../`, nor a
 * symbolic link (to a file outside, or to `/proc/self/environ`), nor an
 * import with `with { type: "text" }` can pull a file from elsewhere into
 * a pod. And no key file is ever inlined, wherever it lies: by its name
 * (`*.pem`, `*.key`, `id_ed25519`...) or by its content (a PEM private key
 * block, a PuTTY key). A pod is public; a key in it hands the pod, and
 * every later update of it, to anyone.
 *
 * @module
 */

import { Buffer } from "node:buffer";
import { readFile, realpath } from "node:fs/promises";
import { basename, dirname, isAbsolute, relative, sep } from "node:path";
import { fileURLToPath } from "node:url";

/** The file names of key material a build never reads (lower case). */
const KEY_NAME =
  /(?:\.(?:pem|key|p8|p12|pfx|ppk|jks|keystore|gpg|asc)|^id_(?:rsa|dsa|ecdsa|ed25519)(?:_sk)?)$/;
/** The markers of a private key in a file's content. */
const KEY_MARKERS = ["PRIVATE KEY", "PuTTY-User-Key-File-"];
/** A PEM private key block: its header, then base64 (after any headers). */
const PEM_PRIVATE_KEY =
  /-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----\r?\n(?:[\w-]+:[^\n]*\n|\s)*[A-Za-z0-9+/=]{16,}/;
/** The directory of installed packages. */
const NODE_MODULES = "node_modules";

/** Whether a specifier names a package (`lit`, `@scope/x/y`), not a path. */
export function isBareSpecifier(specifier: string): boolean {
  return !/^(?:\.{1,2}(?:[\\/]|$)|[\\/])/.test(specifier) &&
    !isAbsolute(specifier);
}

/**
 * Says why a file must not be inlined because it holds a private key, by
 * its name or by its content.
 *
 * @param name The file's name (as written, or its real path).
 * @param bytes Its content, when read.
 * @returns The reason, or undefined for a file that looks like no key.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { keyProblem } from "./confine.ts";
 *
 * assert.match(keyProblem("author.pem")!, /key/);
 * assert.equal(keyProblem("logo.png", new Uint8Array([1, 2])), undefined);
 * ```
 */
export function keyProblem(
  name: string,
  bytes?: Uint8Array,
): string | undefined {
  if (KEY_NAME.test(basename(name).toLowerCase())) {
    return "is named like a key file";
  }
  if (bytes === undefined) return undefined;
  const buffer = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length);
  for (const marker of KEY_MARKERS) {
    for (
      let at = buffer.indexOf(marker);
      at >= 0;
      at = buffer.indexOf(marker, at + 1)
    ) {
      const text = buffer.toString("latin1", Math.max(0, at - 40), at + 400);
      if (
        marker.startsWith("PuTTY")
          ? /^PuTTY-User-Key-File-\d+: /m.test(text)
          : PEM_PRIVATE_KEY.test(text)
      ) return "holds a private key";
    }
  }
  return undefined;
}

/** The folder (page, package or client) a file belongs to. */
export interface Placed {
  /** The file's real path. */
  real: string;
  /** The real path of the tree it belongs to. */
  tree: string;
}

/**
 * The trees one build may read: the page's folder, the browser client's
 * folder (this package's own code), and packages under `node_modules`.
 */
export class Confinement {
  /** The page's folder, links resolved. */
  readonly root: string;
  readonly #client: string | undefined;

  private constructor(root: string, client: string | undefined) {
    this.root = root;
    this.#client = client;
  }

  /**
   * @param root The page's folder.
   * @param client The module `pod-broker/client` stands for.
   * @returns The confinement of one build.
   */
  static async open(root: string, client: URL): Promise<Confinement> {
    const clientDir = client.protocol === "file:"
      ? await realpath(dirname(fileURLToPath(client))).catch(() => undefined)
      : undefined;
    return new Confinement(await realpath(root), clientDir);
  }

  /**
   * The tree a real path belongs to: the page's folder, a package's folder
   * (`.../node_modules/name` or `.../node_modules/@scope/name`), or the
   * client's folder; undefined for anywhere else.
   */
  treeOf(real: string): string | undefined {
    if (within(real, this.root)) {
      return packageOf(real, this.root) ?? this.root;
    }
    const found = packageOf(real, "");
    if (found !== undefined) return found;
    if (this.#client !== undefined && within(real, this.#client)) {
      return this.#client;
    }
    return undefined;
  }

  /**
   * Places a file the build is about to read, or says why it may not.
   *
   * @param path The file's path as resolved (links not followed yet).
   * @param from The tree of the file that names it (the page's folder for
   * the page and its attributes), or undefined to check only that the file
   * lies in one of the trees (the client module itself, a file to load).
   * @param bare Whether it was named as a package (`import "lit"`): it may
   * then lie in any package's tree.
   * @returns Its real path and tree, or the reason it is refused.
   */
  async place(
    path: string,
    from: string | undefined,
    bare: boolean,
  ): Promise<Placed | Problem> {
    let real: string;
    try {
      real = await realpath(path);
    } catch (error) {
      return cannotRead(error);
    }
    const tree = this.treeOf(real);
    const key = keyProblem(real) ?? keyProblem(path);
    if (key !== undefined) return { problem: keyRefusal(key) };
    const isPackage = tree !== undefined && tree !== this.root &&
      tree !== this.#client;
    if (
      tree !== undefined && (from === undefined ||
        (bare ? isPackage || tree === from : within(real, from)))
    ) {
      return { real, tree };
    }
    if (from !== undefined && from !== this.root) {
      return { problem: "is outside the package that imports it" };
    }
    return { problem: OUTSIDE };
  }

  /**
   * Reads a file for the pod: it must lie in one of the trees (links
   * resolved) and hold no key. What decides whether the file that names it
   * may reach it is {@linkcode Confinement.place}.
   *
   * @param path The file's path.
   * @returns Its bytes, or the reason it may not be inlined.
   */
  async read(path: string): Promise<{ bytes: Uint8Array } | Problem> {
    const placed = await this.place(path, undefined, false);
    if ("problem" in placed) return placed;
    let bytes: Uint8Array;
    try {
      bytes = new Uint8Array(await readFile(placed.real));
    } catch (error) {
      return cannotRead(error);
    }
    const key = keyProblem(placed.real, bytes);
    return key === undefined ? { bytes } : { problem: keyRefusal(key) };
  }
}

/** Why a file is refused, said after its name. */
export interface Problem {
  /** `is outside the page's folder ...`, `holds a private key ...`. */
  problem: string;
  /** The system's code when the file could not be read (`ENOENT`). */
  code?: string;
}

/** What a build says of a file outside the page's folder (after its name). */
export const OUTSIDE = "is outside the page's folder";

/** What to do about a file outside the folder, said once after the list. */
export const OUTSIDE_HINT =
  "a pod is built only from the files in its page's folder, links resolved, and the packages in node_modules: copy the file in";

/** The one-line refusal of a key file. */
export function keyRefusal(why: string): string {
  return `${why}: a pod never contains a key (keep keys outside the pod's folder)`;
}

function cannotRead(error: unknown): Problem {
  const code = (error as { code?: string }).code ?? String(error);
  return { problem: `cannot be read (${code})`, code };
}

/** Whether `path` is `dir` or inside it. */
function within(path: string, dir: string): boolean {
  const rest = relative(dir, path);
  return rest === "" ||
    (!rest.startsWith(`..${sep}`) && rest !== ".." && !isAbsolute(rest));
}

/**
 * The package folder of a path below `base`: up to its last
 * `node_modules/name` (or `node_modules/@scope/name`) with a file below it.
 */
function packageOf(path: string, base: string): string | undefined {
  const parts = path.slice(base.length).split(sep);
  for (let at = parts.length - 3; at >= 0; at--) {
    if (parts[at] !== NODE_MODULES) continue;
    const scoped = parts[at + 1]!.startsWith("@");
    const end = at + (scoped ? 3 : 2);
    const name = parts.slice(at + 1, end);
    if (
      end >= parts.length || name.some((part) => part === "") ||
      name.at(-1)!.startsWith(".")
    ) {
      return undefined;
    }
    return base + parts.slice(0, end).join(sep);
  }
  return undefined;
}
