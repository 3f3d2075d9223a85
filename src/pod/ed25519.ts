/**
 * Ed25519: key generation from a seed and signing on libsodium's WebAssembly
 * build (the only module that imports libsodium), and strict verification on
 * the runtime's own Web Crypto.
 *
 * Verification is libsodium's strict policy: it rejects a non-canonical key,
 * S at or above the group order, and a key or R of small order
 * (`ed25519_strict.ts`), then checks the equation with the runtime's
 * `crypto.subtle.verify`, which is about twice as fast as libsodium's.
 * `node:crypto`'s `verify` costs less CPU (about 30 µs a 10 KiB upload's
 * manifest on Deno, against 68), but it runs on the JavaScript thread,
 * where `crypto.subtle.verify` runs beside it: on two cores, uploads went
 * slower with it (a median of 4,345 a second against 4,771, five turns
 * each), so the broker keeps Web Crypto.
 *
 * @module
 */

import type Sodium from "libsodium-wrappers";
import { Lru } from "../_util/lru.ts";
import { passesStrictChecks } from "./ed25519_strict.ts";

/** Bytes in an Ed25519 seed (the private key), public key and signature. */
export const ED25519_LENGTHS = {
  seed: 32,
  publicKey: 32,
  signature: 64,
} as const;

// Loaded on first use: a broker that has taken no upload yet (its /health
// at start) does not pay for libsodium's module.
let sodium: typeof Sodium;
let ready: Promise<void> | undefined;

/** Resolves once libsodium's WebAssembly module is loaded and initialised (once). */
export function ed25519Ready(): Promise<void> {
  ready ??= import("libsodium-wrappers").then(async (module) => {
    await module.default.ready;
    sodium = module.default;
  });
  return ready;
}

/**
 * Derives the public key of a 32-byte seed.
 *
 * @param seed The private key seed.
 * @returns The 32-byte public key.
 * @throws {RangeError} When the seed is not 32 bytes.
 */
export async function publicKeyFromSeed(seed: Uint8Array): Promise<Uint8Array> {
  checkLength("seed", seed, ED25519_LENGTHS.seed);
  await ed25519Ready();
  return sodium.crypto_sign_seed_keypair(seed).publicKey;
}

/**
 * Makes a fresh key pair from the runtime's CSPRNG.
 *
 * @returns The 32-byte seed and its public key.
 */
export async function generateKeyPair(): Promise<
  { seed: Uint8Array; publicKey: Uint8Array }
> {
  const seed = crypto.getRandomValues(new Uint8Array(ED25519_LENGTHS.seed));
  return { seed, publicKey: await publicKeyFromSeed(seed) };
}

/**
 * Signs `message` with the key of `seed`.
 *
 * @param message The bytes to sign.
 * @param seed The 32-byte private key seed.
 * @returns The 64-byte signature.
 * @throws {RangeError} When the seed is not 32 bytes.
 */
export async function sign(
  message: Uint8Array,
  seed: Uint8Array,
): Promise<Uint8Array> {
  checkLength("seed", seed, ED25519_LENGTHS.seed);
  await ed25519Ready();
  const { privateKey } = sodium.crypto_sign_seed_keypair(seed);
  return sodium.crypto_sign_detached(message, privateKey);
}

/** A key imported into the runtime's Web Crypto (named so on both runtimes). */
type VerifyKey = Awaited<ReturnType<typeof crypto.subtle.importKey>>;

/**
 * The runtime's imported keys, by their 32 bytes: an author uploads again and
 * again, and an import costs about a third of a verify.
 */
const verifyKeys = new Lru<string, Promise<VerifyKey | null>>({
  maxEntries: 1024,
});

/** The imported key, or null for bytes the runtime refuses as a key. */
function verifyKey(publicKey: Uint8Array): Promise<VerifyKey | null> {
  const name = String.fromCharCode(...publicKey);
  let key = verifyKeys.get(name);
  if (key === undefined) {
    key = crypto.subtle.importKey(
      "raw",
      new Uint8Array(publicKey),
      "Ed25519",
      false,
      ["verify"],
    ).catch(() => null);
    verifyKeys.set(name, key);
  }
  return key;
}

/**
 * Verifies an Ed25519 signature under libsodium's strict policy. Wrong
 * lengths give `false` (libsodium itself would throw).
 *
 * @param signature The 64-byte signature.
 * @param message The signed bytes.
 * @param publicKey The 32-byte public key.
 * @returns Whether the signature is valid.
 */
export async function verify(
  signature: Uint8Array,
  message: Uint8Array,
  publicKey: Uint8Array,
): Promise<boolean> {
  if (
    signature.length !== ED25519_LENGTHS.signature ||
    publicKey.length !== ED25519_LENGTHS.publicKey ||
    !passesStrictChecks(signature, publicKey)
  ) {
    return false;
  }
  const key = await verifyKey(publicKey);
  if (key === null) return false;
  return await crypto.subtle.verify(
    "Ed25519",
    key,
    new Uint8Array(signature),
    new Uint8Array(message),
  );
}

function checkLength(what: string, bytes: Uint8Array, length: number): void {
  if (bytes.length !== length) {
    throw new RangeError(
      `Cannot use Ed25519 ${what}: expected ${length} bytes, got ${bytes.length}`,
    );
  }
}
