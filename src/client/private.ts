/**
 * Private rooms: everything a room's secret gives, through Web Crypto. The
 * secret (32 random bytes) lives only in the URL fragment, `#k_<base64url>`,
 * which browsers never send. HKDF-SHA256 derives from it an Ed25519 key,
 * whose public key names the session (`k_<base64url public key>`) and
 * whose signature proves a join, and an AES-256-GCM key that seals every
 * signal, with the sender's and the recipient's signaling ids as
 * associated data: the broker relays what it cannot read, and a signal
 * it alters, invents or sends to another peer does not open.
 *
 * @module
 */

const subtle = crypto.subtle;
/** The client's one UTF-8 encoder. */
export const encoder: TextEncoder = new TextEncoder();
/** The client's one UTF-8 decoder. */
export const decoder: TextDecoder = new TextDecoder();
const B64 = { alphabet: "base64url", omitPadding: true } as const;

/** A private link's fragment: `k_` and the base64url of a 32-byte secret. */
export const PRIVATE: RegExp = /^k_[\w-]{43}$/;

// The signals whose IVs are remembered, to refuse them replayed.
const MAX_OPENED = 4096;

/** What a private room does with its secret. */
export interface RoomKeys {
  /** The keyed session: `k_` and the base64url Ed25519 public key. */
  session: string;
  /** The join's proof over `host`, at the current time. */
  proof(host: string): Promise<{ t: number; sig: string }>;
  /** Seals `text` for `from` → `to` (signaling ids): base64url. */
  seal(text: string, from: string, to: string): Promise<string>;
  /**
   * Opens what `from` sealed for `to`; rejects when it does not open, or
   * opened before (a replay; the last 4,096 signals are remembered).
   */
  open(sealed: string, from: string, to: string): Promise<string>;
}

/**
 * A fresh secret: the fragment of a new private link, without `k_`.
 *
 * @returns 43 base64url characters.
 */
export function freshSecret(): string {
  return base64(crypto.getRandomValues(new Uint8Array(32)));
}

/**
 * Derives a private room's keys from its secret.
 *
 * @param secret The fragment's base64url secret, without `k_`.
 * @returns The session, the proof and the seal.
 */
export async function roomKeys(secret: string): Promise<RoomKeys> {
  // 64 bytes: the Ed25519 seed, then the AES-256-GCM key.
  const bits = new Uint8Array(
    await subtle.deriveBits(
      {
        name: "HKDF",
        hash: "SHA-256",
        salt: new Uint8Array(),
        info: encoder.encode("pod-room-v1"),
      },
      await subtle.importKey("raw", bytes(secret), "HKDF", false, [
        "deriveBits",
      ]),
      512,
    ),
  );
  // PKCS#8 of an Ed25519 seed: a fixed 16-byte header, then the seed.
  const signer = await subtle.importKey(
    "pkcs8",
    new Uint8Array([
      48,
      46,
      2,
      1,
      0,
      48,
      5,
      6,
      3,
      43,
      101,
      112,
      4,
      34,
      4,
      32,
      ...bits.slice(0, 32),
    ]),
    "Ed25519",
    true,
    ["sign"],
  );
  const session = `k_${(await subtle.exportKey("jwk", signer)).x}`;
  const aes = await subtle.importKey("raw", bits.slice(32), "AES-GCM", false, [
    "encrypt",
    "decrypt",
  ]);
  // The IVs of the signals that opened (base64url: 16 characters each).
  const opened = new Set<string>();
  // The key is the room's; the ids bind a signal to its sender and recipient.
  const gcm = (iv: Uint8Array, from: string, to: string) => ({
    name: "AES-GCM",
    iv: iv as Uint8Array<ArrayBuffer>,
    additionalData: encoder.encode(from + " " + to),
  });
  return {
    session,
    async proof(host) {
      const t = Math.floor(Date.now() / 1000);
      const text = `pod-room-v1\n${host}\n${session}\n${t}`;
      const sig = await subtle.sign("Ed25519", signer, encoder.encode(text));
      return { t, sig: base64(new Uint8Array(sig)) };
    },
    async seal(text, from, to) {
      const iv = crypto.getRandomValues(new Uint8Array(12));
      const box = await subtle.encrypt(
        gcm(iv, from, to),
        aes,
        encoder.encode(text),
      );
      return base64(new Uint8Array([...iv, ...new Uint8Array(box)]));
    },
    async open(sealed, from, to) {
      const box = bytes(sealed);
      const text = decoder.decode(
        await subtle.decrypt(
          gcm(box.slice(0, 12), from, to),
          aes,
          box.slice(12),
        ),
      );
      // A signal opens once: the same IV again is a replay.
      const iv = sealed.slice(0, 16);
      if (opened.has(iv)) throw new Error("replayed");
      opened.add(iv);
      if (opened.size > MAX_OPENED) {
        opened.delete(opened.values().next().value!);
      }
      return text;
    },
  };
}

// The base64 of ES2026 (Chromium 140, Firefox 133, Safari 18.2), which
// not every TypeScript library declares yet.
interface Base64Bytes {
  toBase64(options: typeof B64): string;
}
interface Base64Maker {
  fromBase64(text: string, options: typeof B64): Uint8Array<ArrayBuffer>;
}

function base64(data: Uint8Array): string {
  return (data as unknown as Base64Bytes).toBase64(B64);
}

function bytes(text: string): Uint8Array<ArrayBuffer> {
  return (Uint8Array as unknown as Base64Maker).fromBase64(text, B64);
}
