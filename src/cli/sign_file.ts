/**
 * Signing a file for `sign` and `publish`: what the file is now (a page,
 * or a pod signed by some key), the rule that a key never silently
 * replaces another one, and the signing itself, which always writes
 * `createdAt`.
 *
 * @module
 */

import { encodeBase64Url } from "../_util/encoding.ts";
import { oneLine } from "../_util/text.ts";
import { publicKeyFromSeed } from "../pod/ed25519.ts";
import { PodError } from "../pod/errors.ts";
import { parsePod } from "../pod/format.ts";
import { signPod, type SignPodOptions } from "../pod/sign.ts";
import { verifyPod } from "../pod/verify.ts";
import type { Input } from "./input.ts";
import { stderr } from "./io.ts";
import { UsageError } from "./usage_error.ts";

/** What a file's manifest slot holds, read without trusting it. */
export interface Signed {
  /** The key the manifest names (base64url), or null for a page never signed. */
  publicKey: string | null;
  /** The manifest's name, if it has one. */
  name?: string;
  /** Why the file, though signed, is not a valid pod; null when it is. */
  invalid: string | null;
}

/**
 * Reads what `bytes` are signed with: no manifest (a page), or a manifest
 * naming a key, valid or not.
 */
export async function signedState(bytes: Uint8Array): Promise<Signed> {
  let json: unknown;
  try {
    json = parsePod(bytes).json;
  } catch {
    return { publicKey: null, invalid: null }; // never signed (or an empty slot)
  }
  const { publicKey, name } =
    (typeof json === "object" && json !== null ? json : {}) as {
      publicKey?: unknown;
      name?: unknown;
    };
  if (typeof publicKey !== "string") return { publicKey: null, invalid: null };
  const invalid = await verifyPod(bytes).then(
    () => null,
    (error) => {
      if (!(error instanceof PodError)) throw error;
      return `${error.code}: ${error.message}`;
    },
  );
  return {
    publicKey,
    ...(typeof name === "string" ? { name } : {}),
    invalid,
  };
}

/** The flags that shape a signing. */
export interface SignFlags {
  /** `--name`: the manifest's name (else the old manifest's). */
  name?: string | undefined;
  /** `--new-owner`: a file signed by another key may be re-signed. */
  "new-owner"?: boolean | undefined;
  /** The name when neither `--name` nor the old manifest gives one. */
  keptName?: string | undefined;
}

/**
 * Signs the page `input` (read once by the caller: a pipe cannot be read
 * twice) with `seed`, after warning about what will break it on a broker.
 * The manifest gets the time of this signing as `createdAt`, and keeps its
 * old name (else `keptName`) unless `--name` is given. A file
 * signed by another key is refused unless `--new-owner` is given: the
 * pod's updates need the key that signed it, so changing it must be
 * meant.
 *
 * @returns The signed pod's bytes.
 * @throws {UsageError} For a file that cannot be a pod, or another key's
 * pod without `--new-owner`.
 */
export async function signFile(
  { path: input, bytes }: Input,
  seed: Uint8Array,
  flags: SignFlags,
): Promise<Uint8Array> {
  const before = await signedState(bytes);
  const key = encodeBase64Url(await publicKeyFromSeed(seed));
  if (
    before.publicKey !== null && before.publicKey !== key &&
    !flags["new-owner"]
  ) {
    throw new UsageError(
      `Cannot re-sign '${input}' with this key: it is signed by another key (${before.publicKey}), and only that key can update what it published; pass --new-owner to make this key the owner, or publish the file as signed without --key`,
    );
  }
  // Loaded here: the page checks use the HTML parser of `build`.
  const { pageWarnings } = await import("../bundler/check.ts");
  const { declarationWarnings } = await import("../bundler/permissions.ts");
  const warnings = [
    ...pageWarnings(input, bytes),
    ...declarationWarnings(input, bytes),
  ];
  for (const warning of warnings) {
    stderr(`pod-broker: warning: ${oneLine(warning)}\n`);
  }
  const options: SignPodOptions = { createdAt: true };
  const name = flags.name ?? before.name ?? flags.keptName;
  if (name !== undefined) options.name = name;
  try {
    return await signPod(bytes, seed, options);
  } catch (error) {
    if (!(error instanceof PodError)) throw error;
    throw new UsageError(
      `Cannot sign '${input}': ${error.code}: ${error.message}`,
    );
  }
}
