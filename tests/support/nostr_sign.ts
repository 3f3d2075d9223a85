// Signed Nostr events for the tests, with no package: BIP-340 Schnorr
// signatures over secp256k1 written out from the BIP (BigInt arithmetic,
// Jacobian coordinates) and node:crypto's sha256. Slow and not constant
// time: for tests only, never for a key that matters. Imports only `node:`
// built-ins, so that the contract suite can sign on Node 22 too
// (tests/contract/node_test.ts lists it in NEUTRAL_SUPPORT).
import { Buffer } from "node:buffer";
import { createHash, randomBytes } from "node:crypto";

/** A Nostr event, signed. */
export interface SignedEvent {
  id: string;
  pubkey: string;
  created_at: number;
  kind: number;
  tags: string[][];
  content: string;
  sig: string;
}

/** What a test chooses of an event; the rest is filled in. */
export interface EventDraft {
  kind: number;
  tags?: string[][];
  content?: string;
  created_at?: number;
}

/** A test author: a secret key and its x-only public key (hex). */
export interface TestAuthor {
  secret: bigint;
  pubkey: string;
}

const P = 2n ** 256n - 0x1000003d1n;
const N = 0xfffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141n;
const GX = 0x79be667ef9dcbbac55a06295ce870b07029bfcdb2dce28d959f2815b16f81798n;
const GY = 0x483ada7726a3c4655da4fbfc0e1108a8fd17b448a68554199c47d08ffb10d4b8n;

type Jacobian = [bigint, bigint, bigint];

const mod = (a: bigint, m = P) => ((a % m) + m) % m;

function pow(base: bigint, exp: bigint): bigint {
  let result = 1n;
  let b = mod(base);
  for (let e = exp; e > 0n; e >>= 1n) {
    if (e & 1n) result = mod(result * b);
    b = mod(b * b);
  }
  return result;
}

function double([x, y, z]: Jacobian): Jacobian {
  if (y === 0n || z === 0n) return [0n, 1n, 0n];
  const a = mod(x * x);
  const b = mod(y * y);
  const c = mod(b * b);
  const d = mod(2n * (mod((x + b) ** 2n) - a - c));
  const e = mod(3n * a);
  const x3 = mod(e * e - 2n * d);
  return [x3, mod(e * (d - x3) - 8n * c), mod(2n * y * z)];
}

function add(p: Jacobian, q: Jacobian): Jacobian {
  if (p[2] === 0n) return q;
  if (q[2] === 0n) return p;
  const [x1, y1, z1] = p;
  const [x2, y2, z2] = q;
  const z1z1 = mod(z1 * z1);
  const z2z2 = mod(z2 * z2);
  const u1 = mod(x1 * z2z2);
  const u2 = mod(x2 * z1z1);
  const s1 = mod(y1 * z2 * z2z2);
  const s2 = mod(y2 * z1 * z1z1);
  if (u1 === u2) return s1 === s2 ? double(p) : [0n, 1n, 0n];
  const h = mod(u2 - u1);
  const r = mod(s2 - s1);
  const h2 = mod(h * h);
  const h3 = mod(h * h2);
  const u1h2 = mod(u1 * h2);
  const x3 = mod(r * r - h3 - 2n * u1h2);
  return [x3, mod(r * (u1h2 - x3) - s1 * h3), mod(h * z1 * z2)];
}

// k·G, in affine coordinates.
function timesG(k: bigint): [bigint, bigint] {
  let result: Jacobian = [0n, 1n, 0n];
  let point: Jacobian = [GX, GY, 1n];
  for (let e = k; e > 0n; e >>= 1n) {
    if (e & 1n) result = add(result, point);
    point = double(point);
  }
  const zi = pow(result[2], P - 2n);
  return [mod(result[0] * zi * zi), mod(result[1] * zi * zi * zi)];
}

const hex32 = (n: bigint) => n.toString(16).padStart(64, "0");
const toInt = (bytes: Uint8Array) =>
  BigInt(`0x${Buffer.from(bytes).toString("hex")}`);

function sha256(...parts: (Uint8Array | string)[]): Uint8Array {
  const hash = createHash("sha256");
  for (const part of parts) {
    hash.update(typeof part === "string" ? Buffer.from(part, "hex") : part);
  }
  return new Uint8Array(hash.digest());
}

function taggedHash(tag: string, ...parts: (Uint8Array | string)[]) {
  const tagHash = createHash("sha256").update(tag).digest();
  return sha256(tagHash, tagHash, ...parts);
}

/** A fresh author. */
export function newAuthor(): TestAuthor {
  const secret = mod(toInt(randomBytes(32)), N - 1n) + 1n;
  return { secret, pubkey: hex32(timesG(secret)[0]) };
}

/** BIP-340: the signature (hex) of a 32-byte message (hex) by `author`. */
export function schnorrSign(messageHex: string, author: TestAuthor): string {
  const [, py] = timesG(author.secret);
  const d = py % 2n === 0n ? author.secret : N - author.secret;
  const aux = randomBytes(32);
  const t = d ^ toInt(taggedHash("BIP0340/aux", aux));
  const rand = taggedHash("BIP0340/nonce", hex32(t), author.pubkey, messageHex);
  const k0 = mod(toInt(rand), N);
  if (k0 === 0n) throw new Error("Cannot sign: the nonce is zero");
  const [rx, ry] = timesG(k0);
  const k = ry % 2n === 0n ? k0 : N - k0;
  const e = mod(
    toInt(
      taggedHash("BIP0340/challenge", hex32(rx), author.pubkey, messageHex),
    ),
    N,
  );
  return hex32(rx) + hex32(mod(k + e * d, N));
}

/** The NIP-01 id (hex) of an event's fields. */
export function eventId(event: Omit<SignedEvent, "id" | "sig">): string {
  const serialized = JSON.stringify([
    0,
    event.pubkey,
    event.created_at,
    event.kind,
    event.tags,
    event.content,
  ]);
  return Buffer.from(sha256(new TextEncoder().encode(serialized))).toString(
    "hex",
  );
}

/** An event made from `draft`, signed by `author`. */
export function signEvent(draft: EventDraft, author: TestAuthor): SignedEvent {
  const unsigned = {
    pubkey: author.pubkey,
    created_at: draft.created_at ?? Math.floor(Date.now() / 1000),
    kind: draft.kind,
    tags: draft.tags ?? [],
    content: draft.content ?? "",
  };
  const id = eventId(unsigned);
  return { ...unsigned, id, sig: schnorrSign(id, author) };
}
