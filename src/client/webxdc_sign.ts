/**
 * Signatures of webxdc updates (Ed25519, Web Crypto): each update is signed
 * by its author, so any peer may relay it and no peer can forge or alter
 * one. What is signed names the instance, so an update cannot be carried
 * into another instance.
 *
 * @module
 */

import type { SignedUpdate } from "./webxdc_log.ts";

const ED25519 = { name: "Ed25519" };
const encoder = new TextEncoder();

/** base64url without padding. */
export function toBase64Url(bytes: Uint8Array): string {
  let text = "";
  for (const byte of bytes) text += String.fromCharCode(byte);
  return btoa(text).replaceAll("+", "-").replaceAll("/", "_").replace(
    /=+$/,
    "",
  );
}

/** The bytes of base64url text; undefined when it is not base64url. */
export function fromBase64Url(text: string): Uint8Array | undefined {
  if (!/^[A-Za-z0-9_-]*$/.test(text)) return undefined;
  try {
    const binary = atob(text.replaceAll("-", "+").replaceAll("_", "/"));
    return Uint8Array.from(binary, (c) => c.charCodeAt(0));
  } catch {
    return undefined;
  }
}

/** The bytes an update's signature covers. */
function signedBytes(
  instance: string,
  update: { a: string; n: number; b: string },
): Uint8Array<ArrayBuffer> {
  return encoder.encode(
    JSON.stringify(["webxdc-update/1", instance, update.a, update.n, update.b]),
  );
}

/** An author: a key pair and its public key as the author id. */
export interface Author {
  /** The key pair (the private key need not be extractable). */
  keys: CryptoKeyPair;
  /** The base64url public key. */
  id: string;
}

/** A fresh author, its private key not extractable (it may be stored in IndexedDB). */
export async function newAuthor(): Promise<Author> {
  const keys = await crypto.subtle.generateKey(ED25519, false, [
    "sign",
    "verify",
  ]) as CryptoKeyPair;
  return { keys, id: await authorId(keys) };
}

/** The author id of a key pair. */
export async function authorId(keys: CryptoKeyPair): Promise<string> {
  const raw = await crypto.subtle.exportKey("raw", keys.publicKey);
  return toBase64Url(new Uint8Array(raw));
}

/**
 * Signs an update.
 *
 * @param instance The app instance it belongs to.
 * @param author Its author.
 * @param update Its sequence number and body.
 * @returns The signature, base64url.
 */
export async function signUpdate(
  instance: string,
  author: Author,
  update: { a: string; n: number; b: string },
): Promise<string> {
  const signature = await crypto.subtle.sign(
    ED25519,
    author.keys.privateKey,
    signedBytes(instance, update),
  );
  return toBase64Url(new Uint8Array(signature));
}

/** Checks updates' signatures; keeps the public keys it imported. */
export class Verifier {
  /** The app instance the updates must be signed for. */
  readonly instance: string;
  #keys = new Map<string, Promise<CryptoKey | undefined>>();

  /**
   * A verifier for one instance's updates.
   *
   * @param instance The app instance the updates must be signed for.
   */
  constructor(instance: string) {
    this.instance = instance;
  }

  /**
   * Whether the update's signature is its author's, for this instance.
   *
   * @param update A well-formed update.
   */
  async verify(update: SignedUpdate): Promise<boolean> {
    const signature = fromBase64Url(update.s);
    if (!signature || signature.length !== 64) return false;
    const key = await this.#key(update.a);
    if (!key) return false;
    try {
      return await crypto.subtle.verify(
        ED25519,
        key,
        new Uint8Array(signature),
        signedBytes(this.instance, update),
      );
    } catch {
      return false;
    }
  }

  #key(author: string): Promise<CryptoKey | undefined> {
    let key = this.#keys.get(author);
    if (!key) {
      const raw = fromBase64Url(author);
      key = raw?.length === 32
        ? crypto.subtle.importKey("raw", new Uint8Array(raw), ED25519, false, [
          "verify",
        ]).catch(() => undefined)
        : Promise.resolve(undefined);
      key.then((found) => found ?? this.#keys.delete(author));
      this.#keys.set(author, key);
    }
    return key;
  }
}
