/**
 * The encoding checks that make an Ed25519 verification strict, as
 * libsodium's `crypto_sign_verify_detached` is: `S` below the group order,
 * `R` and the key of no small order, and the key's `y` below the field prime.
 * With them, the runtime's own (cofactorless) verify answers as libsodium
 * does: `tests/unit/ed25519_strict_test.ts` holds the two to the same answers.
 *
 * Each check reads the 32 bytes only: no field arithmetic, no allocation.
 *
 * @module
 */

import { decodeHex } from "../_util/encoding.ts";

/**
 * The group order L = 2^252 + 27742317777372353535851937790883648493, as its
 * little-endian bytes in hex (as the encodings below are).
 */
const GROUP_ORDER = decodeHex(
  "edd3f55c1a631258d69cf7a2def9de1400000000000000000000000000000010",
);

/**
 * The `y` of every point of small order (1, 2, 4 or 8), the sign bit aside:
 * 0 and 1, the two `y` of the points of order 8, p - 1, and the encodings of
 * 0 and 1 at or above the prime p = 2^255 - 19 (p and p + 1).
 */
const SMALL_ORDER_Y = [
  "0000000000000000000000000000000000000000000000000000000000000000",
  "0100000000000000000000000000000000000000000000000000000000000000",
  "26e8958fc2b227b045c3f489f2ef98f0d5dfac05d3c63339b13802886d53fc05",
  "c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac037a",
  "ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",
  "edffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",
  "eeffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",
].map(decodeHex);

/**
 * Whether the 32-byte little-endian scalar `s` is below the group order.
 *
 * @param s The scalar (the signature's second half).
 * @returns True when `s < L`.
 */
export function isCanonicalScalar(s: Uint8Array): boolean {
  for (let i = 31; i >= 0; i--) {
    if (s[i] !== GROUP_ORDER[i]) return s[i]! < GROUP_ORDER[i]!;
  }
  return false;
}

/**
 * Whether the point encoding's `y` (its sign bit aside) is below the prime
 * p = 2^255 - 19, so that no other encoding names the same point.
 *
 * @param point The 32-byte encoding.
 * @returns True when `y < p`.
 */
export function isCanonicalPoint(point: Uint8Array): boolean {
  if ((point[31]! & 0x7f) !== 0x7f || point[0]! < 0xed) return true;
  for (let i = 1; i < 31; i++) if (point[i] !== 0xff) return true;
  return false;
}

/**
 * Whether the encoding names a point of small order, whatever its sign bit:
 * such a key or `R` lets one signature pass for many messages or keys.
 *
 * @param point The 32-byte encoding.
 * @returns True when the point's order divides 8.
 */
export function hasSmallOrder(point: Uint8Array): boolean {
  return SMALL_ORDER_Y.some((y) => {
    for (let i = 0; i < 31; i++) if (point[i] !== y[i]) return false;
    return (point[31]! & 0x7f) === y[31];
  });
}

/**
 * The checks libsodium makes before its equation: a signature that fails one
 * is invalid whatever the equation says.
 *
 * @param signature The 64-byte signature, `R` then `S`.
 * @param publicKey The 32-byte key.
 * @returns True when the encodings pass.
 */
export function passesStrictChecks(
  signature: Uint8Array,
  publicKey: Uint8Array,
): boolean {
  return isCanonicalScalar(signature.subarray(32)) &&
    !hasSmallOrder(signature.subarray(0, 32)) &&
    isCanonicalPoint(publicKey) && !hasSmallOrder(publicKey);
}
