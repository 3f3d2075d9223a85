// The strict verify (the encoding checks of src/pod/ed25519_strict.ts, then
// the runtime's Web Crypto) held to libsodium's answers: each check on its
// edges, then generated signatures, tampered, widened, of small and of mixed
// order, verified by both. Points are built with @noble/curves.
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import fc from "fast-check";
import sodium from "libsodium-wrappers";
import { ed25519, ED25519_TORSION_SUBGROUP } from "@noble/curves/ed25519.js";
import { verify } from "../../src/pod/ed25519.ts";
import {
  hasSmallOrder,
  isCanonicalPoint,
  isCanonicalScalar,
} from "../../src/pod/ed25519_strict.ts";
import { decodeHex } from "../../src/_util/encoding.ts";
import { encoding, numberOf } from "../support/little_endian.ts";

await sodium.ready;

const P = 2n ** 255n - 19n;
const L = 2n ** 252n + 27742317777372353535851937790883648493n;
const Point = ed25519.Point;

/** SHA-512(R || A || M) mod L, the challenge of the equation. */
function challenge(r: Uint8Array, key: Uint8Array, message: Uint8Array) {
  const hash = createHash("sha512").update(r).update(key).update(message)
    .digest();
  return numberOf(new Uint8Array(hash)) % L;
}

/** The 8 points of small order, as noble names them. */
const TORSION = ED25519_TORSION_SUBGROUP.map((hex) => decodeHex(hex));

/** Each encoding of a small-order point: both sign bits, and y = p, p + 1. */
const SMALL_ORDER_ENCODINGS = [
  ...TORSION.flatMap((
    t,
  ) => [t, Uint8Array.from(t, (b, i) => i === 31 ? b ^ 0x80 : b)]),
  encoding(P),
  encoding(P, true),
  encoding(P + 1n),
  encoding(P + 1n, true),
];

Deno.test("isCanonicalScalar holds S below the group order L", () => {
  for (
    const [s, canonical] of [
      [0n, true],
      [L - 1n, true],
      [L, false],
      [L + 1n, false],
      [2n ** 253n, false],
      [2n ** 256n - 1n, false],
    ] as const
  ) {
    assert.equal(isCanonicalScalar(encoding(s)), canonical, s.toString(16));
  }
});

Deno.test("isCanonicalPoint holds the key's y below p, whatever its sign bit", () => {
  for (
    const [y, canonical] of [
      [0n, true],
      [P - 1n, true],
      [P, false],
      [P + 18n, false],
      [2n ** 255n - 1n, false],
      [2n ** 255n - 2n ** 248n, true],
    ] as const
  ) {
    for (const sign of [false, true]) {
      assert.equal(isCanonicalPoint(encoding(y, sign)), canonical, `${y}`);
    }
  }
});

Deno.test("hasSmallOrder names every encoding of the 8 small-order points, and no other point", () => {
  for (const t of SMALL_ORDER_ENCODINGS) assert.ok(hasSmallOrder(t));
  // Each is of small order indeed: 8 times it is the identity.
  for (const t of TORSION) {
    assert.ok(Point.fromBytes(t).multiplyUnsafe(8n).is0());
  }
  fc.assert(
    fc.property(fc.bigInt({ min: 1n, max: L - 1n }), (scalar) => {
      const point = Point.BASE.multiply(scalar);
      assert.equal(hasSmallOrder(point.toBytes()), false);
      // A point of mixed order is of no small order either.
      assert.equal(
        hasSmallOrder(point.add(Point.fromBytes(TORSION[1]!)).toBytes()),
        false,
      );
    }),
    { numRuns: 50 },
  );
});

/** A case for both verifiers: signature, message, key. */
interface Case {
  signature: Uint8Array;
  message: Uint8Array;
  key: Uint8Array;
}

/** A signature by `scalar` under `key`, which may be any encoding. */
function signAs(
  scalar: bigint,
  key: Uint8Array,
  message: Uint8Array,
  nonce: bigint,
  torsionOfR?: Uint8Array,
): Case {
  let point = Point.BASE.multiply(nonce);
  if (torsionOfR) point = point.add(Point.fromBytes(torsionOfR));
  const r = point.toBytes();
  const s = (nonce + challenge(r, key, message) * scalar) % L;
  return { signature: new Uint8Array([...r, ...encoding(s)]), message, key };
}

const seeds = fc.uint8Array({ minLength: 32, maxLength: 32 });
const messages = fc.uint8Array({ maxLength: 200 });
const nonces = fc.bigInt({ min: 1n, max: L - 1n });
const torsion = fc.constantFrom(...TORSION);
const smallOrder = fc.constantFrom(...SMALL_ORDER_ENCODINGS);

/** A real signature by libsodium. */
const valid = fc.tuple(seeds, messages).map(([seed, message]): Case => {
  const { publicKey, privateKey } = sodium.crypto_sign_seed_keypair(seed);
  const signature = sodium.crypto_sign_detached(message, privateKey);
  return { signature, message, key: publicKey };
});

const cases: fc.Arbitrary<Case> = fc.oneof(
  valid,
  // One bit flipped anywhere.
  fc.tuple(valid, fc.nat(128 * 8 - 1)).map(([c, at]) => {
    const parts = [c.signature, c.key, c.message].map((b) => b.slice());
    const part = at < 512 ? 0 : at < 768 ? 1 : 2;
    const bit = part === 0 ? at : part === 1 ? at - 512 : at - 768;
    const bytes = parts[part]!;
    if (bytes.length > 0) bytes[(bit >> 3) % bytes.length]! ^= 1 << (bit & 7);
    return { signature: parts[0]!, key: parts[1]!, message: parts[2]! };
  }),
  // S plus L: the same scalar, not in its canonical form.
  valid.map((c) => ({
    ...c,
    signature: new Uint8Array([
      ...c.signature.subarray(0, 32),
      ...encoding(numberOf(c.signature.subarray(32)) + L),
    ]),
  })),
  // Key and R of small order, S zero or any.
  fc.tuple(smallOrder, smallOrder, fc.oneof(fc.constant(0n), nonces), messages)
    .map(([key, r, s, message]) => ({
      signature: new Uint8Array([...r, ...encoding(s)]),
      message,
      key,
    })),
  // R the identity, S = k * a: the equation holds for a real key.
  fc.tuple(nonces, messages).map(([a, message]) => {
    const key = Point.BASE.multiply(a).toBytes();
    const r = Point.ZERO.toBytes();
    const s = (challenge(r, key, message) * a) % L;
    return { signature: new Uint8Array([...r, ...encoding(s)]), message, key };
  }),
  // A key of small order, R = [S]B: the equation holds when the key's order
  // divides the challenge (always for the identity's).
  fc.tuple(smallOrder, nonces, messages).map(([key, s, message]) => ({
    signature: new Uint8Array([
      ...Point.BASE.multiply(s).toBytes(),
      ...encoding(s),
    ]),
    message,
    key,
  })),
  // A key of mixed order, signed with its prime-order part's scalar: the
  // equation holds when 8 divides the challenge (or the torsion is the
  // identity's), and a cofactored verifier would take more.
  fc.tuple(nonces, torsion, messages, nonces).map(([a, t, message, nonce]) =>
    signAs(
      a,
      Point.BASE.multiply(a).add(Point.fromBytes(t)).toBytes(),
      message,
      nonce,
    )
  ),
  // R of mixed order.
  fc.tuple(nonces, torsion, messages, nonces).map(([a, t, message, nonce]) =>
    signAs(a, Point.BASE.multiply(a).toBytes(), message, nonce, t)
  ),
  // A key whose y is at or above p.
  fc.tuple(fc.bigInt({ min: P, max: 2n ** 255n - 1n }), fc.boolean(), valid)
    .map(([y, sign, c]) => ({ ...c, key: encoding(y, sign) })),
);

Deno.test("verify answers as libsodium's crypto_sign_verify_detached on generated, tampered, widened, small-order and mixed-order signatures", async () => {
  let accepted = 0;
  await fc.assert(
    fc.asyncProperty(cases, async ({ signature, message, key }) => {
      const expected = sodium.crypto_sign_verify_detached(
        signature,
        message,
        key,
      );
      assert.equal(await verify(signature, message, key), expected);
      if (expected) accepted++;
    }),
    { numRuns: 2000 },
  );
  // Both answers were seen: the property is not all refusals.
  assert.ok(accepted > 100, `only ${accepted} accepted`);
});
