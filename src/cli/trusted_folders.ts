/**
 * Which pod folders may sign with the key their `deno.json` names. A folder
 * is anyone's to write: a template or a clone can name the author's key
 * (`~/.config/pod-broker/keys/author.pem`) and have `build` or `publish`
 * sign its page with it. So the key a folder names is used only when the
 * user vouched for that folder with that key: `pod-broker init` made it, or
 * `pod-broker trust DIR` confirmed it. The record lives beside the keys,
 * outside every folder (`$XDG_CONFIG_HOME/pod-broker/folders.json`, else
 * `~/.config/pod-broker/folders.json`), keyed by the folder's real path,
 * links resolved; anything else signs only with `--key FILE`.
 *
 * ```json
 * { "folders": { "/home/me/hello-room": "/home/me/.config/pod-broker/keys/author.pem" } }
 * ```
 *
 * `dev` needs none of this: it signs with a throwaway key (see `dev.ts`).
 *
 * @module
 */

import {
  mkdir,
  readFile,
  realpath,
  rename,
  stat,
  writeFile,
} from "node:fs/promises";
import { dirname, join, resolve } from "node:path";
import process from "node:process";
import { fileProblem } from "./input.ts";
import { keyDirectory, type PodFolder } from "./pod_folder.ts";
import { UsageError } from "./usage_error.ts";

/** The largest record read. */
const MAX_RECORD_BYTES = 1 << 20;
/** The most folders recorded (the oldest are dropped past it). */
const MAX_FOLDERS = 4096;

/** Folder real path to the absolute path of the key it may sign with. */
type Vouched = Record<string, string>;

/**
 * The file that records the folders vouched for, beside the key folder.
 *
 * @param env The environment.
 * @returns An absolute path.
 */
export function trustFile(
  env: Record<string, string | undefined> = process.env,
): string {
  return join(dirname(keyDirectory(env)), "folders.json");
}

/**
 * Records that `dir` may sign with `key` (`init` and `trust` call it).
 *
 * @param dir The pod folder (it exists).
 * @param key The key file's path.
 * @throws {UsageError} When the record cannot be read or written.
 */
export async function trustFolder(dir: string, key: string): Promise<void> {
  const file = trustFile();
  const folders = await readRecord(file);
  const real = await realpath(dir);
  delete folders[real];
  folders[real] = resolve(key);
  const kept = Object.entries(folders).slice(-MAX_FOLDERS);
  const text = `${
    JSON.stringify({ folders: Object.fromEntries(kept) }, null, 2)
  }\n`;
  const fail = (error: unknown): never => {
    throw new UsageError(`Cannot write '${file}': ${fileProblem(error)}`);
  };
  await mkdir(dirname(file), { recursive: true, mode: 0o700 }).catch(fail);
  // Written aside, then renamed: a reader never sees half a record.
  const temp = `${file}.${process.pid}.tmp`;
  await writeFile(temp, text, { mode: 0o600 }).catch(fail);
  await rename(temp, file).catch(fail);
}

/**
 * The key `folder`'s `deno.json` names, if the user vouched for the folder
 * with that key.
 *
 * @param folder What the folder's `deno.json` says.
 * @returns The key's path, or undefined when the folder names none.
 * @throws {UsageError} When it names a key the user did not vouch for
 * there: the one line says to pass `--key FILE` or run `trust`.
 */
export async function folderKey(
  folder: PodFolder | undefined,
): Promise<string | undefined> {
  if (folder?.key === undefined) return undefined;
  const folders = await readRecord(trustFile());
  const real = await realpath(folder.dir).catch(() => folder.dir);
  if (Object.hasOwn(folders, real) && folders[real] === folder.key) {
    return folder.key;
  }
  throw new UsageError(
    `Cannot sign with the key '${folder.key}' that '${
      join(folder.dir, "deno.json")
    }' names: pod-broker init did not make this folder with that key, and it was not confirmed; pass --key FILE, or, if the folder is yours, run pod-broker trust ${folder.dir}`,
  );
}

/** The record in `file`; empty when there is none yet. */
async function readRecord(file: string): Promise<Vouched> {
  const bad = (why: string): never => {
    throw new UsageError(
      `Cannot read '${file}': ${why}; delete it, then run pod-broker trust DIR for each of your pod folders`,
    );
  };
  let text: string;
  try {
    if ((await stat(file)).size > MAX_RECORD_BYTES) bad("it is over 1 MiB");
    text = await readFile(file, "utf8");
  } catch (error) {
    if (error instanceof UsageError) throw error;
    if ((error as { code?: string }).code === "ENOENT") return {};
    throw new UsageError(`Cannot read '${file}': ${fileProblem(error)}`);
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    bad("it is not JSON");
  }
  const folders = (json as { folders?: unknown } | null)?.folders;
  if (typeof folders !== "object" || folders === null) {
    return bad('it has no "folders" object');
  }
  const record: Vouched = {};
  for (const [dir, key] of Object.entries(folders)) {
    if (typeof key === "string") record[dir] = key;
  }
  return record;
}
