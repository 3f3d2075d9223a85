// Random ids from the runtime's CSPRNG, without modulo bias.

const ALPHABET =
  "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
// The largest multiple of 62 that fits a byte: bytes at or above it are
// dropped, so every character is equally likely.
const LIMIT = 248;

/**
 * Random bytes are drawn from the CSPRNG this many at a time, and each is
 * used once: one call per id cost more than the rest of making it (3% of an
 * upload's CPU on Node 22).
 */
const POOL_BYTES = 4096;
const pool = new Uint8Array(POOL_BYTES);
let next = POOL_BYTES;

function randomByte(): number {
  if (next === POOL_BYTES) {
    crypto.getRandomValues(pool);
    next = 0;
  }
  const byte = pool[next]!;
  // Zeroed once used, so that no byte of an id stays in the pool.
  pool[next++] = 0;
  return byte;
}

/** `length` characters of `[A-Za-z0-9]`, uniformly random. */
export function randomAlphanumeric(length: number): string {
  let out = "";
  while (out.length < length) {
    const byte = randomByte();
    if (byte < LIMIT) out += ALPHABET[byte % 62];
  }
  return out;
}

/** Whether `id` has the shape of a pod id: 12 characters of `[A-Za-z0-9]`. */
export function isPodId(id: string): boolean {
  return /^[A-Za-z0-9]{12}$/.test(id);
}

/** Length of a pod id. */
export const POD_ID_LENGTH = 12;
/** Length of a signaling peer id. */
export const PEER_ID_LENGTH = 16;
