// The pod format v1: format.ts (slot and payload), manifest.ts (schema and
// signed message), sign.ts (signPod) and verify.ts (the ordered checks).
import assert from "node:assert/strict";
import { concatBytes as concat } from "../support/bytes.ts";
import fc from "fast-check";
import {
  decodeBase64,
  decodeBase64Url,
  decodeHex,
  encodeBase64,
  encodeBase64Url,
} from "../../src/_util/encoding.ts";
import { publicKeyFromSeed, sign } from "../../src/pod/ed25519.ts";
import {
  findSlots,
  locatePayload,
  parsePod,
  SLOT_END,
  SLOT_LITERAL,
} from "../../src/pod/format.ts";
import {
  isRfc3339Utc,
  parseManifest,
  type PodManifest,
  signedMessage,
  type UnsignedManifest,
} from "../../src/pod/manifest.ts";
import { signPod } from "../../src/pod/sign.ts";
import { verifyPod } from "../../src/pod/verify.ts";
import { PodError } from "../../src/pod/errors.ts";

const encoder = new TextEncoder();
const decoder = new TextDecoder();

// A fixed author key, so failures are reproducible.
const SEED = new Uint8Array(32).fill(7);
const OTHER_SEED = new Uint8Array(32).fill(9);

const SAMPLE =
  "<!doctype html>\n<html><head><title>Test pod</title></head><body><p>hello</p></body></html>\n";

// A pod around one slot; its own script mentions the slot's id.
const BEFORE = '<!doctype html>\n<html><head><meta charset="utf-8">' +
  "<title>Test pod</title>" + SLOT_LITERAL;
const AFTER = "</script>\n</head><body><p>hello</p>" +
  '<script>document.getElementById("__POD_MANIFEST_B64");</script>' +
  "</body></html>\n";

async function sha256Url(...parts: (Uint8Array | string)[]): Promise<string> {
  const digest = await crypto.subtle.digest(
    "SHA-256",
    concat(...parts) as Uint8Array<ArrayBuffer>,
  );
  return encodeBase64Url(new Uint8Array(digest));
}

/** BEFORE + payload + AFTER, the payload given as raw text or bytes. */
function podWithPayload(payload: string | Uint8Array): Uint8Array {
  return concat(BEFORE, payload, AFTER);
}

/** A pod whose manifest payload is strict base64 of `json` (text or bytes). */
function podWithJson(json: string | Uint8Array): Uint8Array {
  return podWithPayload(
    encodeBase64(typeof json === "string" ? encoder.encode(json) : json),
  );
}

/** A correctly signed manifest for BEFORE/AFTER, with optional members. */
async function signedManifest(
  extra: { name?: string; createdAt?: string } = {},
  seed: Uint8Array = SEED,
): Promise<PodManifest> {
  const unsigned: UnsignedManifest = {
    v: 1,
    publicKey: encodeBase64Url(await publicKeyFromSeed(seed)),
    contentSha256: await sha256Url(BEFORE, AFTER),
    ...extra,
  };
  const signature = await sign(signedMessage(unsigned), seed);
  return { ...unsigned, signature: encodeBase64Url(signature) };
}

/** The code verifyPod throws for `pod`, or "ok". */
async function verdict(pod: Uint8Array): Promise<string> {
  try {
    await verifyPod(pod);
    return "ok";
  } catch (error) {
    if (error instanceof PodError) return error.code;
    throw error;
  }
}

/**
 * Asserts that `read(pod)` throws manifest_malformed with `message`, and that
 * verifyPod() refuses `pod` with that code.
 */
async function assertMalformed(
  pod: Uint8Array,
  read: (pod: Uint8Array) => unknown,
  message: string,
  what?: string,
): Promise<void> {
  assert.throws(() => read(pod), { code: "manifest_malformed", message }, what);
  assert.equal(await verdict(pod), "manifest_malformed", what);
}

/** The bytes of `pod` with its payload removed. */
function withoutPayload(pod: Uint8Array): Uint8Array {
  const { payloadStart, payloadEnd } = locatePayload(pod);
  return concat(pod.subarray(0, payloadStart), pod.subarray(payloadEnd));
}

/** Flips one bit of a base64url string's bytes. */
function flipUrl(text: string, index: number): string {
  const bytes = decodeBase64Url(text)!;
  bytes[index]! ^= 1;
  return encodeBase64Url(bytes);
}

// ---------------------------------------------------------------- happy path

Deno.test("verifyPod() accepts a pod with a correct manifest and returns it", async () => {
  const manifest = await signedManifest({
    name: "Chat",
    createdAt: "2026-11-21T12:00:00.000Z",
  });
  const pod = podWithJson(JSON.stringify(manifest));
  const result = await verifyPod(pod);
  assert.deepEqual(result, {
    manifest,
    ownerPubkey: encodeBase64Url(await publicKeyFromSeed(SEED)),
    contentSha256: await sha256Url(BEFORE, AFTER),
  });
});

Deno.test("verifyPod() accepts a payload whose JSON is not canonical (the signature covers the canonical form)", async () => {
  const manifest = await signedManifest({ name: "Chat" });
  const reordered = {
    signature: manifest.signature,
    name: manifest.name,
    v: manifest.v,
    contentSha256: manifest.contentSha256,
    publicKey: manifest.publicKey,
  };
  assert.equal(
    await verdict(podWithJson(JSON.stringify(reordered, null, 2))),
    "ok",
  );
});

Deno.test("verifyPod() accepts a pod whose script mentions __POD_MANIFEST_B64", async () => {
  assert.ok(AFTER.includes('getElementById("__POD_MANIFEST_B64")'));
  const manifest = await signedManifest();
  const payload = encodeBase64(encoder.encode(JSON.stringify(manifest)));
  const pod = podWithPayload(payload);
  assert.equal(findSlots(pod).length, 1);
  assert.equal(await verdict(pod), "ok");
});

// ------------------------------------------------------------- slot: missing

Deno.test("parsePod() and verifyPod() report manifest_missing without the slot literal", async () => {
  const cases: [string, string][] = [
    ["empty file", ""],
    ["plain page", "<!doctype html><p>hi</p>"],
    [
      "only a mention of the id",
      '<script>document.getElementById("__POD_MANIFEST_B64")</script>',
    ],
    [
      "single quotes",
      "<script type='application/pod-manifest' id='__POD_MANIFEST_B64'>e30=</script>",
    ],
    [
      "other attribute order",
      '<script id="__POD_MANIFEST_B64" type="application/pod-manifest">e30=</script>',
    ],
    [
      "upper-case tag",
      SLOT_LITERAL.replace("<script", "<SCRIPT") + "e30=</script>",
    ],
    ["extra space", SLOT_LITERAL.replace(" id=", "  id=") + "e30=</script>"],
    ["truncated literal", SLOT_LITERAL.slice(0, -1)],
  ];
  for (const [what, html] of cases) {
    const pod = encoder.encode(html);
    assert.deepEqual(findSlots(pod), [], what);
    assert.throws(
      () => parsePod(pod),
      (e: unknown) => e instanceof PodError && e.code === "manifest_missing",
      what,
    );
    assert.equal(await verdict(pod), "manifest_missing", what);
  }
});

Deno.test("PodError from parsePod() carries code and message", () => {
  assert.throws(() => parsePod(new Uint8Array(0)), {
    name: "PodError",
    code: "manifest_missing",
    message: "Cannot find the manifest slot in the pod",
  });
});

// ------------------------------------------------------------ slot: malformed

Deno.test("findSlots() finds every slot literal and verifyPod() rejects a second slot as manifest_malformed", async () => {
  const manifest = await signedManifest();
  const payload = encodeBase64(encoder.encode(JSON.stringify(manifest)));
  const one = podWithPayload(payload);
  const two = concat(one, SLOT_LITERAL, payload, SLOT_END);
  assert.deepEqual(findSlots(two), [
    BEFORE.length - SLOT_LITERAL.length,
    one.length,
  ]);
  await assertMalformed(
    two,
    parsePod,
    "Cannot accept the pod: it has 2 manifest slots, expected one",
  );
  // Even an empty second slot counts.
  const empty = concat(SLOT_LITERAL, SLOT_END, one);
  assert.equal(await verdict(empty), "manifest_malformed");
});

Deno.test("findSlots() finds what a byte-by-byte search finds, wherever the literal and its look-alikes sit", () => {
  const slot = encoder.encode(SLOT_LITERAL);
  const naive = (bytes: Uint8Array) => {
    const found: number[] = [];
    for (let at = 0; at + slot.length <= bytes.length;) {
      if (slot.every((byte, i) => bytes[at + i] === byte)) {
        found.push(at);
        at += slot.length;
      } else at += 1;
    }
    return found;
  };
  // Pieces that stress the skip: the literal, its prefixes and suffixes,
  // its last byte alone, and filler.
  const pieces = [
    slot,
    slot.subarray(0, 20),
    slot.subarray(1),
    slot.subarray(slot.length - 1),
    encoder.encode("<p>x</p>"),
    encoder.encode("\u{1F600}>"),
  ];
  fc.assert(
    fc.property(
      fc.array(
        fc.tuple(
          fc.nat({ max: pieces.length - 1 }),
          // Filler made of the literal's own bytes: many near misses.
          fc.array(fc.constantFrom(...slot), { maxLength: 70 }),
        ),
        { maxLength: 12 },
      ),
      (parts) => {
        const bytes = concat(
          ...parts.flatMap(([i, filler]) => [
            new Uint8Array(filler),
            pieces[i]!,
          ]),
        );
        assert.deepEqual(findSlots(bytes), naive(bytes));
      },
    ),
    { numRuns: 3_000 },
  );
});

Deno.test("parsePod() rejects a payload not closed by </script> as manifest_malformed", async () => {
  const manifest = await signedManifest();
  const payload = encodeBase64(encoder.encode(JSON.stringify(manifest)));
  const cases: [string, Uint8Array][] = [
    ["end of file", encoder.encode(BEFORE + payload)],
    ["end of file after '<'", encoder.encode(BEFORE + payload + "<")],
    ["cut-off end tag", encoder.encode(BEFORE + payload + "</scrip")],
    ["another tag", encoder.encode(BEFORE + payload + "<br></script>")],
    ["upper-case end tag", encoder.encode(BEFORE + payload + "</SCRIPT>")],
    ["end tag with space", encoder.encode(BEFORE + payload + "< /script>")],
  ];
  for (const [what, pod] of cases) {
    await assertMalformed(
      pod,
      locatePayload,
      "Cannot read the manifest: its payload is not closed by '</script>'",
      what,
    );
  }
});

Deno.test("parsePod() returns the payload's offsets, text and JSON", async () => {
  const manifest = await signedManifest();
  const payload = encodeBase64(encoder.encode(JSON.stringify(manifest)));
  const pod = podWithPayload(payload);
  const parsed = parsePod(pod);
  assert.deepEqual(parsed, {
    payloadStart: BEFORE.length,
    payloadEnd: BEFORE.length + payload.length,
    payload,
    json: manifest,
  });
  assert.deepEqual(withoutPayload(pod), encoder.encode(BEFORE + AFTER));
});

// ------------------------------------------------------------ payload: base64

/** A manifest whose padded base64 contains '+' or '/' and ends in '='. */
async function awkwardManifestJson(): Promise<{ json: string; b64: string }> {
  for (let i = 0; i < 64; i++) {
    const json = JSON.stringify(
      await signedManifest({ name: "?".repeat(3 + i) + "~>" }),
    );
    const b64 = encodeBase64(encoder.encode(json));
    if (/[+/]/.test(b64) && b64.endsWith("=") && !b64.endsWith("==")) {
      return { json, b64 };
    }
  }
  throw new Error("Cannot find an awkward manifest");
}

Deno.test("parsePod() rejects non-strict base64 payloads as manifest_malformed", async () => {
  const { b64 } = await awkwardManifestJson();
  assert.equal(await verdict(podWithPayload(b64)), "ok");
  // Set the unused low bits of the last character before the padding.
  const last = b64.length - 2;
  const STD =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  const bumped = STD[STD.indexOf(b64[last]!) | 1]!;
  assert.notEqual(bumped, b64[last]);
  const cases: [string, string][] = [
    ["missing padding", b64.replace(/=+$/, "")],
    ["space inside", `${b64.slice(0, 8)} ${b64.slice(8)}`],
    ["newline inside", `${b64.slice(0, 76)}\n${b64.slice(76)}`],
    ["CRLF line breaks", `${b64.slice(0, 76)}\r\n${b64.slice(76)}`],
    ["leading space", ` ${b64}`],
    ["trailing newline", `${b64}\n`],
    [
      "non-zero trailing bits",
      b64.slice(0, last) + bumped + b64.slice(last + 1),
    ],
    ["url alphabet", b64.replaceAll("+", "-").replaceAll("/", "_")],
    ["url alphabet, no padding", encodeBase64Url(decodeBase64(b64)!)],
    ["extra padding", `${b64}=`],
    ["empty payload", ""],
    ["padding only", "===="],
  ];
  for (const [what, payload] of cases) {
    assert.notEqual(payload, b64, what);
    const pod = podWithPayload(payload);
    await assertMalformed(
      pod,
      parsePod,
      "Cannot decode the manifest: the payload is not strict padded base64",
      what,
    );
  }
  // A payload byte outside ASCII (here a windows-1252 byte) is not base64.
  const nonAscii = concat(
    BEFORE,
    b64.slice(0, 4),
    new Uint8Array([0x80]),
    b64.slice(4),
    AFTER,
  );
  assert.equal(await verdict(nonAscii), "manifest_malformed");
});

// -------------------------------------------------------------- payload: JSON

Deno.test("parsePod() rejects a payload that is not UTF-8 JSON as manifest_malformed", async () => {
  const json = JSON.stringify(await signedManifest({ name: "Chat" }));
  assert.equal(await verdict(podWithJson(json)), "ok");
  const [head, tail] = json.split("Chat") as [string, string];
  const cases: [string, string | Uint8Array][] = [
    ["not JSON", "hello"],
    ["truncated JSON", json.slice(0, -1)],
    ["trailing garbage", `${json}x`],
    ["single quotes", json.replaceAll('"', "'")],
    ["invalid UTF-8 byte", concat(head, new Uint8Array([0xff]), tail)],
    ["overlong UTF-8", concat(head, new Uint8Array([0xc0, 0xaf]), tail)],
    ["UTF-8 surrogate", concat(head, new Uint8Array([0xed, 0xa0, 0x80]), tail)],
    ["truncated UTF-8", concat(head, new Uint8Array([0xe2, 0x98]), tail)],
    ["Latin-1 text", concat(head, new Uint8Array([0xe9]), tail)],
    [
      "UTF-16",
      new Uint8Array(
        new Uint16Array([...json].map((c) => c.charCodeAt(0))).buffer,
      ),
    ],
    ["byte order mark", concat(new Uint8Array([0xef, 0xbb, 0xbf]), json)],
  ];
  for (const [what, text] of cases) {
    await assertMalformed(
      podWithJson(text),
      parsePod,
      "Cannot parse the manifest: it is not UTF-8 JSON",
      what,
    );
  }
});

// ----------------------------------------------------------- manifest schema

Deno.test("parseManifest() rejects what is not a v1 manifest object as manifest_malformed", async () => {
  const m = await signedManifest({ name: "Chat" });
  const cases: [string, unknown][] = [
    ["JSON array", [m]],
    ["null", null],
    ["string", "manifest"],
    ["number", 1],
    ["empty object", {}],
    ["unknown member", { ...m, extra: 1 }],
    ["unknown member (case)", { ...m, Name: "Chat" }],
    [
      "__proto__ member",
      JSON.parse(`{"__proto__":{},${JSON.stringify(m).slice(1)}`),
    ],
    ["v:2", { ...m, v: 2 }],
    ['v:"1"', { ...m, v: "1" }],
    ["v:1.5", { ...m, v: 1.5 }],
    ["v:true", { ...m, v: true }],
    ["v missing", { ...m, v: undefined }],
    ["publicKey missing", { ...m, publicKey: undefined }],
    ["contentSha256 missing", { ...m, contentSha256: undefined }],
    ["signature missing", { ...m, signature: undefined }],
    ["publicKey not a string", { ...m, publicKey: 1 }],
    ["name empty", { ...m, name: "" }],
    ["name null", { ...m, name: null }],
    ["name not a string", { ...m, name: 5 }],
    ["createdAt null", { ...m, createdAt: null }],
  ];
  for (const [what, value] of cases) {
    // JSON.stringify drops undefined members, as a real payload would lack them.
    const json = JSON.parse(JSON.stringify(value) ?? "null");
    assert.throws(() => parseManifest(json), {
      code: "manifest_malformed",
    }, what);
    assert.equal(
      await verdict(podWithJson(JSON.stringify(value))),
      "manifest_malformed",
      what,
    );
  }
});

Deno.test("parseManifest() names the first member at fault", async () => {
  const m = await signedManifest();
  assert.throws(() => parseManifest([]), {
    message: "Cannot accept the manifest: the manifest is not a JSON object",
  });
  assert.throws(() => parseManifest({ ...m, extra: 1 }), {
    message: 'Cannot accept the manifest: unknown member "extra"',
  });
  assert.throws(() => parseManifest({ ...m, v: 2 }), {
    message: 'Cannot accept the manifest: "v" must be the integer 1',
  });
  assert.throws(() => parseManifest({ ...m, signature: "" }), {
    message:
      'Cannot accept the manifest: "signature" must be 64 bytes as base64url without padding',
  });
});

/** Seeds until the public key's base64url has '-' or '_' in it. */
async function keyWithUrlCharacters(): Promise<Uint8Array> {
  for (let i = 1; i < 256; i++) {
    const seed = new Uint8Array(32).fill(i);
    const key = encodeBase64Url(await publicKeyFromSeed(seed));
    if (/[-_]/.test(key)) return seed;
  }
  throw new Error("Cannot find a key with '-' or '_'");
}

Deno.test("parseManifest() rejects byte members of the wrong length or encoding as manifest_malformed", async () => {
  const seed = await keyWithUrlCharacters();
  const m = await signedManifest({}, seed);
  assert.equal(await verdict(podWithJson(JSON.stringify(m))), "ok");
  const key = decodeBase64Url(m.publicKey)!;
  assert.equal(key.length, 32);
  const cases: [string, Partial<Record<keyof PodManifest, unknown>>][] = [
    ["publicKey 31 bytes", { publicKey: encodeBase64Url(key.subarray(0, 31)) }],
    ["publicKey 33 bytes", {
      publicKey: encodeBase64Url(concat(key, new Uint8Array(1))),
    }],
    ["publicKey 64 bytes", { publicKey: encodeBase64Url(concat(key, key)) }],
    ["publicKey empty", { publicKey: "" }],
    ["publicKey padded", { publicKey: `${m.publicKey}=` }],
    ["publicKey standard alphabet", {
      publicKey: encodeBase64(key).slice(0, -1),
    }],
    ["publicKey standard base64", { publicKey: encodeBase64(key) }],
    ["publicKey hex", {
      publicKey: [...key].map((b) => b.toString(16).padStart(2, "0")).join(""),
    }],
    ["publicKey with space", { publicKey: ` ${m.publicKey}` }],
    [
      "contentSha256 31 bytes",
      {
        contentSha256: encodeBase64Url(
          decodeBase64Url(m.contentSha256)!.subarray(0, 31),
        ),
      },
    ],
    ["contentSha256 padded", { contentSha256: `${m.contentSha256}=` }],
    ["signature 63 bytes", { signature: flipUrl(m.signature, 0).slice(0, 84) }],
    ["signature padded", { signature: `${m.signature}==` }],
    ["signature 65 bytes", { signature: encodeBase64Url(new Uint8Array(65)) }],
  ];
  for (const [what, change] of cases) {
    const changed = { ...m, ...change };
    assert.notDeepEqual(changed, m, what);
    assert.equal(
      await verdict(podWithJson(JSON.stringify(changed))),
      "manifest_malformed",
      what,
    );
  }
});

Deno.test("parseManifest() counts name length in code points: 200 is accepted, 201 is not", async () => {
  const cases: [string, string, string][] = [
    ["1 character", "x", "ok"],
    ["200 ASCII", "a".repeat(200), "ok"],
    ["201 ASCII", "a".repeat(201), "manifest_malformed"],
    ["200 astral (400 UTF-16 units)", "\u{1F600}".repeat(200), "ok"],
    ["201 astral", "\u{1F600}".repeat(201), "manifest_malformed"],
    ["199 ASCII + 1 astral", "a".repeat(199) + "\u{1F600}", "ok"],
    [
      "200 ASCII + 1 astral",
      "a".repeat(200) + "\u{1F600}",
      "manifest_malformed",
    ],
    ["empty", "", "manifest_malformed"],
  ];
  for (const [what, name, expected] of cases) {
    const pod = podWithJson(JSON.stringify(await signedManifest({ name })));
    assert.equal(await verdict(pod), expected, what);
  }
});

Deno.test("parseManifest() accepts only RFC 3339 UTC createdAt times that exist", async () => {
  const cases: [string, string][] = [
    ["2026-11-21T12:00:00Z", "ok"],
    ["2026-11-21T12:00:00.000Z", "ok"],
    ["2026-11-21T12:00:00.123456789Z", "ok"],
    ["2024-02-29T23:59:59Z", "ok"],
    ["0001-01-01T00:00:00Z", "ok"],
    ["0099-12-31T23:59:59Z", "ok"],
    ["2026-11-21T12:00:00+01:00", "manifest_malformed"],
    ["2026-11-21T12:00:00+00:00", "manifest_malformed"],
    ["2026-11-21T12:00:00-05:00", "manifest_malformed"],
    ["2026-11-21T12:00:00", "manifest_malformed"],
    ["2026-11-21 12:00:00Z", "manifest_malformed"],
    ["2026-11-21", "manifest_malformed"],
    ["2026-11-21T12:00Z", "manifest_malformed"],
    ["2023-02-29T00:00:00Z", "manifest_malformed"],
    ["2026-13-01T00:00:00Z", "manifest_malformed"],
    ["2026-04-31T00:00:00Z", "manifest_malformed"],
    ["2026-11-21T24:00:00Z", "manifest_malformed"],
    ["2026-11-21T12:60:00Z", "manifest_malformed"],
    ["2026-11-21T12:00:61Z", "manifest_malformed"],
    ["2026-11-21T12:00:00.Z", "manifest_malformed"],
    ["Sat, 21 Nov 2026 12:00:00 GMT", "manifest_malformed"],
    ["", "manifest_malformed"],
  ];
  for (const [createdAt, expected] of cases) {
    assert.equal(isRfc3339Utc(createdAt), expected === "ok", createdAt);
    const pod = podWithJson(
      JSON.stringify(await signedManifest({ createdAt })),
    );
    assert.equal(await verdict(pod), expected, createdAt);
  }
  assert.equal(isRfc3339Utc(Date.now()), false);
});

// ---------------------------------------------------- signature and content

Deno.test("verifyPod() reports signature_invalid for a bad signature", async () => {
  const m = await signedManifest({ name: "Chat" });
  const other = await signedManifest({ name: "Chat" }, OTHER_SEED);
  const cases: [string, PodManifest][] = [
    ["flipped bit in R", { ...m, signature: flipUrl(m.signature, 0) }],
    ["flipped bit in S", { ...m, signature: flipUrl(m.signature, 40) }],
    ["zero signature", {
      ...m,
      signature: encodeBase64Url(new Uint8Array(64)),
    }],
    ["other author's key", { ...m, publicKey: other.publicKey }],
    ["other author's signature", { ...m, signature: other.signature }],
    ["changed name", { ...m, name: "Chat!" }],
    ["added createdAt", { ...m, createdAt: "2026-11-21T12:00:00Z" }],
    ["removed name", { ...m, name: undefined } as unknown as PodManifest],
  ];
  for (const [what, manifest] of cases) {
    const pod = podWithJson(JSON.stringify(manifest));
    await assert.rejects(() => verifyPod(pod), {
      name: "PodError",
      code: "signature_invalid",
      message: "Cannot verify the manifest signature with its public key",
    }, what);
  }
});

Deno.test("verifyPod() reports content_mismatch for a changed byte outside the slot", async () => {
  const m = await signedManifest();
  const payload = encodeBase64(encoder.encode(JSON.stringify(m)));
  const good = podWithPayload(payload);
  assert.equal(await verdict(good), "ok");
  const cases: [string, Uint8Array][] = [
    [
      "changed byte after the slot",
      encoder.encode(BEFORE + payload + AFTER.replace("hello", "hellp")),
    ],
    [
      "changed byte before the slot",
      encoder.encode(BEFORE.replace("Test", "Tesu") + payload + AFTER),
    ],
    [
      "first byte",
      encoder.encode("<!DOCTYPE" + BEFORE.slice(9) + payload + AFTER),
    ],
    ["appended byte", concat(good, "\n")],
    ["prepended BOM", concat(new Uint8Array([0xef, 0xbb, 0xbf]), good)],
    ["removed last byte", good.subarray(0, good.length - 1)],
  ];
  for (const [what, pod] of cases) {
    await assert.rejects(() => verifyPod(pod), {
      code: "content_mismatch",
      message:
        "Cannot accept the pod: its bytes do not match the signed contentSha256",
    }, what);
  }
});

Deno.test("verifyPod() checks the signature before the content: both bad gives signature_invalid", async () => {
  const m = await signedManifest();
  const badSignature = { ...m, signature: flipUrl(m.signature, 10) };
  const payload = encodeBase64(encoder.encode(JSON.stringify(badSignature)));
  const pod = encoder.encode(
    BEFORE + payload + AFTER.replace("hello", "hellp"),
  );
  assert.equal(await verdict(pod), "signature_invalid");
  // Each fault alone gives its own code.
  assert.equal(await verdict(podWithPayload(payload)), "signature_invalid");
  const goodPayload = encodeBase64(encoder.encode(JSON.stringify(m)));
  assert.equal(
    await verdict(
      encoder.encode(BEFORE + goodPayload + AFTER.replace("hello", "hellp")),
    ),
    "content_mismatch",
  );
  // And a malformed manifest comes before a bad signature.
  const malformed = { ...badSignature, v: 2 };
  assert.equal(
    await verdict(
      encoder.encode(
        BEFORE + encodeBase64(encoder.encode(JSON.stringify(malformed))) +
          AFTER.replace("hello", "hellp"),
      ),
    ),
    "manifest_malformed",
  );
});

Deno.test("verifyPod() rejects the identity-point key with an identity R and zero S as signature_invalid", async () => {
  // A cofactorless, non-strict verifier accepts this for any message:
  // [0]B = R + [k]A holds when A and R are both the identity.
  const identity = decodeHex("01" + "00".repeat(31));
  const manifest = {
    v: 1,
    publicKey: encodeBase64Url(identity),
    contentSha256: await sha256Url(BEFORE, AFTER),
    signature: encodeBase64Url(concat(identity, new Uint8Array(32))),
  };
  const pod = podWithJson(JSON.stringify(manifest));
  assert.equal(await verdict(pod), "signature_invalid");
});

Deno.test("verifyPod() rejects a manifest signed over a non-canonical serialization", async () => {
  const unsigned: UnsignedManifest = {
    v: 1,
    publicKey: encodeBase64Url(await publicKeyFromSeed(SEED)),
    contentSha256: await sha256Url(BEFORE, AFTER),
    name: "Chat",
  };
  const canonical = decoder.decode(signedMessage(unsigned));
  const sorted = JSON.stringify(
    Object.fromEntries(
      Object.entries(unsigned).sort(([a], [b]) => a < b ? -1 : 1),
    ),
  );
  assert.equal(canonical, `pod-manifest-v1\n${sorted}`);
  const messages: [string, string, string][] = [
    ["canonical", canonical, "ok"],
    [
      "insertion order",
      `pod-manifest-v1\n${JSON.stringify(unsigned)}`,
      "signature_invalid",
    ],
    [
      "with whitespace",
      `pod-manifest-v1\n${JSON.stringify(JSON.parse(sorted), null, 1)}`,
      "signature_invalid",
    ],
    ["without context", sorted, "signature_invalid"],
    [
      "context without newline",
      `pod-manifest-v1${sorted}`,
      "signature_invalid",
    ],
    ["trailing newline", `${canonical}\n`, "signature_invalid"],
    [
      "escaped ASCII",
      canonical.replace('"Chat"', '"\\u0043hat"'),
      "signature_invalid",
    ],
  ];
  for (const [what, message, expected] of messages) {
    const signature = await sign(encoder.encode(message), SEED);
    const manifest = { ...unsigned, signature: encodeBase64Url(signature) };
    assert.equal(
      await verdict(podWithJson(JSON.stringify(manifest))),
      expected,
      what,
    );
  }
});

// ----------------------------------------------------------- signedMessage

Deno.test("signedMessage() is the context then canonical JSON: sorted keys, no whitespace, JSON.stringify escapes", () => {
  const name =
    'say "hi" \\ </script> \u00e9\u2603\u{1F600}\n\t\u0001\u2028\ud800';
  const message = signedMessage({
    v: 1,
    publicKey: "PK",
    contentSha256: "CS",
    name,
    createdAt: "2026-11-21T12:00:00Z",
  });
  const expected = "pod-manifest-v1\n" +
    '{"contentSha256":"CS","createdAt":"2026-11-21T12:00:00Z",' +
    '"name":"say \\"hi\\" \\\\ </script> \u00e9\u2603\u{1F600}\\n\\t\\u0001\u2028\\ud800",' +
    '"publicKey":"PK","v":1}';
  assert.equal(decoder.decode(message), expected);
  assert.deepEqual(message, encoder.encode(expected));
  // Non-ASCII stays raw UTF-8 (the snowman is e2 98 83), not a \u escape.
  assert.ok([...message].join(",").includes("226,152,131"));
  assert.ok(!decoder.decode(message).includes("\\u2603"));
});

Deno.test("signedMessage() leaves out the signature and absent members", () => {
  const base = { v: 1 as const, publicKey: "PK", contentSha256: "CS" };
  const expected =
    'pod-manifest-v1\n{"contentSha256":"CS","publicKey":"PK","v":1}';
  assert.equal(decoder.decode(signedMessage(base)), expected);
  assert.equal(
    decoder.decode(signedMessage({ ...base, signature: "SIG" })),
    expected,
  );
  // Member order in the object does not matter.
  assert.equal(
    decoder.decode(
      signedMessage({ contentSha256: "CS", v: 1, publicKey: "PK" }),
    ),
    expected,
  );
});

// -------------------------------------------------------------------- signPod

Deno.test("signPod() inserts the slot before </head> and the pod verifies", async () => {
  const html = "<!doctype html>\n<html><HEAD><title>x</title></HEAD><body>" +
    "<p>a</p></body></html><!-- </head> -->\n";
  const at = html.indexOf("</HEAD>");
  const pod = await signPod(html, SEED, { name: "Chat" });
  const { payloadStart, payloadEnd } = locatePayload(pod);
  assert.equal(
    decoder.decode(pod.subarray(0, payloadStart)),
    html.slice(0, at) + SLOT_LITERAL,
  );
  assert.equal(
    decoder.decode(pod.subarray(payloadEnd)),
    SLOT_END + "\n" + html.slice(at),
  );
  const { manifest, ownerPubkey } = await verifyPod(pod);
  assert.equal(manifest.name, "Chat");
  assert.equal(ownerPubkey, encodeBase64Url(await publicKeyFromSeed(SEED)));
  assert.equal(manifest.createdAt, undefined);
  assert.deepEqual(Object.keys(manifest).sort(), [
    "contentSha256",
    "name",
    "publicKey",
    "signature",
    "v",
  ]);
});

Deno.test("signPod() inserts the slot at the very start when there is no </head>", async () => {
  const html = "<p>no head here</p>\n";
  const pod = await signPod(html, SEED);
  const { payloadStart, payloadEnd } = locatePayload(pod);
  assert.equal(payloadStart, SLOT_LITERAL.length);
  assert.equal(decoder.decode(pod.subarray(0, payloadStart)), SLOT_LITERAL);
  assert.equal(
    decoder.decode(pod.subarray(payloadEnd)),
    `${SLOT_END}\n${html}`,
  );
  assert.equal(await verdict(pod), "ok");
  assert.equal(await verdict(await signPod("", SEED)), "ok");
});

Deno.test("signPod() fills an existing empty slot in place", async () => {
  const html = concat(BEFORE, AFTER);
  const pod = await signPod(html, SEED);
  assert.deepEqual(withoutPayload(pod), html);
  assert.equal(findSlots(pod).length, 1);
  assert.equal(await verdict(pod), "ok");
});

Deno.test("signPod() re-signing an already signed pod replaces the payload", async () => {
  const first = await signPod(SAMPLE, SEED, { name: "First" });
  const second = await signPod(first, OTHER_SEED, { name: "Second" });
  assert.equal(findSlots(second).length, 1);
  assert.deepEqual(withoutPayload(second), withoutPayload(first));
  const { manifest, ownerPubkey } = await verifyPod(second);
  assert.equal(manifest.name, "Second");
  assert.equal(
    ownerPubkey,
    encodeBase64Url(await publicKeyFromSeed(OTHER_SEED)),
  );
  assert.equal(parsePod(first).payload === parsePod(second).payload, false);
  // Signing the same pod again with the same key and options is deterministic.
  assert.deepEqual(await signPod(second, SEED, { name: "First" }), first);
});

Deno.test("signPod() keeps bytes outside the slot exactly: BOM, NUL, invalid UTF-8", async () => {
  const html = concat(
    new Uint8Array([0xef, 0xbb, 0xbf]),
    "<!doctype html><html><head><title>",
    new Uint8Array([0x00, 0xff, 0xfe, 0xc0, 0x80, 0xed, 0xa0, 0x80, 0x80]),
    "</title></head><body>\r\n",
    new Uint8Array([0x00, 0x9d, 0xe9]),
    "</body></html>",
  );
  const original = html.slice();
  const at = html.findIndex((_, i) =>
    decoder.decode(html.subarray(i, i + 7)) === "</head>"
  );
  assert.equal(at, 54);
  const pod = await signPod(html, SEED);
  assert.deepEqual(html, original, "signPod() must not change its input");
  assert.deepEqual(pod.subarray(0, 3), new Uint8Array([0xef, 0xbb, 0xbf]));
  assert.deepEqual(
    withoutPayload(pod),
    concat(
      html.subarray(0, at),
      SLOT_LITERAL,
      SLOT_END,
      "\n",
      html.subarray(at),
    ),
  );
  const result = await verifyPod(pod);
  assert.equal(result.contentSha256, await sha256Url(withoutPayload(pod)));

  // With a slot already in place every outside byte stays where it was.
  const slotted = concat(
    new Uint8Array([0xef, 0xbb, 0xbf, 0x00, 0xff]),
    SLOT_LITERAL,
    SLOT_END,
    new Uint8Array([0xfe, 0x00, 0xc3]),
  );
  const signed = await signPod(slotted, SEED);
  assert.deepEqual(withoutPayload(signed), slotted);
  assert.equal(await verdict(signed), "ok");
  // And one changed outside byte is caught.
  const tampered = signed.slice();
  tampered[tampered.length - 1] = 0xc4;
  assert.equal(await verdict(tampered), "content_mismatch");
});

Deno.test("signPod() writes name and createdAt, and true means now", async () => {
  const fixed = await verifyPod(
    await signPod(SAMPLE, SEED, {
      name: 'a "quoted" </script> name \u2603',
      createdAt: "2026-11-21T12:00:00.000Z",
    }),
  );
  assert.equal(fixed.manifest.name, 'a "quoted" </script> name \u2603');
  assert.equal(fixed.manifest.createdAt, "2026-11-21T12:00:00.000Z");

  const before = Date.now();
  const now = await verifyPod(await signPod(SAMPLE, SEED, { createdAt: true }));
  const after = Date.now();
  const createdAt = now.manifest.createdAt!;
  assert.ok(isRfc3339Utc(createdAt), createdAt);
  const time = Date.parse(createdAt);
  assert.ok(time >= before && time <= after, createdAt);
});

Deno.test("signPod() refuses a document with two slots or an unclosed slot as manifest_malformed", async () => {
  await assert.rejects(
    () => signPod(SLOT_LITERAL + SLOT_END + SLOT_LITERAL + SLOT_END, SEED),
    { code: "manifest_malformed" },
  );
  await assert.rejects(
    () => signPod("<html><head>" + SLOT_LITERAL + "</head></html>", SEED),
    { code: "manifest_malformed" },
  );
});

Deno.test("signPod() writes a strict base64 payload of plain JSON.stringify", async () => {
  const pod = await signPod(SAMPLE, SEED, { name: "Chat" });
  const { payload, json } = parsePod(pod);
  assert.match(payload, /^[A-Za-z0-9+/]+={0,2}$/);
  assert.equal(payload, encodeBase64(encoder.encode(JSON.stringify(json))));
  assert.deepEqual(parseManifest(json), json);
});
