/**
 * Ed25519 on libsodium's WebAssembly build: key generation from a seed,
 * signing and strict verification. The only module that imports libsodium.
 *
 * libsodium's verify is strict: it rejects non-canonical encodings of the key
 * and of R, S at or above the group order, and small-order keys or R.
 *
 * @module
 */

import type Sodium from "libsodium-wrappers";

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
    publicKey.length !== ED25519_LENGTHS.publicKey
  ) {
    return false;
  }
  await ed25519Ready();
  return sodium.crypto_sign_verify_detached(signature, message, publicKey);
}

function checkLength(what: string, bytes: Uint8Array, length: number): void {
  if (bytes.length !== length) {
    throw new RangeError(
      `Cannot use Ed25519 ${what}: expected ${length} bytes, got ${bytes.length}`,
    );
  }
}
