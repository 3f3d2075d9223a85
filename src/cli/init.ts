/**
 * The `init` command: a new pod folder, ready for `dev` and `build`. It
 * holds a page (`index.html`, `app.ts`, `style.css`: two tabs of it chat)
 * and a `deno.json` that maps `pod-broker/client` to the client `build`
 * bundles, with its types, so `deno check app.ts` passes in the folder.
 * The author key is made, or reused, outside the folder (see
 * `pod_folder.ts`), `deno.json` names it, and the folder is recorded as
 * one the user made (see `trusted_folders.ts`), so that `build` and
 * `publish` there sign with it.
 *
 * @module
 */

import { mkdir, readdir, writeFile } from "node:fs/promises";
import { basename, join, resolve } from "node:path";
import { encodeBase64Url } from "../_util/encoding.ts";
import { DEFAULT_CLIENT } from "../bundler/client_url.ts";
import { generateKeyPair, publicKeyFromSeed } from "../pod/ed25519.ts";
import { encodePrivateKeyPem } from "../pod/keys.ts";
import { parse, print, readKey } from "./io.ts";
import {
  CONFIG_FILE,
  DEFAULT_KEY_NAME,
  displayPath,
  keyDirectory,
} from "./pod_folder.ts";
import { UsageError } from "./usage_error.ts";
import { initFiles } from "./init_files.ts";
import { trustFolder } from "./trusted_folders.ts";

/**
 * `init [DIR] [--key FILE]`: writes the pod folder DIR (the current folder
 * by default), which must be empty or missing.
 *
 * @param args The arguments after `init`.
 * @returns 0; a non-empty DIR or a key that cannot be used is a
 * {@linkcode UsageError} (exit 2).
 */
export async function init(args: string[]): Promise<number> {
  const { values, positionals } = parse(args, {
    key: { type: "string" },
  }, true);
  if (positionals.length > 1) {
    throw new UsageError("init takes at most one DIR");
  }
  const dir = resolve(positionals[0] ?? ".");
  const entries = await readdir(dir).catch((error) => {
    if (error.code === "ENOENT") return [];
    throw new UsageError(`Cannot use '${dir}': ${error.code ?? error}`);
  });
  if (entries.length > 0) {
    throw new UsageError(
      `Cannot init '${dir}': it is not empty (init makes a new pod folder)`,
    );
  }
  const key = await authorKey(values.key);
  const name = podName(dir);
  await mkdir(dir, { recursive: true });
  const config = {
    pod: { key: displayPath(key.path), name },
    imports: { "pod-broker/client": DEFAULT_CLIENT.href },
    compilerOptions: { lib: ["dom", "dom.iterable", "esnext"] },
  };
  const files: Record<string, string> = {
    ...initFiles(name),
    [CONFIG_FILE]: `${JSON.stringify(config, null, 2)}\n`,
  };
  for (const [file, text] of Object.entries(files)) {
    await writeFile(join(dir, file), text, { flag: "wx" });
  }
  // Recorded outside the folder: only folders made here sign with the key.
  await trustFolder(dir, key.path);
  return print(
    `Made ${dir}: ${Object.keys(files).join(", ")}
Author key: ${displayPath(key.path)} (${
      key.made ? "made" : "reused"
    }; public key ${key.publicKey})
Next: cd ${dir} && pod-broker dev    (then open the printed URL in two tabs)
`,
  );
}

/** The author key: the one given, else the per-user one, made if missing. */
async function authorKey(
  given: string | undefined,
): Promise<{ path: string; made: boolean; publicKey: string }> {
  const path = resolve(given ?? join(keyDirectory(), DEFAULT_KEY_NAME));
  const publicKey = async (seed: Uint8Array) =>
    encodeBase64Url(await publicKeyFromSeed(seed));
  // (A key given cannot be inside the folder: the folder is empty.)
  if (given !== undefined) {
    return {
      path,
      made: false,
      publicKey: await publicKey(await readKey(path)),
    };
  }
  const { seed } = await generateKeyPair();
  await mkdir(keyDirectory(), { recursive: true, mode: 0o700 });
  const made = await writeFile(path, encodePrivateKeyPem(seed), {
    mode: 0o600,
    flag: "wx",
  }).then(() => true, (error) => {
    if (error.code === "EEXIST") return false;
    throw new UsageError(`Cannot write key '${path}': ${error.code ?? error}`);
  });
  return {
    path,
    made,
    publicKey: await publicKey(made ? seed : await readKey(path)),
  };
}

/** The folder's name as the pod's (letters, digits, spaces, `-`, `_`, `.`). */
function podName(dir: string): string {
  const name = basename(dir).replace(/[^\p{L}\p{N} ._-]/gu, "").trim();
  return [...name].slice(0, 60).join("") || "My pod";
}
