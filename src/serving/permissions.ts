/**
 * Powerful features a pod asks for (calls, screen share, clipboard): the
 * tokens a pod may declare in `<meta name="pod-permissions">`, and the
 * Permissions-Policy that grants them on a pod's own origin
 * (`permission_cache.ts` reads each pod version's declaration once).
 *
 * A pod asks (the declaration is in its signed HTML), the operator caps
 * (`podPermissions`), the browser prompts (a granted feature is
 * `feature=(self)`, the pod's own origin). The broker's host never grants:
 * a pod there has an opaque origin, which cannot use these features, and
 * no pod may prompt in the broker's name.
 *
 * The declaration is read by `permission_declaration.ts`, which loads the
 * HTML parser: only for a pod whose head mentions `pod-permissions` at all.
 *
 * @module
 */

/** The features a pod may declare, in the order headers and lists give them. */
export const POD_PERMISSIONS = [
  "camera",
  "microphone",
  "display-capture",
  "clipboard-write",
  "fullscreen",
  "screen-wake-lock",
  "picture-in-picture",
  "autoplay",
] as const;

/** One of {@linkcode POD_PERMISSIONS}. */
export type PodPermission = (typeof POD_PERMISSIONS)[number];

/** The `name` of the declaring element: `<meta name="pod-permissions">`. */
export const DECLARATION_NAME = "pod-permissions";

/**
 * Bytes of a pod read for its declaration: the declaration must be in the
 * document's head, within its first 64 KiB.
 */
export const DECLARATION_SCAN_BYTES: number = 64 * 1024;

/** Bytes the declaration's `content` may have; a longer one is ignored. */
export const MAX_DECLARATION_BYTES = 256;

/**
 * Whether `token` is one of {@linkcode POD_PERMISSIONS} (exactly: tokens
 * are lower case).
 *
 * @param token A declared token.
 * @returns True for a known token.
 */
export function isPodPermission(token: string): token is PodPermission {
  return (POD_PERMISSIONS as readonly string[]).includes(token);
}

/**
 * The tokens among `tokens` in the order of {@linkcode POD_PERMISSIONS},
 * each once.
 *
 * @param tokens Known tokens, in any order, maybe repeated.
 * @returns The canonical list.
 */
export function canonicalPermissions(
  tokens: Iterable<string>,
): PodPermission[] {
  const given = new Set(tokens);
  return POD_PERMISSIONS.filter((token) => given.has(token));
}

const NEEDLE = new TextEncoder().encode(DECLARATION_NAME);

/**
 * Whether the first {@linkcode DECLARATION_SCAN_BYTES} of a pod name the
 * declaration at all (ASCII case-insensitively): without it, the pod
 * declares nothing and needs no parse.
 *
 * @param bytes The pod, or its first bytes.
 * @returns False when the pod surely declares nothing.
 */
export function mentionsDeclaration(bytes: Uint8Array): boolean {
  const end = Math.min(bytes.length, DECLARATION_SCAN_BYTES) - NEEDLE.length;
  search: for (let at = 0; at <= end; at++) {
    for (let i = 0; i < NEEDLE.length; i++) {
      // Lower-case ASCII letters only: the needle is lower case.
      const byte = bytes[at + i]!;
      if ((byte >= 0x41 && byte <= 0x5a ? byte | 0x20 : byte) !== NEEDLE[i]) {
        continue search;
      }
    }
    return true;
  }
  return false;
}

/**
 * The Permissions-Policy of a pod. On the broker's host (`granted` null),
 * `base` as it is. On a pod's own origin, each granted feature's member of
 * `base` is replaced by `feature=(self)` (or added), and every other
 * declarable feature is denied (`feature=()` is added where `base` does
 * not name it): there, a pod gets no powerful feature it did not declare.
 *
 * @param base The policy that denies (the default, or the operator's).
 * @param granted The features to grant on a pod's own origin, or null on
 * the broker's host.
 * @returns The policy text.
 *
 * @example Grant the camera
 * ```ts
 * import assert from "node:assert/strict";
 * import { withGrants } from "./permissions.ts";
 *
 * assert.equal(
 *   withGrants("camera=(), usb=()", ["camera", "microphone"]),
 *   "usb=(), display-capture=(), clipboard-write=(), fullscreen=(), " +
 *     "screen-wake-lock=(), picture-in-picture=(), autoplay=(), " +
 *     "camera=(self), microphone=(self)",
 * );
 * assert.equal(withGrants("camera=()", null), "camera=()");
 * ```
 */
export function withGrants(
  base: string,
  granted: readonly PodPermission[] | null,
): string {
  if (granted === null) return base;
  const members = base.split(",").map((member) => member.trim())
    .filter((member) => member !== "");
  const named = new Set(
    members.map((member) => member.split("=")[0]!.trim().toLowerCase()),
  );
  const kept = members.filter((member) =>
    !(granted as readonly string[]).includes(
      member.split("=")[0]!.trim().toLowerCase(),
    )
  );
  const denied = POD_PERMISSIONS.filter((feature) =>
    !named.has(feature) && !granted.includes(feature)
  ).map((feature) => `${feature}=()`);
  return [
    ...kept,
    ...denied,
    ...granted.map((feature) => `${feature}=(self)`),
  ].join(", ");
}
