/**
 * What each pod version is granted on its own origin, read once per
 * version: the features it declares (`permission_declaration.ts`, loaded
 * with the HTML parser for the first pod whose head mentions
 * `pod-permissions`) that the operator allows.
 *
 * @module
 */

import { Lru } from "../_util/lru.ts";
import { mentionsDeclaration, type PodPermission } from "./permissions.ts";

/** The pod a {@linkcode PodPermissionCache} reads. */
export interface DeclaringPod {
  /** Its blob's SHA-256: the cache key (it names the bytes). */
  sha256: string;
}

/** Options of {@linkcode PodPermissionCache}. */
export interface PodPermissionCacheOptions {
  /** What the operator allows (`podPermissions`): the most a pod gets. */
  allowed: readonly PodPermission[];
  /**
   * Pod versions whose grants are kept; the least recently used go first.
   * @default {1024}
   */
  maxEntries?: number;
}

/**
 * A broker's grants per pod version (declared and allowed), keyed by the
 * blob's SHA-256: each version's head is read once, and concurrent
 * requests for one version share that read. Kept only with a pod domain.
 *
 * @example Grant what is declared and allowed
 * ```ts
 * import assert from "node:assert/strict";
 * import { PodPermissionCache } from "./permission_cache.ts";
 *
 * const cache = new PodPermissionCache({ allowed: ["camera"] });
 * const html = '<head><meta name="pod-permissions" content="camera microphone">';
 * const head = () => Promise.resolve(new TextEncoder().encode(html));
 * assert.deepEqual(await cache.grantsOf({ sha256: "v1" }, head), ["camera"]);
 * ```
 */
export class PodPermissionCache {
  readonly #allowed: ReadonlySet<PodPermission>;
  readonly #entries: Lru<string, Promise<readonly PodPermission[] | null>>;

  /**
   * Makes an empty cache.
   *
   * @param options What the operator allows, and the cache's size.
   */
  constructor(options: PodPermissionCacheOptions) {
    this.#allowed = new Set(options.allowed);
    this.#entries = new Lru({ maxEntries: options.maxEntries ?? 1024 });
  }

  /** Whether the operator allows anything at all. */
  get grantsAny(): boolean {
    return this.#allowed.size > 0;
  }

  /**
   * The features `pod` is granted on its own origin: declared in its head
   * and allowed by the operator, in canonical order.
   *
   * @param pod The version's blob digest.
   * @param loadHead Reads the pod's first `DECLARATION_SCAN_BYTES` (or
   * more); null when the version is gone.
   * @returns The granted features, or null when `loadHead` found nothing.
   */
  async grantsOf(
    pod: DeclaringPod,
    loadHead: () => Promise<Uint8Array | null>,
  ): Promise<readonly PodPermission[] | null> {
    if (!this.grantsAny) return [];
    const held = this.#entries.get(pod.sha256);
    if (held !== undefined) return held;
    const pending = this.#read(loadHead);
    this.#entries.set(pod.sha256, pending);
    const forget = () => {
      if (this.#entries.get(pod.sha256) === pending) {
        this.#entries.delete(pod.sha256);
      }
    };
    try {
      const grants = await pending;
      if (grants === null) forget();
      return grants;
    } catch (error) {
      forget();
      throw error;
    }
  }

  async #read(
    loadHead: () => Promise<Uint8Array | null>,
  ): Promise<readonly PodPermission[] | null> {
    const head = await loadHead();
    if (head === null) return null;
    if (!mentionsDeclaration(head)) return Object.freeze([]);
    // The HTML parser is loaded for the first pod that declares anything.
    const { readDeclaration } = await import("./permission_declaration.ts");
    const declared = readDeclaration(head).permissions;
    return Object.freeze(
      declared.filter((token) => this.#allowed.has(token)),
    );
  }
}
