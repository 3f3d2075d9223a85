/**
 * The pod author's commands: `keygen`, `sign`, `verify`, and `publish`
 * (from src/cli/publish.ts); their `--help` is answered by `runCli`. A file
 * that is not a valid pod is reported on one line with its code and what to
 * do.
 *
 * @module
 */

import { writeFile } from "node:fs/promises";
import process from "node:process";
import { encodeBase64Url } from "../_util/encoding.ts";
import { generateKeyPair } from "../pod/ed25519.ts";
import { PodError } from "../pod/errors.ts";
import { encodePrivateKeyPem } from "../pod/keys.ts";
import { verifyPod } from "../pod/verify.ts";
import { oneLine } from "../_util/text.ts";
import { onePositional, parse, print, readKey, stderr } from "./io.ts";
import { readInput, readPage } from "./input.ts";
import { signFile } from "./sign_file.ts";
import { UsageError } from "./usage_error.ts";

/** `keygen [--out FILE]`: a fresh key as PKCS#8 PEM. */
export async function keygen(args: string[]): Promise<number> {
  const { values } = parse(args, { out: { type: "string" } }, false);
  const { seed, publicKey } = await generateKeyPair();
  const pem = encodePrivateKeyPem(seed);
  if (values.out === undefined) {
    // Standard output is the key file: the public key can only go aside.
    process.stdout.write(pem);
    stderr(`publicKey: ${encodeBase64Url(publicKey)}\n`);
    return 0;
  }
  await writeFile(values.out, pem, { mode: 0o600, flag: "wx" }).catch(
    (error) => {
      throw new UsageError(
        `Cannot write key to '${values.out}': ${error.code ?? error.message}`,
      );
    },
  );
  // The result on standard output (`pub=$(pod-broker keygen --out F)`),
  // what was done on standard error.
  stderr(
    `pod-broker: wrote a new private key to '${values.out}' (mode 0600)\n`,
  );
  process.stdout.write(`${encodeBase64Url(publicKey)}\n`);
  return 0;
}

/**
 * `sign --key FILE [--name N] [--new-owner] [--out FILE] POD.html`: always
 * writes `createdAt` (`--created-at` is still accepted).
 */
export async function signCommand(args: string[]): Promise<number> {
  const { values, positionals } = parse(args, {
    key: { type: "string" },
    name: { type: "string" },
    "created-at": { type: "boolean" },
    "new-owner": { type: "boolean" },
    out: { type: "string" },
  }, true);
  if (values.key === undefined) throw new UsageError("sign needs --key FILE");
  const input = onePositional(positionals, "sign");
  const seed = await readKey(values.key);
  const pod = await signFile(await readPage(input, "sign"), seed, values);
  if (values.out === undefined) process.stdout.write(pod);
  else {
    await writeFile(values.out, pod).catch((error) => {
      throw new UsageError(
        `Cannot write the pod to '${values.out}': ${
          error.code ?? error.message
        }`,
      );
    });
  }
  return 0;
}

/** `verify POD.html`: exit 0 valid, 1 not a valid pod. */
export async function verifyCommand(args: string[]): Promise<number> {
  const { positionals } = parse(args, {}, true);
  const input = onePositional(positionals, "verify");
  try {
    const { bytes } = await readInput(input);
    const { manifest, contentSha256 } = await verifyPod(bytes);
    // Loaded here: the declaration is read with the HTML parser.
    const { readDeclaration } = await import(
      "../serving/permission_declaration.ts"
    );
    const report = {
      valid: true,
      ownerPubkey: manifest.publicKey,
      contentSha256,
      name: manifest.name ?? null,
      createdAt: manifest.createdAt ?? null,
      permissions: readDeclaration(bytes).permissions,
    };
    return print(`${JSON.stringify(report, null, 2)}\n`);
  } catch (error) {
    if (!(error instanceof PodError)) throw error;
    const next = error.code === "manifest_missing"
      ? ": the page is not signed: sign it with pod-broker sign or build --key"
      : "";
    stderr(
      `pod-broker: ${
        oneLine(`${input}: ${error.code}: ${error.message}`)
      }${next}\n`,
    );
    return 1;
  }
}

export { publish } from "./publish.ts";
