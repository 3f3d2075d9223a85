// Ed25519 against the shared vectors in ../shared/vectors/ed25519 (beside the
// repository), under libsodium's strict policy (see that folder's README).
import assert from "node:assert/strict";
import {
  ED25519_LENGTHS,
  generateKeyPair,
  publicKeyFromSeed,
  sign,
  verify,
} from "../../src/pod/ed25519.ts";
import { decodeHex, encodeHex } from "../../src/_util/encoding.ts";

const VECTORS = new URL("../../../shared/vectors/ed25519/", import.meta.url);

async function readVectors<T>(path: string): Promise<T> {
  const url = new URL(path, VECTORS);
  try {
    return JSON.parse(await Deno.readTextFile(url)) as T;
  } catch (cause) {
    throw new Error(
      `Cannot read test vectors at '${url.pathname}': the shared folder must sit beside the repository`,
      { cause },
    );
  }
}

/** A copy of `bytes` with bit `bit` of byte `index` flipped. */
function flipBit(bytes: Uint8Array, index: number, bit = 0): Uint8Array {
  const out = bytes.slice();
  out[index]! ^= 1 << bit;
  return out;
}

interface RfcVector {
  name: string;
  secretKey: string;
  publicKey: string;
  message: string;
  signature: string;
}

interface WycheproofFile {
  numberOfTests: number;
  testGroups: {
    publicKey: { pk: string };
    tests: {
      tcId: number;
      msg: string;
      sig: string;
      result: "valid" | "invalid";
      comment: string;
    }[];
  }[];
}

interface SpeccheckCase {
  message: string;
  pub_key: string;
  signature: string;
}

interface CctvVector {
  number: number;
  key: string;
  sig: string;
  msg: string;
  flags: string[] | null;
}

Deno.test("verify() accepts all 5 RFC 8032 vectors", async () => {
  const vectors = await readVectors<RfcVector[]>("rfc8032/ed25519.json");
  assert.equal(vectors.length, 5);
  for (const v of vectors) {
    assert.equal(
      await verify(
        decodeHex(v.signature),
        decodeHex(v.message),
        decodeHex(v.publicKey),
      ),
      true,
      `RFC 8032 TEST ${v.name}`,
    );
  }
});

Deno.test("verify() rejects tampered copies of the RFC 8032 vectors", async () => {
  const vectors = await readVectors<RfcVector[]>("rfc8032/ed25519.json");
  assert.equal(vectors.length, 5);
  for (const v of vectors) {
    const signature = decodeHex(v.signature);
    const message = decodeHex(v.message);
    const publicKey = decodeHex(v.publicKey);
    // TEST 1 signs the empty message: there is no bit to flip, so add a byte.
    const otherMessage = message.length === 0
      ? new Uint8Array([0])
      : flipBit(message, message.length - 1);
    const cases: [string, Uint8Array, Uint8Array, Uint8Array][] = [
      ["message", signature, otherMessage, publicKey],
      ["signature R", flipBit(signature, 0), message, publicKey],
      ["signature S", flipBit(signature, 40, 3), message, publicKey],
      ["public key", signature, message, flipBit(publicKey, 5, 1)],
      ["truncated signature", signature.subarray(0, 63), message, publicKey],
      ["truncated key", signature, message, publicKey.subarray(0, 31)],
    ];
    for (const [what, sig, msg, key] of cases) {
      assert.equal(
        await verify(sig, msg, key),
        false,
        `RFC 8032 TEST ${v.name} with a changed ${what}`,
      );
    }
  }
});

Deno.test("sign() and publicKeyFromSeed() reproduce the RFC 8032 vectors", async () => {
  const vectors = await readVectors<RfcVector[]>("rfc8032/ed25519.json");
  assert.equal(vectors.length, 5);
  for (const v of vectors) {
    const seed = decodeHex(v.secretKey);
    assert.equal(seed.length, ED25519_LENGTHS.seed);
    assert.equal(
      encodeHex(await publicKeyFromSeed(seed)),
      v.publicKey,
      `public key of RFC 8032 TEST ${v.name}`,
    );
    assert.equal(
      encodeHex(await sign(decodeHex(v.message), seed)),
      v.signature,
      `signature of RFC 8032 TEST ${v.name}`,
    );
  }
});

Deno.test("sign() and publicKeyFromSeed() refuse a seed that is not 32 bytes", async () => {
  for (const length of [0, 31, 33, 64]) {
    await assert.rejects(
      () => sign(new Uint8Array(1), new Uint8Array(length)),
      new RangeError(
        `Cannot use Ed25519 seed: expected 32 bytes, got ${length}`,
      ),
    );
    await assert.rejects(
      () => publicKeyFromSeed(new Uint8Array(length)),
      RangeError,
    );
  }
});

Deno.test("generateKeyPair() makes fresh keys that sign and verify", async () => {
  const a = await generateKeyPair();
  const b = await generateKeyPair();
  assert.equal(a.seed.length, 32);
  assert.equal(a.publicKey.length, 32);
  assert.notDeepEqual(a.seed, b.seed);
  assert.deepEqual(await publicKeyFromSeed(a.seed), a.publicKey);
  const message = new TextEncoder().encode("pod");
  const signature = await sign(message, a.seed);
  assert.equal(signature.length, 64);
  assert.equal(await verify(signature, message, a.publicKey), true);
  assert.equal(await verify(signature, message, b.publicKey), false);
});

Deno.test("verify() gives the expected result for all 151 Wycheproof vectors", async () => {
  const file = await readVectors<WycheproofFile>(
    "wycheproof/ed25519_test.json",
  );
  let count = 0;
  let valid = 0;
  const wrong: string[] = [];
  for (const group of file.testGroups) {
    const publicKey = decodeHex(group.publicKey.pk);
    for (const test of group.tests) {
      count++;
      // Wrong lengths (tcId 30 to 41) must give false, never throw.
      const result = await verify(
        decodeHex(test.sig),
        decodeHex(test.msg),
        publicKey,
      );
      assert.equal(typeof result, "boolean");
      if (result) valid++;
      if (result !== (test.result === "valid")) {
        wrong.push(`tcId ${test.tcId} (${test.comment}): got ${result}`);
      }
    }
  }
  assert.equal(count, 151);
  assert.equal(file.numberOfTests, 151);
  assert.deepEqual(wrong, []);
  const expectedValid =
    file.testGroups.flatMap((g) => g.tests).filter((t) => t.result === "valid")
      .length;
  assert.equal(valid, expectedValid);
});

Deno.test("verify() returns false, not throws, on signatures that are not 64 bytes", async () => {
  const file = await readVectors<WycheproofFile>(
    "wycheproof/ed25519_test.json",
  );
  const short = file.testGroups.flatMap((g) =>
    g.tests.filter((t) => t.sig.length !== 128).map((t) => ({
      pk: g.publicKey.pk,
      ...t,
    }))
  );
  assert.deepEqual(
    short.map((t) => t.tcId),
    [30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41],
  );
  for (const t of short) {
    assert.equal(
      await verify(decodeHex(t.sig), decodeHex(t.msg), decodeHex(t.pk)),
      false,
      `tcId ${t.tcId}`,
    );
  }
});

Deno.test("verify() accepts only speccheck case 3 (pattern XXXVXXXXXXXX)", async () => {
  const cases = await readVectors<SpeccheckCase[]>("speccheck/cases.json");
  assert.equal(cases.length, 12);
  let pattern = "";
  for (const c of cases) {
    const ok = await verify(
      decodeHex(c.signature),
      decodeHex(c.message),
      decodeHex(c.pub_key),
    );
    pattern += ok ? "V" : "X";
  }
  assert.equal(pattern, "XXXVXXXXXXXX");
});

Deno.test("verify() accepts exactly the 43 of 914 CCTV vectors whose flags are only low-order components", async () => {
  const vectors = await readVectors<CctvVector[]>("cctv/ed25519vectors.json");
  assert.equal(vectors.length, 914);
  const allowed = new Set(["low_order_component_A", "low_order_component_R"]);
  const encoder = new TextEncoder();
  let accepted = 0;
  const wrong: string[] = [];
  for (const v of vectors) {
    const flags = v.flags ?? [];
    const expected = flags.every((flag) => allowed.has(flag));
    const result = await verify(
      decodeHex(v.sig),
      encoder.encode(v.msg),
      decodeHex(v.key),
    );
    if (result) accepted++;
    if (result !== expected) {
      wrong.push(`number ${v.number} [${flags.join(", ")}]: got ${result}`);
    }
  }
  assert.deepEqual(wrong, []);
  assert.equal(accepted, 43);
});
