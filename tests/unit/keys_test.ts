// PKCS#8 PEM keys, checked against the real openssl command.
import assert from "node:assert/strict";
import { concatBytes as concat } from "../support/bytes.ts";
import {
  decodePrivateKeyPem,
  encodePrivateKeyPem,
} from "../../src/pod/keys.ts";
import { publicKeyFromSeed, sign } from "../../src/pod/ed25519.ts";
import {
  decodeHex,
  encodeBase64,
  encodeHex,
} from "../../src/_util/encoding.ts";

const NOT_A_KEY = new TypeError(
  "Cannot read private key: not an Ed25519 PKCS#8 PEM key",
);

// RFC 8410 section 10.3: the example Ed25519 private key and its seed.
const RFC8410_PEM = "-----BEGIN PRIVATE KEY-----\n" +
  "MC4CAQAwBQYDK2VwBCIEINTuctv5E1hK1bbY8fdp+K06/nwoy/HU++CXqI9EdVhC\n" +
  "-----END PRIVATE KEY-----\n";
const RFC8410_SEED =
  "d4ee72dbf913584ad5b6d8f1f769f8ad3afe7c28cbf1d4fbe097a88f44755842";

const PKCS8_V1_PREFIX = decodeHex("302e020100300506032b657004220420");

interface Run {
  code: number;
  stdout: Uint8Array;
  stderr: string;
}

/** Runs the real openssl; fails the test clearly when it is not installed. */
async function openssl(...args: string[]): Promise<Run> {
  let output: Deno.CommandOutput;
  try {
    output = await new Deno.Command("openssl", {
      args,
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
    }).output();
  } catch (cause) {
    if (cause instanceof Deno.errors.NotFound) {
      throw new Error(
        "Cannot run 'openssl': it is not installed or not on PATH; these tests need the real OpenSSL 3 command",
        { cause },
      );
    }
    throw cause;
  }
  return {
    code: output.code,
    stdout: output.stdout,
    stderr: new TextDecoder().decode(output.stderr),
  };
}

/** Runs openssl and asserts that it exits 0. */
async function opensslOk(...args: string[]): Promise<Uint8Array> {
  const run = await openssl(...args);
  assert.equal(
    run.code,
    0,
    `openssl ${args.join(" ")} exited ${run.code}: ${run.stderr}`,
  );
  return run.stdout;
}

async function withTempDir(fn: (dir: string) => Promise<void>): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: "pod_keys_test_" });
  try {
    await fn(dir);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

function pem(der: Uint8Array, label = "PRIVATE KEY"): string {
  return `-----BEGIN ${label}-----\n${
    encodeBase64(der)
  }\n-----END ${label}-----\n`;
}

/** The public key of the private key in `file`, as openssl writes it (DER). */
function publicKeyDer(file: string): Promise<Uint8Array> {
  return opensslOk("pkey", "-in", file, "-pubout", "-outform", "DER");
}

Deno.test("encodePrivateKeyPem() writes the RFC 8410 example key exactly", () => {
  assert.equal(encodePrivateKeyPem(decodeHex(RFC8410_SEED)), RFC8410_PEM);
});

Deno.test("decodePrivateKeyPem() reads the RFC 8410 example key", () => {
  assert.equal(encodeHex(decodePrivateKeyPem(RFC8410_PEM)), RFC8410_SEED);
});

Deno.test("encodePrivateKeyPem() and decodePrivateKeyPem() round-trip random seeds", () => {
  for (let i = 0; i < 50; i++) {
    const seed = crypto.getRandomValues(new Uint8Array(32));
    const text = encodePrivateKeyPem(seed);
    assert.match(
      text,
      /^-----BEGIN PRIVATE KEY-----\n[A-Za-z0-9+/]{64}\n-----END PRIVATE KEY-----\n$/,
    );
    assert.deepEqual(decodePrivateKeyPem(text), seed);
    // CRLF line ends and base64 split over lines are still PEM.
    const body = text.split("\n")[1]!;
    const crlf = `-----BEGIN PRIVATE KEY-----\r\n${body.slice(0, 20)}\r\n${
      body.slice(20)
    }\r\n-----END PRIVATE KEY-----\r\n`;
    assert.deepEqual(decodePrivateKeyPem(crlf), seed);
  }
});

Deno.test("encodePrivateKeyPem() refuses a seed that is not 32 bytes with RangeError", () => {
  for (const length of [0, 31, 33, 64]) {
    assert.throws(
      () => encodePrivateKeyPem(new Uint8Array(length)),
      new RangeError(
        `Cannot encode Ed25519 key: expected 32 bytes, got ${length}`,
      ),
    );
  }
});

Deno.test("decodePrivateKeyPem() reads a PKCS#8 v2 key with its public key attached", async () => {
  const seed = decodeHex(RFC8410_SEED);
  const publicKey = await publicKeyFromSeed(seed);
  const der = concat(
    decodeHex("3051020101300506032b657004220420"),
    seed,
    decodeHex("812100"),
    publicKey,
  );
  assert.equal(der.length, 83);
  assert.deepEqual(decodePrivateKeyPem(pem(der)), seed);
});

Deno.test("decodePrivateKeyPem() rejects garbage, other key types and wrong lengths with TypeError", () => {
  const seed = decodeHex(RFC8410_SEED);
  const v1 = concat(PKCS8_V1_PREFIX, seed);
  const body = encodeBase64(v1);
  const cases: [string, string][] = [
    ["empty text", ""],
    ["garbage", "hello, world"],
    ["bare base64", body],
    [
      "armour without body",
      "-----BEGIN PRIVATE KEY-----\n-----END PRIVATE KEY-----\n",
    ],
    ["non-base64 body", pem(new Uint8Array(0)).replace("\n\n", "\n!!!!\n")],
    [
      "missing padding",
      `-----BEGIN PRIVATE KEY-----\n${
        encodeBase64(v1.subarray(0, 47)).replace(/=+$/, "")
      }\n-----END PRIVATE KEY-----\n`,
    ],
    // The RSA armour with an Ed25519 body: the label matters.
    ["RSA PRIVATE KEY label", pem(v1, "RSA PRIVATE KEY")],
    ["PUBLIC KEY label", pem(v1, "PUBLIC KEY")],
    ["ENCRYPTED PRIVATE KEY label", pem(v1, "ENCRYPTED PRIVATE KEY")],
    // A PKCS#8 header for rsaEncryption (1.2.840.113549.1.1.1).
    [
      "RSA-like PKCS#8",
      pem(
        decodeHex(
          "302e020100300d06092a864886f70d0101010500041a3018020100020100020100",
        ),
      ),
    ],
    // X25519 (1.3.101.110): same shape and length, other algorithm.
    [
      "X25519",
      pem(concat(decodeHex("302e020100300506032b656e04220420"), seed)),
    ],
    [
      "31-byte seed",
      pem(
        concat(
          decodeHex("302d020100300506032b657004210420"),
          seed.subarray(0, 31),
        ),
      ),
    ],
    [
      "33-byte seed",
      pem(
        concat(
          decodeHex("302f020100300506032b657004230421"),
          seed,
          new Uint8Array(1),
        ),
      ),
    ],
    ["v1 prefix, 31-byte seed", pem(v1.subarray(0, 47))],
    ["v1 prefix, 33-byte seed", pem(concat(v1, new Uint8Array(1)))],
    [
      "v1 header, version 1",
      pem(concat(decodeHex("302e020101300506032b657004220420"), seed)),
    ],
    [
      "v2 without the public key tag",
      pem(
        concat(
          decodeHex("3051020101300506032b657004220420"),
          seed,
          new Uint8Array(35),
        ),
      ),
    ],
  ];
  for (const [what, text] of cases) {
    assert.throws(() => decodePrivateKeyPem(text), NOT_A_KEY, what);
  }
});

Deno.test("decodePrivateKeyPem() rejects an RSA key from openssl genpkey with TypeError", async () => {
  await withTempDir(async (dir) => {
    const file = `${dir}/rsa.pem`;
    await opensslOk(
      "genpkey",
      "-algorithm",
      "RSA",
      "-pkeyopt",
      "rsa_keygen_bits:1024",
      "-out",
      file,
    );
    const text = await Deno.readTextFile(file);
    assert.match(text, /^-----BEGIN PRIVATE KEY-----\n/);
    assert.throws(() => decodePrivateKeyPem(text), NOT_A_KEY);
  });
});

Deno.test("decodePrivateKeyPem() reads a key from openssl genpkey -algorithm ed25519 and derives its public key", async () => {
  await withTempDir(async (dir) => {
    const file = `${dir}/key.pem`;
    await opensslOk("genpkey", "-algorithm", "ed25519", "-out", file);
    const seed = decodePrivateKeyPem(await Deno.readTextFile(file));
    assert.equal(seed.length, 32);
    const der = await publicKeyDer(file);
    // SubjectPublicKeyInfo for Ed25519 is 12 bytes of header then the key.
    assert.equal(der.length, 44);
    assert.equal(
      encodeHex(await publicKeyFromSeed(seed)),
      encodeHex(der.subarray(der.length - 32)),
    );
  });
});

Deno.test("encodePrivateKeyPem() writes a key that openssl reads, with the same public key and signatures", async () => {
  await withTempDir(async (dir) => {
    const seed = crypto.getRandomValues(new Uint8Array(32));
    const file = `${dir}/ours.pem`;
    await Deno.writeTextFile(file, encodePrivateKeyPem(seed));
    const check = await openssl("pkey", "-in", file, "-noout");
    assert.equal(check.code, 0, check.stderr);

    const der = await publicKeyDer(file);
    const publicKey = await publicKeyFromSeed(seed);
    assert.equal(
      encodeHex(der.subarray(der.length - 32)),
      encodeHex(publicKey),
    );

    // Ed25519 is deterministic: openssl's signature equals ours.
    const message = new TextEncoder().encode("pod-manifest-v1\n{}");
    await Deno.writeFile(`${dir}/msg`, message);
    const signature = await opensslOk(
      "pkeyutl",
      "-sign",
      "-rawin",
      "-inkey",
      file,
      "-in",
      `${dir}/msg`,
    );
    assert.equal(encodeHex(signature), encodeHex(await sign(message, seed)));
  });
});

Deno.test("openssl rejects a truncated copy of a PEM we write", async () => {
  // Shows that the openssl check above can fail.
  await withTempDir(async (dir) => {
    const file = `${dir}/bad.pem`;
    const der = decodeHex(`302e020100300506032b657004220420${RFC8410_SEED}`);
    await Deno.writeTextFile(file, pem(der.subarray(0, 45)));
    const check = await openssl("pkey", "-in", file, "-noout");
    assert.notEqual(check.code, 0);
  });
});
