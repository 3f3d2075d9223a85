// The client's `signature()` of a description: one SHA-256 fingerprint
// (repeated, identical, by each media section of a bundle) and the SDP
// session id; anything that could make the fingerprint DTLS checks differ
// from the one a peer's id is taken from is no signature.
import assert from "node:assert/strict";
import { signature } from "../../src/client/negotiation.ts";

const A = Array.from(
  { length: 32 },
  (_, i) => i.toString(16).padStart(2, "0").toUpperCase(),
).join(":");
const B = A.replace(/^00/, "FF");
const sdp = (...lines: string[]) =>
  ["v=0", "o=- 4611731400430051336 2 IN IP4 127.0.0.1", ...lines, ""].join(
    "\r\n",
  );

Deno.test("signature: one fingerprint, or the same one in every media section", () => {
  const one = sdp("m=application 9", `a=fingerprint:sha-256 ${A}`);
  assert.equal(signature(one), `${A} 4611731400430051336`);
  const bundle = sdp(
    "m=application 9",
    `a=fingerprint:sha-256 ${A}`,
    "m=audio 9",
    `a=fingerprint:SHA-256 ${A.toLowerCase()}`,
    "m=video 9",
    `a=fingerprint:sha-256 ${A}`,
  );
  assert.equal(signature(bundle), `${A} 4611731400430051336`);
});

Deno.test("signature: none for two fingerprints, another hash, one hidden mid-line, or none", () => {
  for (
    const bad of [
      sdp(`a=fingerprint:sha-256 ${A}`, `a=fingerprint:sha-256 ${B}`),
      sdp(`a=fingerprint:sha-1 ${A.slice(0, 59)}`),
      sdp(`a=fingerprint:sha-256 ${A}`, `x=a=fingerprint:sha-256 ${B}`),
      sdp(`a=fingerprint:sha-256 ${A}`, `a=fingerprint:sha-512 ${A}`),
      sdp("m=application 9"),
      `a=fingerprint:sha-256 ${A}\r\n`,
    ]
  ) assert.equal(signature(bad), undefined, bad);
});
