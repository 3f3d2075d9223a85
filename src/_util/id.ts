// Random ids from the runtime's CSPRNG, without modulo bias.

const ALPHABET =
  "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
// The largest multiple of 62 that fits a byte: bytes at or above it are
// dropped, so every character is equally likely.
const LIMIT = 248;

/** `length` characters of `[A-Za-z0-9]`, uniformly random. */
export function randomAlphanumeric(length: number): string {
  let out = "";
  while (out.length < length) {
    for (const byte of crypto.getRandomValues(new Uint8Array(length * 2))) {
      if (byte < LIMIT) out += ALPHABET[byte % 62];
      if (out.length === length) break;
    }
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
