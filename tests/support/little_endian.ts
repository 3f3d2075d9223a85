// 32-byte little-endian numbers, as Ed25519 encodes scalars and points, for
// the tests that build edge-case signatures. Imports nothing, so that the
// contract suite can use it on Node 22 too (tests/contract/node_test.ts lists
// it in NEUTRAL_SUPPORT).

/**
 * Little-endian 32 bytes of `n`, with the top bit (a point's sign) set when
 * `sign`.
 */
export function encoding(n: bigint, sign = false): Uint8Array {
  const bytes = new Uint8Array(32);
  for (let i = 0; i < 32; i++) bytes[i] = Number((n >> BigInt(8 * i)) & 0xffn);
  if (sign) bytes[31]! |= 0x80;
  return bytes;
}

/** The little-endian number of `bytes`. */
export function numberOf(bytes: Uint8Array): bigint {
  return bytes.reduceRight((n, byte) => (n << 8n) | BigInt(byte), 0n);
}
