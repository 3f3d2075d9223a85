/**
 * Ed25519 private keys as PKCS#8 PEM (`-----BEGIN PRIVATE KEY-----`), the
 * form `openssl genpkey -algorithm ed25519` writes.
 *
 * @module
 */

import { decodeBase64, encodeBase64 } from "../_util/encoding.ts";

// DER of PrivateKeyInfo v1 for id-Ed25519 (1.3.101.112) up to the 32-byte
// seed (RFC 8410 section 7). OpenSSL writes exactly this.
const PKCS8_V1_PREFIX = [
  0x30,
  0x2e,
  0x02,
  0x01,
  0x00,
  0x30,
  0x05,
  0x06,
  0x03,
  0x2b,
  0x65,
  0x70,
  0x04,
  0x22,
  0x04,
  0x20,
];
// OneAsymmetricKey v2 (RFC 5958) with the public key appended as [1].
const PKCS8_V2_PREFIX = [
  0x30,
  0x51,
  0x02,
  0x01,
  0x01,
  0x30,
  0x05,
  0x06,
  0x03,
  0x2b,
  0x65,
  0x70,
  0x04,
  0x22,
  0x04,
  0x20,
];
const PKCS8_V2_PUBLIC = [0x81, 0x21, 0x00];

/**
 * Writes a 32-byte Ed25519 seed as a PKCS#8 PEM private key.
 *
 * @param seed The private key seed.
 * @returns The PEM text, ending with a newline.
 * @throws {RangeError} When the seed is not 32 bytes.
 */
export function encodePrivateKeyPem(seed: Uint8Array): string {
  if (seed.length !== 32) {
    throw new RangeError(
      `Cannot encode Ed25519 key: expected 32 bytes, got ${seed.length}`,
    );
  }
  const der = new Uint8Array([...PKCS8_V1_PREFIX, ...seed]);
  return `-----BEGIN PRIVATE KEY-----\n${
    encodeBase64(der)
  }\n-----END PRIVATE KEY-----\n`;
}

/**
 * Reads the 32-byte seed from a PKCS#8 PEM Ed25519 private key (v1 as OpenSSL
 * writes it, or v2 with the public key attached).
 *
 * @param pem The PEM text.
 * @returns The seed.
 * @throws {TypeError} When the text is not an Ed25519 PKCS#8 PEM key.
 */
export function decodePrivateKeyPem(pem: string): Uint8Array {
  const match = pem.match(
    /-----BEGIN PRIVATE KEY-----([A-Za-z0-9+/=\s]+)-----END PRIVATE KEY-----/,
  );
  const der = match ? decodeBase64(match[1]!.replace(/\s+/g, "")) : null;
  if (der) {
    if (der.length === 48 && startsWith(der, PKCS8_V1_PREFIX)) {
      return der.slice(16);
    }
    if (
      der.length === 83 && startsWith(der, PKCS8_V2_PREFIX) &&
      startsWith(der.subarray(48), PKCS8_V2_PUBLIC)
    ) {
      return der.slice(16, 48);
    }
  }
  throw new TypeError("Cannot read private key: not an Ed25519 PKCS#8 PEM key");
}

function startsWith(bytes: Uint8Array, prefix: readonly number[]): boolean {
  return prefix.every((byte, i) => bytes[i] === byte);
}
