// Pods for the contract cases: signed, uploaded and updated, and the checks
// of what the broker answers.
// Runtime-neutral, like every file here: see _suite.ts.
import assert from "node:assert/strict";
import type { SignPodOptions } from "../../src/core.ts";
import type { ContractApi } from "./_suite.ts";

/** A small HTML document. */
export const SAMPLE_HTML =
  "<!doctype html>\n<html><head><title>Test pod</title></head><body><p>hello</p></body></html>\n";

/** The sandbox policy every pod response carries first. */
export const SANDBOX_POLICY =
  "sandbox allow-scripts allow-forms allow-modals allow-downloads allow-popups allow-popups-to-escape-sandbox; object-src 'none'; base-uri 'none'";

/** A fresh Ed25519 seed. */
export async function newSeed(api: ContractApi): Promise<Uint8Array> {
  return (await api.generateKeyPair()).seed;
}

/** A signed copy of `html` (SAMPLE_HTML by default) with a fresh key. */
export async function signedPod(
  api: ContractApi,
  html: string | Uint8Array = SAMPLE_HTML,
  options: SignPodOptions = {},
  seed?: Uint8Array,
): Promise<Uint8Array<ArrayBuffer>> {
  const pod = await api.signPod(html, seed ?? await newSeed(api), options);
  return new Uint8Array(pod);
}

/** Asserts each header of `expected` on `response` (null: absent). */
export function assertHeaders(
  response: Response,
  expected: Record<string, string | null>,
): void {
  for (const [name, value] of Object.entries(expected)) {
    assert.equal(response.headers.get(name), value, name);
  }
}

/** POSTs `body` to /pods as text/html. */
export function upload(
  url: string,
  body: BodyInit | null,
  headers: HeadersInit = { "Content-Type": "text/html; charset=utf-8" },
): Promise<Response> {
  return fetch(`${url}/pods`, { method: "POST", headers, body });
}

/** A SHA-256 in base64url that names no stored version. */
export const NO_VERSION = "A".repeat(43);

/**
 * The update headers of `seed` for replacing the version of pod `id`
 * stored now (from its /meta, or `replaces` when given) with `pod`:
 * `Pod-Update-Signature` and `Pod-Update-Replaces`. A pod with no readable
 * manifest gets a signature of a made-up content, so that the broker's own
 * refusal of the body shows.
 */
export async function updateHeaders(
  api: ContractApi,
  url: string,
  id: string,
  pod: Uint8Array,
  seed: Uint8Array,
  replaces?: string,
): Promise<Record<string, string>> {
  if (replaces === undefined) {
    const meta = await fetch(`${url}/${id}/meta`);
    const body = await meta.json().catch(() => null);
    replaces = meta.ok ? body.sha256 as string : NO_VERSION;
  }
  let contentSha256 = NO_VERSION;
  try {
    const json = api.parsePod(pod).json as { contentSha256?: unknown };
    if (typeof json.contentSha256 === "string") {
      contentSha256 = json.contentSha256;
    }
  } catch {
    // not a pod: any signature of the right shape
  }
  const statement = {
    id: /^[A-Za-z0-9]{12}$/.test(id) ? id : "AAAAAAAAAAAA",
    replaces,
    contentSha256,
  };
  const signature = await api.signUpdate(statement, seed).catch(() =>
    api.signUpdate({ ...statement, contentSha256: NO_VERSION }, seed)
  );
  return {
    "Pod-Update-Signature": signature,
    "Pod-Update-Replaces": replaces,
  };
}

/**
 * PUTs `pod` to /ID as text/html with `seed`'s update headers (see
 * {@linkcode updateHeaders}); `headers` are added, or replace them.
 */
export async function putUpdate(
  api: ContractApi,
  url: string,
  id: string,
  pod: Uint8Array<ArrayBuffer>,
  seed: Uint8Array,
  headers: Record<string, string> = {},
): Promise<Response> {
  return await fetch(`${url}/${id}`, {
    method: "PUT",
    headers: {
      "Content-Type": "text/html; charset=utf-8",
      ...await updateHeaders(api, url, id, pod, seed),
      ...headers,
    },
    body: pod,
  });
}

/** Replaces the first occurrence of ASCII `from` with `to` in the bytes of `pod`. */
export function replaceText(
  pod: Uint8Array,
  from: string,
  to: string,
): Uint8Array<ArrayBuffer> {
  const needle = new TextEncoder().encode(from);
  let at = -1;
  for (let i = 0; i + needle.length <= pod.length && at === -1; i++) {
    if (needle.every((byte, j) => pod[i + j] === byte)) at = i;
  }
  if (at === -1) throw new Error(`Cannot find '${from}' in the pod`);
  const replacement = new TextEncoder().encode(to);
  const out = new Uint8Array(pod.length - needle.length + replacement.length);
  out.set(pod.subarray(0, at));
  out.set(replacement, at);
  out.set(pod.subarray(at + needle.length), at + replacement.length);
  return out;
}

/** Whether two byte arrays are equal (fast enough for 50 MiB). */
export function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/** Checks the RFC 9457 shape of a problem response and returns its body. */
export async function problemOf(
  response: Response,
): Promise<Record<string, unknown>> {
  assert.equal(
    response.headers.get("Content-Type"),
    "application/problem+json",
  );
  const body = await response.json();
  assert.equal(body.status, response.status);
  assert.equal(body.type, "about:blank");
  assert.equal(typeof body.title, "string");
  assert.equal(typeof body.detail, "string");
  return body;
}

/** Checks that `response` is a problem with `status` and `code`. */
export async function assertProblem(
  response: Response,
  status: number,
  code: string,
): Promise<void> {
  assert.equal(response.status, status, `expected ${status} ${code}`);
  assert.equal((await problemOf(response)).code, code);
}
