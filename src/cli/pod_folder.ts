/**
 * A pod folder's settings, in the `"pod"` member of its `deno.json` (as
 * `pod-broker init` writes it): the path of the author's key, which lives
 * outside the folder (by default in the per-user configuration folder,
 * `$XDG_CONFIG_HOME/pod-broker/keys/`, else `~/.config/pod-broker/keys/`),
 * and the pod's name. `build` and `publish` sign with that key when no
 * `--key` is given, and only in a folder the user vouched for (see
 * `trusted_folders.ts`: anyone can write a `deno.json`); `dev` reads the
 * name alone. The key is never copied into the folder that `build` turns
 * into a public page.
 *
 * ```json
 * { "pod": { "key": "~/.config/pod-broker/keys/author.pem", "name": "my-pod" } }
 * ```
 *
 * @module
 */

import { readFile, realpath, stat } from "node:fs/promises";
import { homedir } from "node:os";
import { dirname, isAbsolute, join, relative, resolve, sep } from "node:path";
import process from "node:process";
import { MAX_NAME_CHARACTERS } from "../pod/manifest.ts";
import { UsageError } from "./usage_error.ts";

/** The file that holds a pod folder's settings. */
export const CONFIG_FILE = "deno.json";
/** The key `init` makes or reuses, in {@linkcode keyDirectory}. */
export const DEFAULT_KEY_NAME = "author.pem";
/** The largest `deno.json` read. */
const MAX_CONFIG_BYTES = 1 << 20;
/** How many folders up the search for a pod folder goes. */
const MAX_DEPTH = 64;

/** What a pod folder's `deno.json` says. */
export interface PodFolder {
  /** The folder (where its `deno.json` is). */
  dir: string;
  /** The author key's absolute path, when named. */
  key?: string;
  /** The pod's name, when given. */
  name?: string;
}

/**
 * Where `init` keeps author keys: `$XDG_CONFIG_HOME/pod-broker/keys`, else
 * `~/.config/pod-broker/keys`.
 *
 * @param env The environment.
 * @returns An absolute path.
 */
export function keyDirectory(
  env: Record<string, string | undefined> = process.env,
): string {
  const config = env.XDG_CONFIG_HOME && isAbsolute(env.XDG_CONFIG_HOME)
    ? env.XDG_CONFIG_HOME
    : join(homedir(), ".config");
  return join(config, "pod-broker", "keys");
}

/** A path as written in `deno.json`: `~/...` when under the home folder. */
export function displayPath(path: string): string {
  const home = homedir();
  const rest = relative(home, path);
  return home && rest && !isUp(rest) ? `~/${rest.split(sep).join("/")}` : path;
}

/** A path from `deno.json`: `~/` is the home folder, a relative path the folder's. */
function expandPath(text: string, dir: string): string {
  return text === "~" || text.startsWith("~/")
    ? join(homedir(), text.slice(2))
    : resolve(dir, text);
}

/**
 * The pod folder `path` is in: the nearest folder, from `path` up, whose
 * `deno.json` has a `"pod"` member.
 *
 * @param path A folder (the page's, or the built file's).
 * @returns Its settings, or undefined when no such folder is found.
 * @throws {UsageError} When that `deno.json` cannot be read or its
 * `"pod"` member is malformed.
 */
export async function findPodFolder(
  path: string,
): Promise<PodFolder | undefined> {
  let dir = resolve(path);
  for (let depth = 0; depth < MAX_DEPTH; depth++) {
    const found = await readPodConfig(dir);
    if (found !== undefined) return found;
    const up = dirname(dir);
    if (up === dir) break;
    dir = up;
  }
  return undefined;
}

/** The `"pod"` member of `dir/deno.json`, or undefined when it has none. */
async function readPodConfig(dir: string): Promise<PodFolder | undefined> {
  const file = join(dir, CONFIG_FILE);
  const size = await stat(file).then((s) => s.isFile() ? s.size : -1, () => -1);
  if (size < 0) return undefined;
  const fail = (why: string): never => {
    throw new UsageError(`Cannot read the pod settings in '${file}': ${why}`);
  };
  if (size > MAX_CONFIG_BYTES) fail("it is over 1 MiB");
  let json: unknown;
  try {
    json = JSON.parse(await readFile(file, "utf8"));
  } catch (error) {
    fail((error as Error).message.split("\n")[0]!);
  }
  const pod = (json as { pod?: unknown } | null)?.pod;
  if (pod === undefined) return undefined;
  if (typeof pod !== "object" || pod === null) fail('"pod" is not an object');
  const { key, name } = pod as { key?: unknown; name?: unknown };
  if (key !== undefined && (typeof key !== "string" || key === "")) {
    fail('"pod.key" is not a path');
  }
  const length = typeof name === "string" ? [...name].length : 0;
  if (name !== undefined && (length < 1 || length > MAX_NAME_CHARACTERS)) {
    fail(`"pod.name" must be text of 1 to ${MAX_NAME_CHARACTERS} characters`);
  }
  return {
    dir,
    ...(typeof key === "string" ? { key: expandPath(key, dir) } : {}),
    ...(typeof name === "string" ? { name } : {}),
  };
}

/**
 * Whether a key file lies inside `folder` (links resolved): a key there
 * is one copy, commit or tool away from being published.
 *
 * @param key The key's path.
 * @param folder The pod's folder.
 */
export async function isInside(key: string, folder: string): Promise<boolean> {
  try {
    return !isUp(relative(await realpath(folder), await realpath(key)));
  } catch {
    return false;
  }
}

/** Whether a relative path leads out of its folder. */
function isUp(rest: string): boolean {
  return rest === ".." || rest.startsWith(`..${sep}`) || isAbsolute(rest);
}
