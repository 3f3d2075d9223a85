// The signed content's digest found while a pod's bytes arrive equals the
// one verifyPod computes over the whole pod, wherever the chunks are cut
// (through the slot literal, the payload, the closing tag).
import assert from "node:assert/strict";
import fc from "fast-check";
import { ContentScan } from "../../src/pod/content_scan.ts";
import { locatePayload, SLOT_LITERAL } from "../../src/pod/format.ts";
import { sha256 } from "../../src/_util/hash.ts";

const encode = (text: string) => new TextEncoder().encode(text);

/** What verifyPod hashes, from the whole pod. */
function expected(pod: Uint8Array) {
  const { payloadStart, payloadEnd } = locatePayload(pod);
  return {
    payloadStart,
    payloadEnd,
    contentSha256: sha256(
      pod.subarray(0, payloadStart),
      pod.subarray(payloadEnd),
    ),
  };
}

/** The scan of `pod` fed as it arrives, cut at `cuts`. */
function scanned(pod: Uint8Array, cuts: number[]) {
  const scan = new ContentScan();
  const ends = [...new Set(cuts.map((c) => c % (pod.length + 1)))]
    .sort((a, b) => a - b);
  for (const end of [...ends, pod.length]) scan.update(pod, end);
  return scan.result();
}

Deno.test("ContentScan finds the payload and the content digest verifyPod finds, however the bytes are cut", () => {
  fc.assert(
    fc.property(
      fc.string({ maxLength: 300 }),
      fc.base64String({ maxLength: 200 }),
      fc.string({ maxLength: 300 }),
      fc.array(fc.nat(), { maxLength: 40 }),
      (before, payload, after, cuts) => {
        const clean = (text: string) => text.replaceAll("<script", "<x");
        const pod = encode(
          `${clean(before)}${SLOT_LITERAL}${payload}</script>${clean(after)}`,
        );
        assert.deepEqual(scanned(pod, cuts), expected(pod));
      },
    ),
    { numRuns: 500 },
  );
});

Deno.test("ContentScan byte by byte, and without a slot", () => {
  const pod = encode(`<p>a${SLOT_LITERAL}eyJ9</script><p>b</p>`);
  assert.deepEqual(scanned(pod, [...pod.keys()]), expected(pod));
  assert.equal(scanned(encode("<p>no manifest</p>"), [3, 9]), null);
});
