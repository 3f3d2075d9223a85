/**
 * `pod-broker publish`: upload a pod (`POST /pods`), or with `--update ID`
 * replace pod ID (`PUT /ID`, with the owner's signature of the update
 * statement). A key is never lost on the way: a signed file is sent as it
 * is unless `--key` re-signs it, another key than the file's needs
 * `--new-owner`, and an update needs the key. A webxdc app (`APP.xdc`) is
 * built first as `import` builds it (`import.ts`), then signed and sent as
 * a page never signed, named by its manifest unless `--name` is given.
 *
 * @module
 */

import { dirname, resolve } from "node:path";
import { isPodId } from "../_util/id.ts";
import { oneLine } from "../_util/text.ts";
import { generateKeyPair } from "../pod/ed25519.ts";
import {
  signUpdate,
  UPDATE_REPLACES_HEADER,
  UPDATE_SIGNATURE_HEADER,
} from "../pod/update.ts";
import { verifyPod } from "../pod/verify.ts";
import { isXdcPath } from "../bundler/xdc.ts";
import { type Input, readPage } from "./input.ts";
import { onePositional, parse, print, readKey, stderr } from "./io.ts";
import { findPodFolder } from "./pod_folder.ts";
import { folderKey } from "./trusted_folders.ts";
import { signedState, signFile } from "./sign_file.ts";
import { UsageError } from "./usage_error.ts";

/** The flags of `publish`, and the name a webxdc app's manifest gives. */
type PublishFlags = {
  key?: string | undefined;
  name?: string | undefined;
  "new-owner"?: boolean | undefined;
  keptName?: string | undefined;
};

/**
 * `publish --broker URL [--key FILE] [--name N] [--new-owner] [--update ID]
 * POD.html|APP.xdc`: prints the pod's URL (exit 0), or the broker's
 * refusal (exit 1); bad usage, and a webxdc app that `import` refuses, are
 * exit 2 before anything is uploaded.
 */
export async function publish(args: string[]): Promise<number> {
  const { values, positionals } = parse(args, {
    broker: { type: "string" },
    key: { type: "string" },
    name: { type: "string" },
    // Accepted as before; every signing writes createdAt now.
    "created-at": { type: "boolean" },
    "new-owner": { type: "boolean" },
    update: { type: "string" },
  }, true);
  if (values.broker === undefined) {
    throw new UsageError("publish needs --broker URL");
  }
  const update = values.update;
  if (update !== undefined && !isPodId(update)) {
    throw new UsageError(`Cannot use --update '${update}': not a pod id`);
  }
  const base = brokerUrl(values.broker);
  const read = await pageToPublish(onePositional(positionals, "publish"));
  if (typeof read === "number") return read;
  const { input, name } = read;
  const flags: PublishFlags = { ...values, keptName: name };
  // The key a pod folder's deno.json names, if the user vouched for that
  // folder (init or trust), signs where a key is needed and none is given:
  // a page never signed, and an update. Read only then.
  const keyOfFolder = async () =>
    values.key ?? await folderKey(
      input.path === "-"
        ? undefined
        : await findPodFolder(dirname(resolve(input.path))),
    );
  if (update === undefined) {
    return await upload(input, base, flags, keyOfFolder);
  }
  const key = await keyOfFolder();
  if (key === undefined) {
    throw new UsageError(
      `Cannot update pod '${update}' without --key FILE: the key that published it signs the statement that binds the new version to this pod`,
    );
  }
  return await replace(input, base, update, key, flags);
}

/**
 * The page to publish: a file read once, or a webxdc app built as `import`
 * builds it (with its manifest's name); a refused app is its exit code.
 */
async function pageToPublish(
  path: string,
): Promise<{ input: Input; name?: string | undefined } | number> {
  if (!isXdcPath(path)) return { input: await readPage(path, "publish") };
  // Loaded only for an app: the import builds with the bundler.
  return await (await import("./import.ts")).importedPage(path);
}

/**
 * `POST /pods`: the file as signed, or signed now (with `--key`, else a
 * page never signed with its folder's key, else with a fresh one).
 */
async function upload(
  input: Input,
  base: URL,
  flags: PublishFlags,
  keyOfFolder: () => Promise<string | undefined>,
): Promise<number> {
  let pod = flags.key === undefined
    ? await asSigned(input, flags)
    : await signFile(input, await readKey(flags.key), flags);
  let fresh = false;
  if (pod === null) {
    const key = await keyOfFolder();
    fresh = key === undefined;
    const seed = key === undefined
      ? (await generateKeyPair()).seed
      : await readKey(key);
    pod = await signFile(input, seed, flags);
  }
  const body = await send(new URL("pods", base), "POST", pod, {}, "upload");
  if (body === null) return 1;
  if (fresh) {
    stderr(
      "pod-broker: signed with a fresh key (pass --key FILE to keep one)\n",
    );
  }
  return print(`${body.url}\n`);
}

/**
 * The bytes of a file signed already, to send as they are; null for a
 * page never signed (it is signed with a fresh key).
 *
 * @throws {UsageError} For a signed file that no longer verifies, or
 * `--name` without the key to sign it.
 */
async function asSigned(
  { path, bytes }: Input,
  flags: PublishFlags,
): Promise<Uint8Array | null> {
  const state = await signedState(bytes);
  if (state.publicKey === null) return null;
  if (state.invalid !== null) {
    throw new UsageError(
      `Cannot publish '${path}' as signed: ${state.invalid}; sign it again with --key FILE`,
    );
  }
  if (flags.name !== undefined) {
    throw new UsageError(
      `Cannot set --name of '${path}' without --key FILE: it is signed, and its name is part of what was signed`,
    );
  }
  return bytes;
}

/**
 * `PUT /ID`: the file re-signed with the owner's key (a fresh `createdAt`,
 * the name kept), and the update statement signed for the version `/meta`
 * says is stored now.
 */
async function replace(
  input: Input,
  base: URL,
  id: string,
  keyFile: string,
  flags: PublishFlags,
): Promise<number> {
  const seed = await readKey(keyFile);
  const meta = await storedVersion(base, id);
  if (meta === null) return 1;
  const pod = await signFile(input, seed, {
    ...flags,
    ...(flags.name === undefined && meta.name !== null
      ? { keptName: meta.name }
      : {}),
  });
  const { contentSha256 } = await verifyPod(pod);
  const signature = await signUpdate(
    { id, replaces: meta.sha256, contentSha256 },
    seed,
  );
  const body = await send(new URL(id, base), "PUT", pod, {
    [UPDATE_SIGNATURE_HEADER]: signature,
    [UPDATE_REPLACES_HEADER]: meta.sha256,
  }, "update");
  return body === null ? 1 : print(`${body.url}\n`);
}

/**
 * The stored version of `id` from its `/meta` (the `sha256` an update
 * names, and the name it keeps), or null after saying why it is refused.
 */
async function storedVersion(
  base: URL,
  id: string,
): Promise<{ sha256: string; name: string | null } | null> {
  const endpoint = new URL(`${id}/meta`, base);
  // No cache: the command line's fetch keeps none.
  const response = await reach(endpoint, {});
  const body = await response.json().catch(() => null) as
    | { sha256?: unknown; name?: unknown; code?: string; detail?: string }
    | null;
  if (!response.ok || typeof body?.sha256 !== "string") {
    refused("update", response.status, body);
    return null;
  }
  return {
    sha256: body.sha256,
    name: typeof body.name === "string" ? body.name : null,
  };
}

/** Sends the pod; the answer's body, or null after saying why it was refused. */
async function send(
  endpoint: URL,
  method: "POST" | "PUT",
  pod: Uint8Array,
  headers: Record<string, string>,
  what: string,
): Promise<{ url: string } | null> {
  const response = await reach(endpoint, {
    method,
    headers: { "Content-Type": "text/html; charset=utf-8", ...headers },
    body: pod as Uint8Array<ArrayBuffer>,
  });
  const body = await response.json().catch(() => null) as
    | { url?: string; code?: string; detail?: string }
    | null;
  if (!response.ok || body?.url === undefined) {
    refused(what, response.status, body);
    return null;
  }
  return { url: body.url };
}

/** `fetch`, with an unreachable broker as a {@linkcode UsageError}. */
async function reach(endpoint: URL, init: RequestInit): Promise<Response> {
  try {
    return await fetch(endpoint, init);
  } catch (error) {
    throw unreachable(endpoint, error);
  }
}

/**
 * Why a broker could not be reached, in one line: a certificate the
 * runtime does not trust (a private CA) says how to trust it, since
 * "is the broker running?" would send the operator the wrong way.
 */
function unreachable(endpoint: URL, error: unknown): UsageError {
  const code = networkCode(error);
  if (/certificate|CERT|SELF_SIGNED|UNABLE_TO_(VERIFY|GET_ISSUER)/.test(code)) {
    return new UsageError(
      `cannot trust the TLS certificate of ${endpoint.origin} (${code}): ` +
        "for a private CA, give its certificate with DENO_CERT=ca.pem or " +
        "deno run --cert ca.pem (Node: NODE_EXTRA_CA_CERTS=ca.pem)",
    );
  }
  return new UsageError(
    `cannot reach ${endpoint.origin}: is the broker running? (${code})`,
  );
}

/** Says on one line why the broker refused. */
function refused(
  what: string,
  status: number,
  body: { code?: string; detail?: string } | null,
): void {
  const reason = body?.code ? `${body.code}: ${body.detail}` : `HTTP ${status}`;
  stderr(`pod-broker: ${oneLine(`${what} refused: ${reason}`)}\n`);
}

/** The broker's base URL, with a trailing slash. */
function brokerUrl(broker: string): URL {
  try {
    return new URL(broker.endsWith("/") ? broker : `${broker}/`);
  } catch {
    throw new UsageError(`Cannot use --broker '${broker}': not a URL`);
  }
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
  const certificate = /invalid peer certificate: [^\n]*/.exec(text);
  if (certificate !== null) return certificate[0].slice(0, 200);
  return text.split("\n")[0]!.slice(0, 200);
}
