/**
 * The `trust` command: the user confirms that a pod folder is theirs, so
 * that `build` and `publish` there sign with the key its `deno.json` names
 * (see `trusted_folders.ts`). It says which key, and whose, before the
 * record is written.
 *
 * @module
 */

import { resolve } from "node:path";
import { encodeBase64Url } from "../_util/encoding.ts";
import { publicKeyFromSeed } from "../pod/ed25519.ts";
import { parse, print, readKey } from "./io.ts";
import { displayPath, findPodFolder } from "./pod_folder.ts";
import { trustFolder } from "./trusted_folders.ts";
import { UsageError } from "./usage_error.ts";

/**
 * `trust [DIR]`: records DIR (the current folder by default), which must
 * be a pod folder whose `deno.json` names a key that can be read.
 *
 * @param args The arguments after `trust`.
 * @returns 0; anything else is a {@linkcode UsageError} (exit 2).
 */
export async function trust(args: string[]): Promise<number> {
  const { positionals } = parse(args, {}, true);
  if (positionals.length > 1) {
    throw new UsageError("trust takes at most one DIR");
  }
  const dir = resolve(positionals[0] ?? ".");
  const folder = await findPodFolder(dir);
  if (folder === undefined || folder.dir !== dir) {
    throw new UsageError(
      `Cannot trust '${dir}': it has no deno.json with a "pod" member (pod-broker init makes one)`,
    );
  }
  if (folder.key === undefined) {
    throw new UsageError(
      `Cannot trust '${dir}': its deno.json names no "pod.key"`,
    );
  }
  const publicKey = encodeBase64Url(
    await publicKeyFromSeed(await readKey(folder.key)),
  );
  await trustFolder(dir, folder.key);
  return print(
    `Trusted ${dir}: build and publish there sign with ${
      displayPath(folder.key)
    } (public key ${publicKey}) without --key\n`,
  );
}
