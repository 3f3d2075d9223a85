// Strict base64 / base64url and hex from src/_util/encoding.ts.
import assert from "node:assert/strict";
import {
  decodeBase64,
  decodeBase64Url,
  decodeHex,
  encodeBase64,
  encodeBase64Url,
  encodeHex,
} from "../../src/_util/encoding.ts";

const STD = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
const URL_SAFE =
  "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

function binary(bytes: Uint8Array): string {
  return String.fromCharCode(...bytes);
}

function toUrl(base64: string): string {
  return base64.replaceAll("+", "-").replaceAll("/", "_").replace(/=+$/, "");
}

/** Asserts that `decode` returns null for each `[what, text]` of `cases`. */
function assertRefuses(
  decode: (text: string) => Uint8Array | null,
  cases: [string, string][],
): void {
  for (const [what, text] of cases) assert.equal(decode(text), null, what);
}

Deno.test("encodeBase64() matches btoa() and decodeBase64() round-trips, lengths 0 to 100", () => {
  for (let length = 0; length <= 100; length++) {
    for (let round = 0; round < 5; round++) {
      const bytes = crypto.getRandomValues(new Uint8Array(length));
      const text = encodeBase64(bytes);
      assert.equal(text, btoa(binary(bytes)), `length ${length}`);
      assert.deepEqual(decodeBase64(text), bytes, `length ${length}`);
    }
  }
});

Deno.test("encodeBase64Url() matches btoa() in the url alphabet without padding and round-trips", () => {
  for (let length = 0; length <= 100; length++) {
    for (let round = 0; round < 5; round++) {
      const bytes = crypto.getRandomValues(new Uint8Array(length));
      const text = encodeBase64Url(bytes);
      assert.equal(text, toUrl(btoa(binary(bytes))), `length ${length}`);
      assert.doesNotMatch(text, /[=+/]/);
      assert.deepEqual(decodeBase64Url(text), bytes, `length ${length}`);
    }
  }
});

Deno.test("encodeBase64() and encodeBase64Url() use both alphabets' last two characters", () => {
  const bytes = new Uint8Array([0xfb, 0xff, 0xbf]);
  assert.equal(encodeBase64(bytes), "+/+/");
  assert.equal(encodeBase64Url(bytes), "-_-_");
  assert.equal(encodeBase64(new Uint8Array(0)), "");
  assert.equal(encodeBase64(new Uint8Array([0])), "AA==");
  assert.equal(encodeBase64(new Uint8Array([0, 0])), "AAA=");
  assert.equal(encodeBase64Url(new Uint8Array([0])), "AA");
});

Deno.test("decodeBase64() rejects non-canonical text", () => {
  const cases: [string, string][] = [
    ["missing padding (1 byte)", "AA"],
    ["missing padding (2 bytes)", "AAA"],
    ["missing one padding character", "AA="],
    ["too much padding", "A==="],
    ["only padding", "===="],
    ["padding in the middle", "AA==AAAA"],
    ["padding not at the end", "A=AA"],
    ["space", "AAAA AAAA"],
    ["newline", "AAAA\nAAAA"],
    ["trailing newline", "AAAA\n"],
    ["CRLF", "AAAA\r\nAAAA"],
    ["tab", "AA\tAA"],
    ["non-zero trailing bits, 1 byte", "AB=="],
    ["non-zero trailing bits, 1 byte (high)", "AP=="],
    ["non-zero trailing bits, 2 bytes", "AAB="],
    ["url alphabet -", "-AAA"],
    ["url alphabet _", "AA_A"],
    ["non-ASCII", "AAé="],
    ["astral", "AA\u{1F600}"],
    ["NUL", "AA\0="],
    ["dot", "AA.A"],
  ];
  assertRefuses(decodeBase64, cases);
});

Deno.test("decodeBase64Url() rejects non-canonical text", () => {
  const cases: [string, string][] = [
    ["padding", "AA=="],
    ["one padding character", "AAA="],
    ["standard alphabet +", "+AAA"],
    ["standard alphabet /", "AA/A"],
    ["impossible length", "AAAAA"],
    ["single character", "A"],
    ["space", "AAAA AAAA"],
    ["newline", "AAAA\n"],
    ["non-zero trailing bits, 1 byte", "AB"],
    ["non-zero trailing bits, 2 bytes", "AAB"],
    ["non-ASCII", "AAé"],
  ];
  assertRefuses(decodeBase64Url, cases);
});

Deno.test("decodeBase64() accepts a padded tail exactly when it is the canonical encoding", () => {
  // Every 2-character tail "XY==" and every "XYZ=" over the whole alphabet.
  let accepted = 0;
  for (const x of STD) {
    for (const y of STD) {
      const two = `${x}${y}==`;
      const decoded = decodeBase64(two);
      if (decoded) {
        accepted++;
        assert.equal(encodeBase64(decoded), two);
      }
      for (const z of STD) {
        const three = `${x}${y}${z}=`;
        const bytes = decodeBase64(three);
        if (bytes) {
          accepted++;
          assert.equal(encodeBase64(bytes), three);
        }
      }
    }
  }
  // One text per 1-byte value and per 2-byte value.
  assert.equal(accepted, 256 + 65536);
});

Deno.test("decodeBase64Url() accepts an unpadded tail exactly when it is the canonical encoding", () => {
  let accepted = 0;
  for (const x of URL_SAFE) {
    for (const y of URL_SAFE) {
      const decoded = decodeBase64Url(`${x}${y}`);
      if (decoded) {
        accepted++;
        assert.equal(encodeBase64Url(decoded), `${x}${y}`);
      }
    }
  }
  assert.equal(accepted, 256);
});

Deno.test("decodeBase64() decodes the empty string to no bytes", () => {
  assert.deepEqual(decodeBase64(""), new Uint8Array(0));
  assert.deepEqual(decodeBase64Url(""), new Uint8Array(0));
});

Deno.test("encodeHex() and decodeHex() round-trip lowercase hex", () => {
  const bytes = new Uint8Array(256).map((_, i) => i);
  const hex = encodeHex(bytes);
  assert.equal(hex.length, 512);
  assert.match(hex, /^[0-9a-f]+$/);
  assert.equal(hex.slice(0, 8), "00010203");
  assert.equal(hex.slice(-4), "feff");
  assert.deepEqual(decodeHex(hex), bytes);
  assert.deepEqual(
    decodeHex("DEADbeef"),
    new Uint8Array([0xde, 0xad, 0xbe, 0xef]),
  );
});
