/**
 * Updates for long-lived pods: which version of its pod a page runs, and
 * whether the broker serves another one now (the author published an update
 * with `PUT /:id`, at the same URL).
 *
 * A page cannot read the headers it was served with (its `ETag` among
 * them), so the version it runs is read from its own signed manifest: the
 * `contentSha256` and `createdAt` that `/meta` also reports, and that every
 * update changes (an update must be signed later). The current version
 * comes from the pod's `/meta` on the broker's host (CORS-open, and `'self'`
 * in the pod's `connect-src`), or, on a pod's own origin (`podDomain`),
 * from the manifest of the pod that `/` serves now, read until the manifest
 * and no further.
 *
 * ```js ignore
 * import { checkForUpdate } from "pod-broker/client";
 *
 * setInterval(async () => {
 *   if (await checkForUpdate()) banner.hidden = false; // "new version available"
 * }, 60_000);
 * ```
 *
 * @module
 */

/** One version of a pod, as its signed manifest names it. */
export interface PodVersion {
  /** SHA-256 of the pod without its manifest (base64url). */
  contentSha256: string;
  /** When this version was signed (RFC 3339), or null. */
  createdAt: string | null;
}

const ID = "__POD_MANIFEST_B64";
// The end of the slot's opening tag. Not the whole tag: this code is
// inlined into pods, and a pod holds exactly one manifest slot.
const OPENED = `${ID}">`;
/** The most of `/` read to find the manifest (it is in the `<head>`). */
const MAX_SCAN = 1 << 20;

/**
 * The version this page runs, from its own manifest.
 *
 * @returns The version, or null when the page holds no readable manifest.
 */
export function servedVersion(): PodVersion | null {
  const slot = document.getElementById(ID);
  return slot ? parse(slot.textContent ?? "") : null;
}

/**
 * Asks the broker which version of this pod it serves now.
 *
 * @param metaUrl The pod's `/meta`. By default, this page's URL plus
 * `/meta`, or on a pod's own origin (which answers nothing but `/` and
 * `/signal`) the top of `/`, read up to its manifest; that read counts as a
 * view of the pod.
 * @returns The version served now, when it is not the one this page runs;
 * null when it is.
 * @throws {Error} When this page has no manifest, or the broker cannot say
 * (unreachable, or the pod is gone: `404` or `410`).
 */
export async function checkForUpdate(
  metaUrl?: string,
): Promise<PodVersion | null> {
  const served = servedVersion();
  if (!served) throw new Error("Cannot check for updates: no pod manifest");
  const { origin, pathname } = location;
  const own = pathname === "/" && !metaUrl;
  const response = await fetch(
    own ? "/" : metaUrl ?? `${origin}${pathname.replace(/\/$/, "")}/meta`,
    { cache: "no-store" },
  );
  if (!response.ok) {
    await response.body?.cancel();
    throw new Error(`Cannot check for updates: HTTP ${response.status}`);
  }
  const current = own
    ? await manifestOf(response)
    : versionOf(await response.json());
  if (!current?.contentSha256) {
    throw new Error("Cannot check for updates: no version in the answer");
  }
  return current.contentSha256 === served.contentSha256 &&
      current.createdAt === served.createdAt
    ? null
    : current;
}

// The manifest of a served pod: its text up to the end of the slot.
async function manifestOf(response: Response): Promise<PodVersion | null> {
  const reader = response.body!.pipeThrough(new TextDecoderStream())
    .getReader();
  let text = "";
  try {
    while (text.length < MAX_SCAN) {
      const { value, done } = await reader.read();
      if (done) break;
      text += value;
      const at = text.indexOf(OPENED);
      const end = at < 0 ? -1 : text.indexOf("<", at + OPENED.length);
      if (end > 0) return parse(text.slice(at + OPENED.length, end));
    }
    return null;
  } finally {
    reader.cancel().catch(() => {});
  }
}

// A manifest slot's payload (base64 of the manifest's JSON).
function parse(payload: string): PodVersion | null {
  try {
    const bytes = Uint8Array.from(atob(payload.trim()), (c) => c.charCodeAt(0));
    return versionOf(JSON.parse(new TextDecoder().decode(bytes)));
  } catch {
    return null;
  }
}

// The version a manifest or `/meta` names (both have these two fields).
function versionOf(
  json: { contentSha256?: unknown; createdAt?: string | null } | null,
): PodVersion | null {
  return json?.contentSha256
    ? {
      contentSha256: String(json.contentSha256),
      createdAt: json.createdAt ?? null,
    }
    : null;
}
