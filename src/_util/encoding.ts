// Strict base64 (RFC 4648 section 4) and base64url without padding (section 5).
// Strict means canonical: the decoder refuses whitespace, wrong padding and
// non-zero unused bits, so each byte string has exactly one accepted text.

const STD = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
const URL = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

function makeTable(alphabet: string): Int16Array {
  const table = new Int16Array(128).fill(-1);
  for (let i = 0; i < alphabet.length; i++) table[alphabet.charCodeAt(i)] = i;
  return table;
}
const STD_TABLE = makeTable(STD);
const URL_TABLE = makeTable(URL);

function encode(bytes: Uint8Array, alphabet: string, pad: boolean): string {
  let out = "";
  let i = 0;
  for (; i + 2 < bytes.length; i += 3) {
    const n = (bytes[i]! << 16) | (bytes[i + 1]! << 8) | bytes[i + 2]!;
    out += alphabet[n >> 18]! + alphabet[(n >> 12) & 63]! +
      alphabet[(n >> 6) & 63]! +
      alphabet[n & 63]!;
  }
  const rest = bytes.length - i;
  if (rest === 1) {
    const n = bytes[i]! << 16;
    out += alphabet[n >> 18]! + alphabet[(n >> 12) & 63]! + (pad ? "==" : "");
  } else if (rest === 2) {
    const n = (bytes[i]! << 16) | (bytes[i + 1]! << 8);
    out += alphabet[n >> 18]! + alphabet[(n >> 12) & 63]! +
      alphabet[(n >> 6) & 63]! +
      (pad ? "=" : "");
  }
  return out;
}

/** Decodes `text` made only of alphabet characters; null when not canonical. */
function decodeBody(text: string, table: Int16Array): Uint8Array | null {
  const rest = text.length % 4;
  if (rest === 1) return null;
  const out = new Uint8Array(
    Math.floor(text.length / 4) * 3 + (rest ? rest - 1 : 0),
  );
  let o = 0;
  let acc = 0;
  let bits = 0;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    const value = code < 128 ? table[code]! : -1;
    if (value < 0) return null;
    acc = (acc << 6) | value;
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out[o++] = (acc >> bits) & 0xff;
    }
  }
  // Unused trailing bits must be zero, or two texts would decode alike.
  if ((acc & ((1 << bits) - 1)) !== 0) return null;
  return out;
}

/** Standard base64 with padding. */
export function encodeBase64(bytes: Uint8Array): string {
  return encode(bytes, STD, true);
}

/** Base64url without padding. */
export function encodeBase64Url(bytes: Uint8Array): string {
  return encode(bytes, URL, false);
}

/** Strict standard base64 with padding; null when not canonical. */
export function decodeBase64(text: string): Uint8Array | null {
  if (text.length % 4 !== 0) return null;
  let body = text;
  if (text.endsWith("==")) body = text.slice(0, -2);
  else if (text.endsWith("=")) body = text.slice(0, -1);
  if (body.includes("=")) return null;
  return decodeBody(body, STD_TABLE);
}

/** Strict base64url without padding; null when not canonical. */
export function decodeBase64Url(text: string): Uint8Array | null {
  return decodeBody(text, URL_TABLE);
}

/** Lowercase hex of `bytes`. */
export function encodeHex(bytes: Uint8Array): string {
  let out = "";
  for (const byte of bytes) out += byte.toString(16).padStart(2, "0");
  return out;
}

/** Bytes of a hex string (tests and vectors). */
export function decodeHex(hex: string): Uint8Array {
  const out = new Uint8Array(hex.length >> 1);
  for (let i = 0; i < out.length; i++) {
    out[i] = parseInt(hex.slice(2 * i, 2 * i + 2), 16);
  }
  return out;
}
