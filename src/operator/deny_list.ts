/**
 * The operator's deny list: owner keys and content digests whose pods the
 * broker refuses to take (403 `owner_denied`, `content_denied`) and stops
 * serving (410 `pod_deleted`). The file (`--deny-list FILE`) has one entry a
 * line:
 *
 * ```text
 * # a comment; blank lines are ignored
 * key:<ownerPubkey>          # base64url, 43 characters (32 bytes)
 * sha256:<contentSha256>     # base64url, 43 characters (32 bytes)
 * ```
 *
 * A bad line fails the whole file with a {@linkcode DenyListError} that
 * names the line; {@linkcode DenyList.reload} (on SIGHUP) keeps the old
 * entries when the new file is bad, so a typo never opens the gate.
 *
 * @module
 */

import { nodeBuiltin } from "../_util/host.ts";
import { decodeBase64Url } from "../_util/encoding.ts";

/** The entries of a deny list. */
export interface DenyEntries {
  /** Owner public keys (base64url, 43 characters). */
  keys: ReadonlySet<string>;
  /** Content digests, the manifest's `contentSha256` (base64url, 43 characters). */
  contents: ReadonlySet<string>;
}

/** What a deny list is asked about: a record's owner and content digest. */
export interface DeniableRecord {
  /** The pod's owner key. */
  ownerPubkey: string;
  /** The pod's `contentSha256`. */
  contentSha256: string;
}

/** The problem code of a denied upload. */
export type DenyCode = "owner_denied" | "content_denied";

/**
 * A deny list that cannot be read or parsed. The message is one line, for
 * the CLI's exit-2 usage message; it names the line but never repeats its
 * text.
 */
export class DenyListError extends Error {
  /** The 1-based line at fault, or null when the file could not be read. */
  readonly line: number | null;

  /**
   * Makes the error.
   *
   * @param message One line, `Cannot ...: ...`.
   * @param line The line at fault, or null.
   * @param options The cause.
   */
  constructor(message: string, line: number | null, options?: ErrorOptions) {
    super(message, options);
    this.name = "DenyListError";
    this.line = line;
  }
}

/** A 32-byte value in canonical base64url without padding. */
function isDigest(text: string): boolean {
  return text.length === 43 && decodeBase64Url(text)?.length === 32;
}

/**
 * Parses deny list text (see the module description).
 *
 * @param text The file's text.
 * @param source How to name the file in errors.
 * @returns Its entries.
 * @throws {DenyListError} Naming the first bad line.
 *
 * @example Parse a list
 * ```ts
 * import assert from "node:assert/strict";
 * import { parseDenyList } from "./deny_list.ts";
 *
 * const key = "A".repeat(43);
 * const { keys, contents } = parseDenyList(`# spam\nkey:${key}\n\n`);
 * assert.ok(keys.has(key));
 * assert.equal(contents.size, 0);
 * assert.throws(() => parseDenyList("key:short"), /line 1/);
 * ```
 */
export function parseDenyList(
  text: string,
  source = "the deny list",
): DenyEntries {
  const keys = new Set<string>();
  const contents = new Set<string>();
  // An editor may have saved a byte order mark.
  const lines = text.replace(/^\uFEFF/, "").split(/\r?\n/);
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!.replace(/#[\s\S]*$/, "").trim();
    if (line === "") continue;
    const colon = line.indexOf(":");
    const kind = colon === -1 ? "" : line.slice(0, colon);
    const value = line.slice(colon + 1).trim();
    const fail = (what: string): never => {
      throw new DenyListError(
        `Cannot read ${source}: line ${i + 1}: ${what}`,
        i + 1,
      );
    };
    if (kind !== "key" && kind !== "sha256") {
      fail("expected key:<ownerPubkey> or sha256:<contentSha256>");
    }
    if (!isDigest(value)) {
      fail(`expected 43 characters of base64url (32 bytes) after '${kind}:'`);
    }
    (kind === "key" ? keys : contents).add(value);
  }
  return { keys, contents };
}

/** Entries given in code, for {@linkcode DenyList}'s constructor. */
export interface DenyListInit {
  /** Owner keys to deny. */
  keys?: Iterable<string>;
  /** Content digests to deny. */
  contents?: Iterable<string>;
}

/**
 * A deny list, from a file ({@linkcode DenyList.load}, then
 * {@linkcode DenyList.reload} on SIGHUP) or from code (the constructor and
 * {@linkcode DenyList.replace}, for embedders with a memory registry).
 *
 * @example Deny a key in code
 * ```ts
 * import assert from "node:assert/strict";
 * import { DenyList } from "./deny_list.ts";
 *
 * const key = "A".repeat(43);
 * const denyList = new DenyList({ keys: [key] });
 * assert.equal(denyList.denies({ ownerPubkey: key, contentSha256: "B".repeat(43) }), "owner_denied");
 * assert.equal(denyList.denies({ ownerPubkey: "C".repeat(43), contentSha256: "B".repeat(43) }), null);
 * ```
 */
export class DenyList {
  #keys: ReadonlySet<string>;
  #contents: ReadonlySet<string>;
  #path: string | null = null;

  /**
   * Makes a deny list from entries given in code.
   *
   * @param init Keys and digests to deny.
   * @throws {TypeError} For an entry that is not 43 characters of base64url.
   */
  constructor(init: DenyListInit = {}) {
    const { keys, contents } = checkedEntries(init);
    this.#keys = keys;
    this.#contents = contents;
  }

  /**
   * Reads a deny list file.
   *
   * @param path The file.
   * @returns The deny list; {@linkcode DenyList.reload} reads `path` again.
   * @throws {DenyListError} When the file cannot be read or has a bad line.
   */
  static async load(path: string): Promise<DenyList> {
    const denyList = new DenyList();
    denyList.#path = path;
    await denyList.reload();
    return denyList;
  }

  /** The file it was loaded from, or null for one made in code. */
  get path(): string | null {
    return this.#path;
  }

  /** Entries held now. */
  get size(): number {
    return this.#keys.size + this.#contents.size;
  }

  /**
   * Reads the file again and swaps the entries in at once. On any error the
   * old entries stay in force.
   *
   * @returns The new number of entries.
   * @throws {DenyListError} When the file cannot be read or has a bad line.
   * @throws {TypeError} For a deny list made in code (it has no file).
   */
  async reload(): Promise<number> {
    const path = this.#path;
    if (path === null) {
      throw new TypeError("Cannot reload the deny list: it has no file");
    }
    let text: string;
    try {
      text = await nodeBuiltin("node:fs/promises").readFile(path, "utf8");
    } catch (error) {
      const code = (error as { code?: string }).code ?? "unreadable";
      throw new DenyListError(
        `Cannot read the deny list '${path}': ${code}`,
        null,
        { cause: error },
      );
    }
    const { keys, contents } = parseDenyList(text, `the deny list '${path}'`);
    this.#keys = keys;
    this.#contents = contents;
    return this.size;
  }

  /**
   * Replaces every entry (the programmatic counterpart of editing the file
   * and reloading).
   *
   * @param init The new keys and digests.
   * @throws {TypeError} For an entry that is not 43 characters of base64url;
   * the old entries then stay.
   */
  replace(init: DenyListInit): void {
    const { keys, contents } = checkedEntries(init);
    this.#keys = keys;
    this.#contents = contents;
  }

  /**
   * Whether an owner key is denied.
   *
   * @param ownerPubkey A manifest's `publicKey` (base64url).
   * @returns True when denied.
   */
  deniesKey(ownerPubkey: string): boolean {
    return this.#keys.has(ownerPubkey);
  }

  /**
   * Whether a content digest is denied.
   *
   * @param contentSha256 A manifest's `contentSha256` (base64url).
   * @returns True when denied.
   */
  deniesContent(contentSha256: string): boolean {
    return this.#contents.has(contentSha256);
  }

  /**
   * Why a pod is denied, if it is: its owner first, then its content.
   *
   * @param record The pod's record (or anything with its owner and digest).
   * @returns `"owner_denied"`, `"content_denied"`, or null when allowed.
   */
  denies(record: DeniableRecord): DenyCode | null {
    if (this.deniesKey(record.ownerPubkey)) return "owner_denied";
    if (this.deniesContent(record.contentSha256)) return "content_denied";
    return null;
  }
}

function checkedEntries(init: DenyListInit): DenyEntries {
  const check = (what: string, values: Iterable<string> | undefined) => {
    const set = new Set<string>();
    for (const value of values ?? []) {
      if (typeof value !== "string" || !isDigest(value)) {
        throw new TypeError(
          `Cannot deny the ${what} '${
            String(value).slice(0, 64)
          }': expected 43 characters of base64url (32 bytes)`,
        );
      }
      set.add(value);
    }
    return set;
  };
  return {
    keys: check("key", init.keys),
    contents: check("content digest", init.contents),
  };
}
