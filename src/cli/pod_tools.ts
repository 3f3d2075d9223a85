/**
 * The pod author's commands: `keygen`, `sign`, `verify` and `publish` (an
 * upload, or with `--update ID` a replacement; their `--help` is answered by
 * `runCli`). A file that is not a valid pod is
 * reported on one line with its code and what to do.
 *
 * @module
 */

import { writeFile } from "node:fs/promises";
import process from "node:process";
import { encodeBase64Url } from "../_util/encoding.ts";
import { isPodId } from "../_util/id.ts";
import { generateKeyPair } from "../pod/ed25519.ts";
import { PodError } from "../pod/errors.ts";
import { parsePod } from "../pod/format.ts";
import { encodePrivateKeyPem } from "../pod/keys.ts";
import { signPod, type SignPodOptions } from "../pod/sign.ts";
import { verifyPod } from "../pod/verify.ts";
import { oneLine } from "../_util/text.ts";
import {
  onePositional,
  parse,
  print,
  readBytes,
  readKey,
  stderr,
} from "./io.ts";
import { UsageError } from "./usage_error.ts";

/** `keygen [--out FILE]`: a fresh key as PKCS#8 PEM. */
export async function keygen(args: string[]): Promise<number> {
  const { values } = parse(args, { out: { type: "string" } }, false);
  const { seed, publicKey } = await generateKeyPair();
  const pem = encodePrivateKeyPem(seed);
  if (values.out === undefined) {
    process.stdout.write(pem);
  } else {
    await writeFile(values.out, pem, { mode: 0o600, flag: "wx" }).catch(
      (error) => {
        throw new UsageError(
          `Cannot write key to '${values.out}': ${error.code ?? error.message}`,
        );
      },
    );
  }
  stderr(`publicKey: ${encodeBase64Url(publicKey)}\n`);
  return 0;
}

/** `sign --key FILE [--name N] [--created-at] [--out FILE] POD.html`. */
export async function signCommand(args: string[]): Promise<number> {
  const { values, positionals } = parse(args, {
    key: { type: "string" },
    name: { type: "string" },
    "created-at": { type: "boolean" },
    out: { type: "string" },
  }, true);
  if (values.key === undefined) throw new UsageError("sign needs --key FILE");
  const input = onePositional(positionals, "sign");
  const seed = await readKey(values.key);
  const pod = await signFile(input, seed, values);
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
    const bytes = await readBytes(input);
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

/**
 * `publish --broker URL [--key FILE] [--name N] [--update ID] POD.html`:
 * sign and upload. With `--update ID` it replaces pod ID (`PUT /ID`): with
 * `--key` the file is re-signed with a fresh `createdAt`, keeping the name
 * (the file's manifest's, else the stored pod's); without, the file is
 * sent as signed.
 */
export async function publish(args: string[]): Promise<number> {
  const { values, positionals } = parse(args, {
    broker: { type: "string" },
    key: { type: "string" },
    name: { type: "string" },
    "created-at": { type: "boolean" },
    update: { type: "string" },
  }, true);
  if (values.broker === undefined) {
    throw new UsageError("publish needs --broker URL");
  }
  const update = values.update;
  if (update !== undefined && !isPodId(update)) {
    throw new UsageError(`Cannot use --update '${update}': not a pod id`);
  }
  const input = onePositional(positionals, "publish");
  let base: URL;
  try {
    base = new URL(
      values.broker.endsWith("/") ? values.broker : `${values.broker}/`,
    );
  } catch {
    throw new UsageError(`Cannot use --broker '${values.broker}': not a URL`);
  }
  const endpoint = new URL(update ?? "pods", base);
  let pod: Uint8Array;
  if (update !== undefined) {
    pod = values.key === undefined
      ? await readBytes(input)
      : await signFile(input, await readKey(values.key), {
        name: values.name ?? await keptName(input, base, update),
        "created-at": true,
      });
  } else {
    const seed = values.key === undefined
      ? (await generateKeyPair()).seed
      : await readKey(values.key);
    pod = await signFile(input, seed, values);
  }
  let response: Response;
  try {
    response = await fetch(endpoint, {
      method: update === undefined ? "POST" : "PUT",
      headers: { "Content-Type": "text/html; charset=utf-8" },
      body: pod as Uint8Array<ArrayBuffer>,
    });
  } catch (error) {
    throw new UsageError(
      `cannot reach ${endpoint.origin}: is the broker running? (${
        networkCode(error)
      })`,
    );
  }
  const body = await response.json().catch(() => null) as
    | { url?: string; code?: string; detail?: string }
    | null;
  if (!response.ok || body?.url === undefined) {
    const reason = body?.code
      ? `${body.code}: ${body.detail}`
      : `HTTP ${response.status}`;
    const what = update === undefined ? "upload" : "update";
    stderr(`pod-broker: ${oneLine(`${what} refused: ${reason}`)}\n`);
    return 1;
  }
  if (update === undefined && values.key === undefined) {
    stderr(
      "pod-broker: signed with a fresh key (pass --key FILE to keep one)\n",
    );
  }
  return print(`${body.url}\n`);
}

/** The name an update keeps: the file's manifest's, else the stored pod's. */
async function keptName(
  input: string,
  base: URL,
  id: string,
): Promise<string | undefined> {
  const signed = await verifyPod(await readBytes(input)).catch(() => null);
  if (signed?.manifest.name !== undefined) return signed.manifest.name;
  const meta = await fetch(new URL(`${id}/meta`, base)).catch(() => null);
  const body = await meta?.json().catch(() => null) as
    | { name?: unknown }
    | null
    | undefined;
  return typeof body?.name === "string" ? body.name : undefined;
}

/** The system's code for a failed fetch (`ECONNREFUSED`), or its reason. */
function networkCode(error: unknown): string {
  // Node puts the socket's error (with its code) in `cause`; Deno's cause
  // says it in words.
  const cause = (error as { cause?: { code?: unknown; message?: unknown } })
    .cause;
  if (typeof cause?.code === "string") return cause.code;
  const text = String(cause?.message ?? (error as Error).message ?? error);
  if (/Connection refused/i.test(text)) return "ECONNREFUSED";
  if (/dns error|Name or service not known/i.test(text)) return "ENOTFOUND";
  return text.split("\n")[0]!.slice(0, 200);
}

/**
 * Signs the file at `input`, after warning about what will break it on a
 * broker; a file that cannot be a pod is a usage error. A page signed
 * before keeps its name unless `--name` is given, and a time it had
 * becomes the time of this signing.
 */
async function signFile(
  input: string,
  seed: Uint8Array,
  values: { name?: string | undefined; "created-at"?: boolean | undefined },
): Promise<Uint8Array> {
  const bytes = await readBytes(input);
  // Loaded here: the page checks use the HTML parser of `build`.
  const { pageWarnings } = await import("../build/check.ts");
  const { declarationWarnings } = await import("../build/permissions.ts");
  const warnings = [
    ...pageWarnings(input, bytes),
    ...declarationWarnings(input, bytes),
  ];
  for (const warning of warnings) {
    stderr(`pod-broker: warning: ${oneLine(warning)}\n`);
  }
  try {
    return await signPod(bytes, seed, signOptions(bytes, values));
  } catch (error) {
    if (!(error instanceof PodError)) throw error;
    throw new UsageError(
      `Cannot sign '${input}': ${error.code}: ${error.message}`,
    );
  }
}

/** The manifest members to sign: the flags', else the old manifest's. */
function signOptions(
  bytes: Uint8Array,
  values: { name?: string | undefined; "created-at"?: boolean | undefined },
): SignPodOptions {
  const before = previousManifest(bytes);
  const options: SignPodOptions = {};
  const name = values.name ?? before.name;
  if (name !== undefined) options.name = name;
  if (values["created-at"] || before.createdAt) options.createdAt = true;
  return options;
}

/** The name and time of the manifest a page was signed with before, if any. */
function previousManifest(
  bytes: Uint8Array,
): { name?: string; createdAt?: boolean } {
  let json: unknown;
  try {
    json = parsePod(bytes).json;
  } catch {
    return {}; // never signed, or a slot signing will report
  }
  if (typeof json !== "object" || json === null) return {};
  const { name, createdAt } = json as { name?: unknown; createdAt?: unknown };
  return {
    ...(typeof name === "string" ? { name } : {}),
    ...(createdAt === undefined ? {} : { createdAt: true }),
  };
}
