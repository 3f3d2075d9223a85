/**
 * Fuzz targets for fast-check, shared by `tests/unit/fuzz_test.ts` (a short run)
 * and `scripts/fuzz.ts` (`deno task fuzz`, a million cases a target): the
 * pod parser and verifier, the signaling frame parser, `resolveOptions` and
 * the command line. Each target pairs an arbitrary (random and near-valid
 * inputs) with a check of the invariant: every input either succeeds or
 * fails with our error and a known code, never another exception, never a
 * hang. Where the input is known to be valid (or known to be broken in one
 * way) the check also asserts the exact outcome.
 *
 * @module
 */

import fc from "fast-check";
import { concatBytes as concat } from "./bytes.ts";
import { captureOutput } from "./capture_output.ts";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import {
  decodeBase64,
  decodeBase64Url,
  encodeBase64,
  encodeBase64Url,
} from "../../src/_util/encoding.ts";
import { type CreateSignalServer, runCli } from "../../src/cli/main.ts";
import { OPTIONS, resolveOptions } from "../../src/config/options.ts";
import {
  generateKeyPair,
  publicKeyFromSeed,
  sign,
} from "../../src/pod/ed25519.ts";
import { PodError } from "../../src/pod/errors.ts";
import { parsePod, SLOT_END, SLOT_LITERAL } from "../../src/pod/format.ts";
import { signedMessage } from "../../src/pod/manifest.ts";
import { encodePrivateKeyPem } from "../../src/pod/keys.ts";
import { signPod } from "../../src/pod/sign.ts";
import { verifyPod } from "../../src/pod/verify.ts";
import { BrokerError, PROBLEM_CODES } from "../../src/http/problem.ts";
import { MemoryRegistry } from "../../src/registries/memory.ts";
import { sha256 } from "../../src/_util/hash.ts";
import {
  parseClientMessage,
  SIGNAL_ERROR_CODES,
} from "../../src/signaling/messages.ts";

/** One fuzz target: inputs, and the invariant each input must keep. */
export interface FuzzTarget {
  /** Short name, as `deno task fuzz` prints it. */
  readonly name: string;
  /** Random and near-valid inputs. */
  readonly arbitrary: fc.Arbitrary<unknown>;
  /**
   * Runs the code under test on one input.
   *
   * @returns null when the invariant holds, else what broke.
   */
  check(input: unknown): Promise<string | null>;
}

/** The targets, with what they set up (keys, a temp dir) until disposed. */
export interface FuzzTargets extends AsyncDisposable {
  /** parsePod, verifyPod, parseClientMessage, resolveOptions, cli. */
  readonly targets: readonly FuzzTarget[];
}

/** Options of {@linkcode runFuzzTarget}. */
export interface FuzzRunOptions {
  /** Cases to run. */
  runs: number;
  /** fast-check seed (random when omitted). */
  seed?: number;
  /** A case that takes longer is a hang. @default {10000} */
  caseTimeoutMs?: number;
  /** Stop at the first failure and shrink it (tests), or count them all. */
  stopOnFailure?: boolean;
  /** Failing inputs kept for the report, one of each kind. @default {3} */
  maxExamples?: number;
}

/** What one run of a target found. */
export interface FuzzReport {
  /** The target's name. */
  name: string;
  /** Cases run (shrinking included when it stopped on a failure). */
  cases: number;
  /** Cases that broke the invariant. */
  failures: number;
  /** The first failing inputs and what broke (shrunk when stopping). */
  examples: string[];
  /** Wall time of the run. */
  ms: number;
  /** The seed, to repeat the run. */
  seed: number;
}

const encoder = new TextEncoder();
const POD_CODES = new Set([
  "manifest_missing",
  "manifest_malformed",
  "signature_invalid",
  "content_mismatch",
]);
const PARSE_CODES = new Set(["manifest_missing", "manifest_malformed"]);
const SIGNAL_CODES = new Set<string>(SIGNAL_ERROR_CODES);

/**
 * Runs `runs` cases of one target, each bounded in time.
 *
 * @param target The target.
 * @param options Cases, seed, time bound, stop or count.
 * @returns The figures and the first failing inputs.
 */
export async function runFuzzTarget(
  target: FuzzTarget,
  options: FuzzRunOptions,
): Promise<FuzzReport> {
  const timeout = options.caseTimeoutMs ?? 10_000;
  const maxExamples = options.maxExamples ?? 3;
  const seed = options.seed ?? (Math.random() * 2 ** 31) | 0;
  const examples: string[] = [];
  const kinds = new Set<string>();
  let cases = 0;
  let failures = 0;
  let last = "";
  const property = fc.asyncProperty(target.arbitrary, async (input) => {
    cases++;
    const problem = await boundedCheck(target, input, timeout);
    if (problem === null) return true;
    failures++;
    last = problem;
    // One example of each kind of failure (quoted values and numbers aside).
    const kind = problem.replace(/'[^']*'|"[^"]*"|\d+/g, "_").slice(0, 50);
    if (
      !options.stopOnFailure && examples.length < maxExamples &&
      !kinds.has(kind)
    ) {
      kinds.add(kind);
      examples.push(`${problem}\n    input: ${fc.stringify(input)}`);
    }
    return !options.stopOnFailure;
  });
  const started = performance.now();
  const details = await fc.check(property, { numRuns: options.runs, seed });
  const ms = performance.now() - started;
  if (details.failed) {
    examples.unshift(
      details.counterexample
        ? `${last || String(details.errorInstance)}\n    input (shrunk): ${
          fc.stringify(details.counterexample[0])
        }`
        : `fast-check stopped: ${String(details.errorInstance)}`,
    );
    if (!options.stopOnFailure) failures = Math.max(failures, 1);
  }
  return { name: target.name, cases, failures, examples, ms, seed };
}

async function checkSafely(
  target: FuzzTarget,
  input: unknown,
): Promise<string | null> {
  try {
    return await target.check(input);
  } catch (error) {
    return `the check itself threw: ${describe(error)}`;
  }
}

async function boundedCheck(
  target: FuzzTarget,
  input: unknown,
  ms: number,
): Promise<string | null> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const started = performance.now();
  try {
    const result = await Promise.race([
      checkSafely(target, input),
      new Promise<string>((resolve) => {
        timer = setTimeout(
          () => resolve(`no answer within ${ms} ms (a hang)`),
          ms,
        );
      }),
    ]);
    // A synchronous hang cannot be raced; a slow one is caught here.
    const took = performance.now() - started;
    if (result === null && took > ms) {
      return `took ${Math.round(took)} ms (over ${ms} ms)`;
    }
    return result;
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Builds the targets: makes keys and signed pods, and a temp directory the
 * command line works in (its files stay there).
 *
 * @returns The targets; dispose to remove the temp directory.
 */
export async function createFuzzTargets(): Promise<FuzzTargets> {
  const seeds: Uint8Array[] = [];
  for (let i = 0; i < 3; i++) seeds.push((await generateKeyPair()).seed);
  const publicKeys: string[] = [];
  for (const seed of seeds) {
    publicKeys.push(encodeBase64Url(await publicKeyFromSeed(seed)));
  }
  const dir = await Deno.makeTempDir({ prefix: "pod_fuzz_" });
  const cli = await createCliTarget(dir, seeds[0]!);
  return {
    targets: [
      parsePodTarget(),
      verifyPodTarget(seeds, publicKeys),
      parseClientMessageTarget(),
      resolveOptionsTarget(),
      cli,
    ],
    [Symbol.asyncDispose]: async () => {
      await Deno.remove(dir, { recursive: true }).catch(() => {});
    },
  };
}

// ---------------------------------------------------------------- helpers

function describe(error: unknown): string {
  if (error instanceof Error) {
    return `${error.name}: ${error.message.split("\n")[0]}`;
  }
  return `a thrown ${typeof error}: ${String(error)}`;
}

function bytesEqual(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && a.every((byte, i) => byte === b[i]);
}

function indexOfBytes(haystack: Uint8Array, needle: Uint8Array): number {
  outer: for (let i = 0; i + needle.length <= haystack.length; i++) {
    for (let j = 0; j < needle.length; j++) {
      if (haystack[i + j] !== needle[j]) continue outer;
    }
    return i;
  }
  return -1;
}

/** Whether `error` is one of ours: a coded pod or broker error. */
function podErrorProblem(
  error: unknown,
  codes: ReadonlySet<string>,
): string | null {
  if (!(error instanceof PodError || error instanceof BrokerError)) {
    return `threw a foreign error: ${describe(error)}`;
  }
  if (!codes.has(error.code) || !(error.code in PROBLEM_CODES)) {
    return `threw an unexpected code '${error.code}'`;
  }
  if (!error.message.startsWith("Cannot ")) {
    return `error message is not "Cannot ...": ${error.message}`;
  }
  return null;
}

/** An edit of a text: insert, delete or replace one character. */
interface TextEdit {
  at: number;
  op: "insert" | "delete" | "replace";
  char: string;
}

const editChar = fc.oneof(
  fc.constantFrom(
    "=",
    " ",
    "\n",
    "<",
    "-",
    "_",
    "+",
    "/",
    "A",
    "\u00e9",
    "\u0000",
    '"',
    "\\",
    "}",
    ",",
  ),
  fc.string({ unit: "binary", minLength: 1, maxLength: 1 }),
);
const textEdits: fc.Arbitrary<readonly TextEdit[]> = fc.array(
  fc.record({
    at: fc.nat(),
    op: fc.constantFrom("insert", "delete", "replace") as fc.Arbitrary<
      TextEdit["op"]
    >,
    char: editChar,
  }),
  { maxLength: 3 },
);

function applyEdits(text: string, edits: readonly TextEdit[]): string {
  for (const { at, op, char } of edits) {
    const i = text.length === 0 ? 0 : at % (text.length + 1);
    if (op === "insert") text = text.slice(0, i) + char + text.slice(i);
    else if (op === "delete") text = text.slice(0, i) + text.slice(i + 1);
    else text = text.slice(0, i) + char + text.slice(i + 1);
  }
  return text;
}

const b64url = (n: number) =>
  fc.uint8Array({ minLength: n, maxLength: n }).map(encodeBase64Url);

/** A value for a manifest member: right-shaped or not. */
function memberValue(right: fc.Arbitrary<unknown>): fc.Arbitrary<unknown> {
  return fc.oneof(
    { weight: 4, arbitrary: right },
    {
      weight: 1,
      arbitrary: fc.oneof(
        fc.jsonValue({ maxDepth: 2 }),
        b64url(31),
        b64url(33),
        b64url(64),
        fc.constantFrom("", "A", "AA==", "A".repeat(43), "_".repeat(43)),
      ),
    },
  );
}

const rfc3339 = fc.date({
  min: new Date("0000-01-01T00:00:00.000Z"),
  max: new Date("9999-12-31T23:59:59.999Z"),
  noInvalidDate: true,
}).map((date) => date.toISOString());

/** A manifest-shaped JSON object, near valid. */
const manifestLike: fc.Arbitrary<Record<string, unknown>> = fc.record({
  v: memberValue(fc.constant(1)),
  publicKey: memberValue(b64url(32)),
  contentSha256: memberValue(b64url(32)),
  signature: memberValue(b64url(64)),
  name: memberValue(fc.string({ unit: "binary", minLength: 1, maxLength: 20 })),
  createdAt: memberValue(
    fc.oneof(
      rfc3339,
      fc.constantFrom(
        "2026-02-30T00:00:00Z",
        "2026-11-21T24:00:00Z",
        "2026-11-21T12:00:00+01:00",
        "2026-11-21 12:00:00Z",
      ),
    ),
  ),
  extra: fc.jsonValue({ maxDepth: 1 }),
}, { requiredKeys: [] });

/** Payload text: base64 of near-valid JSON, or text near base64. */
const payloadText: fc.Arbitrary<string> = fc.oneof(
  fc.tuple(manifestLike, textEdits, textEdits).map(
    ([manifest, jsonEdits, b64Edits]) =>
      applyEdits(
        encodeBase64(
          encoder.encode(applyEdits(JSON.stringify(manifest), jsonEdits)),
        ),
        b64Edits,
      ),
  ),
  fc.jsonValue({ maxDepth: 2 }).map((value) =>
    encodeBase64(encoder.encode(JSON.stringify(value)))
  ),
  fc.uint8Array({ maxLength: 48 }).map(encodeBase64),
  fc.string({
    unit: fc.constantFrom(
      ..."ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=-_ <",
    ),
    maxLength: 64,
  }),
  fc.string({ unit: "binary", maxLength: 32 }),
);

const htmlChunk: fc.Arbitrary<Uint8Array> = fc.oneof(
  fc.uint8Array({ maxLength: 48 }),
  fc.constantFrom(
    SLOT_LITERAL,
    SLOT_END,
    "<",
    "</script",
    "<script>",
    "__POD_MANIFEST_B64",
    '<script type="application/pod-manifest" id="__POD_MANIFEST_B64"',
    "\u0000",
    "\uFEFF",
    "<!doctype html><html><head>",
    "</head><body>",
  ).map((text) => encoder.encode(text)),
  fc.string({ maxLength: 24 }).map((text) => encoder.encode(text)),
  payloadText.map((text) => encoder.encode(text)),
);

/** Pod-shaped bytes: random, chunks of pod syntax, or one slot with a fuzzed payload. */
const podBytes: fc.Arbitrary<Uint8Array> = fc.oneof(
  fc.uint8Array({ maxLength: 512 }),
  fc.array(htmlChunk, { maxLength: 8 }).map((parts) => concat(...parts)),
  fc.tuple(
    fc.array(htmlChunk, { maxLength: 3 }),
    payloadText,
    fc.boolean(),
    fc.array(htmlChunk, { maxLength: 3 }),
  ).map(([before, payload, closed, after]) =>
    concat(
      ...before,
      encoder.encode(SLOT_LITERAL + payload + (closed ? SLOT_END : "")),
      ...after,
    )
  ),
);

// ---------------------------------------------------------------- parsePod

function parsePodTarget(): FuzzTarget {
  const slot = encoder.encode(SLOT_LITERAL);
  const end = encoder.encode(SLOT_END);
  return {
    name: "parsePod",
    arbitrary: podBytes,
    check(input) {
      const bytes = input as Uint8Array;
      let parsed;
      try {
        parsed = parsePod(bytes);
      } catch (error) {
        return Promise.resolve(podErrorProblem(error, PARSE_CODES));
      }
      const { payloadStart, payloadEnd, payload } = parsed;
      if (
        !bytesEqual(
          bytes.subarray(payloadStart - slot.length, payloadStart),
          slot,
        ) ||
        !bytesEqual(bytes.subarray(payloadEnd, payloadEnd + end.length), end)
      ) {
        return Promise.resolve("accepted a payload not inside the slot");
      }
      const decoded = decodeBase64(payload);
      if (decoded === null || encodeBase64(decoded) !== payload) {
        return Promise.resolve(
          "accepted a payload that is not canonical base64",
        );
      }
      return Promise.resolve(null);
    },
  };
}

// ---------------------------------------------------------------- verifyPod

/** A signed pod, described: how it is built and then broken (or not). */
interface SignedPodCase {
  key: number;
  before: Uint8Array;
  after: Uint8Array;
  name: string | undefined;
  createdAt: string | undefined;
  /** Manifest members replaced before signing. */
  preEdits: readonly (readonly [string, unknown])[];
  /** Manifest members replaced after signing. */
  postEdits: readonly (readonly [string, unknown])[];
  /** Sign with another key than the manifest names. */
  otherSigner: boolean;
  jsonEdits: readonly TextEdit[];
  payloadEdits: readonly TextEdit[];
  /** Byte flips of the finished pod: position and XOR mask. */
  flips: readonly (readonly [number, number])[];
}

const memberName = fc.constantFrom(
  "v",
  "publicKey",
  "contentSha256",
  "signature",
  "name",
  "createdAt",
  "extra",
  "__proto__",
);

/** Usually none, else up to two members set to a 32-byte base64url value. */
const manifestEdits = fc.oneof(
  { weight: 3, arbitrary: fc.constant([]) },
  {
    weight: 1,
    arbitrary: fc.array(
      fc.tuple(memberName, memberValue(b64url(32))),
      { maxLength: 2 },
    ),
  },
);

const signedPodCase: fc.Arbitrary<SignedPodCase> = fc.record({
  key: fc.nat({ max: 2 }),
  before: fc.oneof(
    fc.constant(encoder.encode("<!doctype html><html><head>")),
    fc.array(htmlChunk, { maxLength: 3 }).map((parts) => concat(...parts)),
  ),
  after: fc.oneof(
    fc.constant(encoder.encode("</head><body><p>hi</p></body></html>\n")),
    fc.array(htmlChunk, { maxLength: 3 }).map((parts) => concat(...parts)),
  ),
  name: fc.option(fc.string({ unit: "binary", minLength: 1, maxLength: 200 }), {
    nil: undefined,
  }),
  createdAt: fc.option(rfc3339, { nil: undefined }),
  preEdits: manifestEdits,
  postEdits: manifestEdits,
  otherSigner: fc.oneof(
    { weight: 4, arbitrary: fc.constant(false) },
    { weight: 1, arbitrary: fc.constant(true) },
  ),
  jsonEdits: fc.oneof(
    { weight: 4, arbitrary: fc.constant([]) },
    { weight: 1, arbitrary: textEdits },
  ),
  payloadEdits: fc.oneof(
    { weight: 4, arbitrary: fc.constant([]) },
    { weight: 1, arbitrary: textEdits },
  ),
  flips: fc.oneof(
    { weight: 2, arbitrary: fc.constant([]) },
    {
      weight: 1,
      arbitrary: fc.array(
        fc.tuple(fc.nat(), fc.integer({ min: 1, max: 255 })),
        { minLength: 1, maxLength: 3 },
      ),
    },
  ),
});

function setMember(
  manifest: Record<string, unknown>,
  key: string,
  value: unknown,
): void {
  // An own "__proto__" member, as JSON.parse would make it.
  Object.defineProperty(manifest, key, {
    value,
    enumerable: true,
    writable: true,
    configurable: true,
  });
}

function verifyPodTarget(
  seeds: readonly Uint8Array[],
  publicKeys: readonly string[],
): FuzzTarget {
  return {
    name: "verifyPod",
    arbitrary: fc.oneof(
      { weight: 1, arbitrary: podBytes.map((bytes) => ({ bytes })) },
      { weight: 2, arbitrary: signedPodCase },
    ),
    async check(input) {
      if ("bytes" in (input as object)) {
        return await verifyOutcome((input as { bytes: Uint8Array }).bytes);
      }
      const c = input as SignedPodCase;
      const before = concat(c.before, encoder.encode(SLOT_LITERAL));
      const after = concat(encoder.encode(SLOT_END), c.after);
      const contentSha256 = encodeBase64Url(sha256(before, after));
      const manifest: Record<string, unknown> = {
        v: 1,
        publicKey: publicKeys[c.key]!,
        contentSha256,
      };
      if (c.name !== undefined) manifest.name = c.name;
      if (c.createdAt !== undefined) manifest.createdAt = c.createdAt;
      for (const [key, value] of c.preEdits) setMember(manifest, key, value);
      const signer = seeds[c.otherSigner ? (c.key + 1) % seeds.length : c.key]!;
      let signature: string;
      try {
        signature = encodeBase64Url(
          await sign(signedMessage(manifest as never), signer),
        );
      } catch (error) {
        return `signedMessage/sign threw on a JSON manifest: ${
          describe(error)
        }`;
      }
      setMember(manifest, "signature", signature);
      for (const [key, value] of c.postEdits) setMember(manifest, key, value);
      const json = applyEdits(JSON.stringify(manifest), c.jsonEdits);
      const payload = applyEdits(
        encodeBase64(encoder.encode(json)),
        c.payloadEdits,
      );
      const built = concat(before, encoder.encode(payload), after);
      const bytes = built.slice();
      for (const [at, mask] of c.flips) bytes[at % bytes.length]! ^= mask;
      const outcome = await verifyOutcome(bytes);
      if (outcome !== null) return outcome;
      return expectation(c, bytes, built, before, after, contentSha256);
    },
  };

  async function verifyOutcome(bytes: Uint8Array): Promise<string | null> {
    try {
      const verified = await verifyPod(bytes);
      if (verified.ownerPubkey !== verified.manifest.publicKey) {
        return "ownerPubkey differs from the manifest's publicKey";
      }
      if (verified.contentSha256 !== verified.manifest.contentSha256) {
        return "accepted a pod whose contentSha256 differs";
      }
      return null;
    } catch (error) {
      return podErrorProblem(error, POD_CODES);
    }
  }

  /** The exact outcome where the case says what it must be. */
  async function expectation(
    c: SignedPodCase,
    bytes: Uint8Array,
    built: Uint8Array,
    before: Uint8Array,
    after: Uint8Array,
    contentSha256: string,
  ): Promise<string | null> {
    const untouched = c.preEdits.length === 0 && c.postEdits.length === 0 &&
      c.jsonEdits.length === 0 && c.payloadEdits.length === 0;
    // Only a pod with exactly one slot, ours, has a known outcome.
    const slot = encoder.encode(SLOT_LITERAL);
    if (
      indexOfBytes(c.before, slot) !== -1 || indexOfBytes(c.after, slot) !== -1
    ) return null;
    const code = await verifyPod(bytes).then(() => "ok", (e) => e.code);
    const outsidePayloadChanged = !bytesEqual(
      bytes.subarray(0, before.length),
      before,
    ) || !bytesEqual(bytes.subarray(bytes.length - after.length), after);
    if (untouched && bytesEqual(bytes, built)) {
      const want = c.otherSigner ? "signature_invalid" : "ok";
      return code === want
        ? null
        : `a ${
          want === "ok" ? "valid pod" : "pod signed by another key"
        } gave ${code}`;
    }
    if (untouched && !c.otherSigner && outsidePayloadChanged && code === "ok") {
      return "accepted a pod whose bytes outside the payload changed";
    }
    const onlyDigest = c.preEdits.length === 1 &&
      c.preEdits[0]![0] === "contentSha256" &&
      typeof c.preEdits[0]![1] === "string" &&
      decodeBase64Url(c.preEdits[0]![1])?.length === 32 &&
      c.preEdits[0]![1] !== contentSha256 &&
      c.postEdits.length === 0 && c.jsonEdits.length === 0 &&
      c.payloadEdits.length === 0 && !c.otherSigner &&
      bytesEqual(bytes, built);
    if (onlyDigest && code !== "content_mismatch") {
      return `a signed pod with a wrong contentSha256 gave ${code}`;
    }
    return null;
  }
}

// ------------------------------------------------------- parseClientMessage

const tricky: fc.Arbitrary<unknown> = fc.oneof(
  fc.jsonValue({ maxDepth: 2 }),
  fc.constantFrom(
    null,
    true,
    0,
    -1,
    1.5,
    1e308,
    "",
    "__proto__",
    "constructor",
    [],
    {},
  ),
);
const sessionId = fc.stringMatching(/^[A-Za-z0-9_-]{1,128}$/);
const sdpType = fc.constantFrom("offer", "answer", "pranswer", "rollback");
const validData = fc.oneof(
  fc.record({ sdp: fc.record({ type: sdpType, sdp: fc.string() }) }),
  fc.record({
    candidate: fc.option(
      fc.record({
        candidate: fc.string(),
        sdpMid: fc.option(fc.string()),
        sdpMLineIndex: fc.option(fc.nat()),
        usernameFragment: fc.option(fc.string()),
      }, { requiredKeys: ["candidate"] }),
    ),
  }),
);
/** Frames the protocol accepts, exactly as they must parse. */
const validFrame: fc.Arbitrary<Record<string, unknown>> = fc.oneof(
  fc.record({ type: fc.constant("join"), session: sessionId }),
  fc.record({
    type: fc.constant("signal"),
    to: fc.string({ unit: "binary" }),
    data: validData,
  }),
  fc.constant({ type: "ice" }),
  fc.constant({ type: "leave" }),
);
/** Frames near the protocol: members of the wrong type, extra members. */
const nearFrame: fc.Arbitrary<Record<string, unknown>> = fc.tuple(
  fc.oneof(
    validFrame,
    fc.record({
      type: fc.oneof(
        fc.constantFrom("join", "signal", "ice", "leave", "Join", "chat"),
        tricky,
      ),
      session: fc.oneof(sessionId, fc.string({ unit: "binary" }), tricky),
      to: fc.oneof(fc.string(), tricky),
      data: fc.oneof(
        validData,
        fc.record({
          sdp: fc.oneof(
            fc.record({ type: fc.oneof(sdpType, tricky), sdp: tricky }, {
              requiredKeys: [],
            }),
            tricky,
          ),
          candidate: fc.oneof(
            fc.record({
              candidate: tricky,
              sdpMid: tricky,
              sdpMLineIndex: fc.oneof(fc.integer(), tricky),
              usernameFragment: tricky,
              extra: tricky,
            }, { requiredKeys: [] }),
            tricky,
          ),
        }, { requiredKeys: [] }),
        tricky,
      ),
    }, { requiredKeys: [] }),
  ),
  fc.array(
    fc.tuple(
      fc.oneof(
        fc.constantFrom(
          "__proto__",
          "constructor",
          "toString",
          "type",
          "session",
          "to",
          "data",
        ),
        fc.string(),
      ),
      tricky,
    ),
    { maxLength: 2 },
  ),
).map(([frame, extras]) => {
  const out = { ...frame };
  for (const [key, value] of extras) setMember(out, key, value);
  return out;
});

function parseClientMessageTarget(): FuzzTarget {
  return {
    name: "parseClientMessage",
    arbitrary: fc.oneof(
      fc.string({ unit: "binary", maxLength: 256 }).map((text) => ({ text })),
      fc.json({ maxDepth: 3 }).map((text) => ({ text })),
      fc.tuple(nearFrame, textEdits).map(([frame, edits]) => ({
        text: applyEdits(JSON.stringify(frame), edits),
      })),
      validFrame.map((frame) => ({ text: JSON.stringify(frame), valid: true })),
    ),
    check(input) {
      const { text, valid } = input as { text: string; valid?: boolean };
      let result;
      try {
        result = parseClientMessage(text);
      } catch (error) {
        return Promise.resolve(`threw: ${describe(error)}`);
      }
      if ("error" in result) {
        if (!SIGNAL_CODES.has(result.error)) {
          return Promise.resolve(`unknown error code '${result.error}'`);
        }
        if (
          typeof result.message !== "string" ||
          !result.message.startsWith("Cannot ")
        ) {
          return Promise.resolve(
            `error message is not "Cannot ...": ${result.message}`,
          );
        }
        if (valid) {
          return Promise.resolve(`refused a valid frame with ${result.error}`);
        }
        return Promise.resolve(null);
      }
      // What the parser accepts must parse again to the same message.
      const again = JSON.stringify(result);
      const reparsed = parseClientMessage(again);
      if (JSON.stringify(reparsed) !== again) {
        return Promise.resolve(`accepted ${again} but not its own output`);
      }
      if (valid && again !== text) {
        return Promise.resolve(`a valid frame came back changed: ${again}`);
      }
      return Promise.resolve(null);
    },
  };
}

// ----------------------------------------------------------- resolveOptions

/** Groups of nested options (`signaling`, `turn`...), from the table. */
const GROUP_NAMES = [
  ...new Set(
    OPTIONS.filter((row) => row.key.includes(".")).map((row) =>
      row.key.split(".")[0]!
    ),
  ),
];
const TOP_KEYS = [
  ...new Set(OPTIONS.map((row) => row.key.split(".")[0]!)),
];
const INNER_KEYS = OPTIONS.filter((row) => row.key.includes(".")).map((row) =>
  row.key.split(".")[1]!
);
const OPTION_KEYS = new Set([...OPTIONS.map((row) => row.key), ...GROUP_NAMES]);
const odd = fc.constantFrom(
  "unknown",
  "__proto__",
  "constructor",
  "toString",
  "hasOwnProperty",
  "",
);
const optionValue: fc.Arbitrary<unknown> = fc.oneof(
  fc.anything({ maxDepth: 2 }),
  fc.integer(),
  fc.integer({ min: -2, max: 70_000 }),
  fc.constantFrom(
    0,
    -1,
    1,
    15,
    16,
    65_535,
    65_536,
    604_800,
    604_801,
    2 ** 53,
    2 ** 53 - 1,
    Number.NaN,
    Infinity,
    -0,
    1.5,
    "",
    "8080",
    true,
    false,
    null,
    undefined,
    "http://example.com",
    "https://a.example/b/",
    "http://a/?q",
    "http://a/#f",
    "ftp://x",
    "allow-scripts",
    "allow-scripts allow-same-origin",
    "ALLOW-SAME-ORIGIN",
    "stun:a.example",
    "turn:a.example",
    "turns:a.example:5349",
    "turn: a",
  ),
  fc.array(
    fc.oneof(
      fc.constantFrom("stun:a.example", "turn:a.example", "null", "", "x"),
      fc.string(),
      fc.record({
        urls: fc.oneof(
          fc.constantFrom("stun:a.example", "turn:a.example", "http://x"),
          fc.array(fc.constantFrom("stun:a.example", "turns:b.example", "")),
          tricky,
        ),
        username: fc.oneof(fc.string(), tricky),
        credential: fc.oneof(fc.string(), tricky),
        extra: tricky,
      }, { requiredKeys: [] }),
    ),
    { maxLength: 3 },
  ),
  fc.func(fc.anything()),
);
const groupValue = fc.oneof(
  fc.array(
    fc.tuple(fc.oneof(fc.constantFrom(...INNER_KEYS), odd), optionValue),
    { maxLength: 4 },
  ).map(objectOf),
  optionValue,
);

function objectOf(
  entries: readonly [string, unknown][],
): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, value] of entries) setMember(out, key, value);
  return out;
}

function resolveOptionsTarget(): FuzzTarget {
  const registry = new MemoryRegistry();
  const registryValue = fc.oneof(
    { weight: 4, arbitrary: fc.constant(registry) },
    {
      weight: 1,
      arbitrary: fc.oneof(
        fc.constant({
          putPod() {},
          getRecord() {},
          getBlob() {},
          bumpHits() {},
        }),
        fc.constant({ putPod() {}, getRecord() {} }),
        optionValue,
      ),
    },
  );
  const options = fc.oneof(
    { weight: 1, arbitrary: fc.anything({ maxDepth: 2 }) },
    {
      weight: 6,
      arbitrary: fc.tuple(
        fc.option(registryValue, { nil: undefined }),
        fc.array(
          fc.oneof(
            fc.tuple(
              fc.constantFrom(
                ...TOP_KEYS.filter((k) => !GROUP_NAMES.includes(k)),
              ),
              optionValue,
            ),
            fc.tuple(fc.constantFrom(...GROUP_NAMES), groupValue),
            fc.tuple(odd, optionValue),
          ),
          { maxLength: 5 },
        ),
      ).map(([registry, entries]) => {
        const out = objectOf(entries);
        if (registry !== undefined) out.registry = registry;
        return out;
      }),
    },
  );
  return {
    name: "resolveOptions",
    arbitrary: options,
    check(input) {
      let resolved;
      try {
        resolved = resolveOptions(input as never);
      } catch (error) {
        return Promise.resolve(optionProblem(error));
      }
      for (const spec of OPTIONS) {
        if (spec.kind !== "integer") continue;
        const [head, tail] = spec.key.split(".") as [string, string?];
        const group = resolved[head as keyof typeof resolved] as unknown;
        if (group === null) continue; // turn, when not configured
        const value = tail === undefined
          ? group
          : (group as Record<string, unknown>)[tail];
        if (
          !Number.isSafeInteger(value) || (value as number) < (spec.min ?? 0) ||
          (value as number) > (spec.max ?? Number.MAX_SAFE_INTEGER)
        ) {
          return Promise.resolve(`resolved ${spec.key} to ${String(value)}`);
        }
      }
      try {
        const servers = resolved.iceServersFor("AAAAAAAAAAAAAAAA");
        if (!Array.isArray(servers)) {
          return Promise.resolve("iceServersFor did not give an array");
        }
      } catch (error) {
        return Promise.resolve(`iceServersFor threw: ${describe(error)}`);
      }
      return Promise.resolve(null);
    },
  };
}

function optionProblem(error: unknown): string | null {
  if (!(error instanceof TypeError)) {
    return `threw a foreign error: ${describe(error)}`;
  }
  const match = /^Cannot start the broker: option '([^']*)' \S/.exec(
    error.message,
  );
  if (match) {
    return OPTION_KEYS.has(match[1]!)
      ? null
      : `named an option that does not exist: ${error.message}`;
  }
  if (
    /^Cannot start the broker: unknown option '.*'$/s.test(error.message) ||
    error.message === "Cannot start the broker: options must be an object"
  ) {
    return null;
  }
  return `threw a TypeError that is not ours: ${error.message}`;
}

// ---------------------------------------------------------------------- CLI

/** Thrown by the fake server factory once the options are accepted. */
class Accepted extends Error {
  constructor() {
    super("fuzz-sentinel: options accepted");
  }
}

const fakeCreateSignalServer: CreateSignalServer = (options) => {
  resolveOptions(options);
  return Promise.reject(new Accepted());
};

const SERVE_FLAGS = OPTIONS.filter((row) => row.flag !== null);
const FLAG_NAMES = [
  ...SERVE_FLAGS.map((row) => row.flag!),
  "registry",
  "data-dir",
  "out",
  "key",
  "name",
  "created-at",
  "owner",
  "help",
];

async function createCliTarget(
  dir: string,
  seed: Uint8Array,
): Promise<FuzzTarget> {
  const path = (name: string) => `${dir}/${name}`;
  writeFileSync(path("pod.html"), await signPod("<p>fuzz</p>", seed));
  writeFileSync(path("bad.html"), "<p>no manifest</p>");
  writeFileSync(path("key.pem"), encodePrivateKeyPem(seed));
  writeFileSync(path("secret"), "a-turn-secret\n");
  writeFileSync(path("empty"), "");
  writeFileSync(
    path("deny.txt"),
    `# deny list\nkey:${"A".repeat(43)}\nsha256:${"B".repeat(43)}\n`,
  );
  writeFileSync(path("bad-deny.txt"), "nonsense line\n");
  mkdirSync(path("dir"));
  mkdirSync(path("out"));
  const paths = fc.oneof(
    fc.constantFrom(
      ...[
        "pod.html",
        "bad.html",
        "key.pem",
        "secret",
        "empty",
        "deny.txt",
        "bad-deny.txt",
        "dir",
        "data",
        "missing/sub",
        "pod.html/x",
      ].map(path),
    ),
    // Anything else stays inside the temp directory.
    fc.string({ maxLength: 12 }).map((name) =>
      path(`out/${name.replace(/[/\\\0]/g, "_") || "_"}`)
    ),
  );
  const freeText = fc.oneof(
    fc.string({ maxLength: 16 }),
    fc.string({ unit: "binary", maxLength: 16 }),
  ).map((text) => text.replaceAll("/", "_"));
  const integerText = fc.oneof(
    fc.nat({ max: 70_000 }).map(String),
    fc.integer().map(String),
    fc.constantFrom(
      "0",
      "-1",
      "08",
      "1e3",
      " 8",
      "0x10",
      "99999999999999999",
      "9007199254740993",
      "",
    ),
  );
  const valueFor = (flag: string): fc.Arbitrary<string> => {
    const spec = SERVE_FLAGS.find((row) => row.flag === flag);
    if (
      ["data-dir", "out", "key", "turn-secret-file", "deny-list"].includes(flag)
    ) {
      return paths;
    }
    if (spec?.choices) {
      return fc.oneof(fc.constantFrom(...spec.choices), freeText);
    }
    if (flag === "registry") {
      return fc.oneof(
        fc.constantFrom("memory", "sqlite", "postgres"),
        freeText,
      );
    }
    if (spec?.kind === "integer") return fc.oneof(integerText, freeText);
    if (
      spec?.kind === "url" || spec?.kind === "iceServers" ||
      spec?.kind === "turnUrls"
    ) {
      return fc.oneof(
        fc.constantFrom(
          "http://example.com",
          "https://a.example/x/",
          "http://a/?q",
          "stun:a.example:3478",
          "turn:a.example",
          "turns:a.example:5349",
          "stun: a",
        ),
        fc.webUrl(),
        freeText,
      );
    }
    return freeText;
  };
  const flagToken = (flags: readonly string[]): fc.Arbitrary<string[]> =>
    fc.constantFrom(...flags, "help").chain((flag) =>
      fc.tuple(valueFor(flag), fc.nat({ max: 5 })).map(([value, form]) =>
        form === 0 ? [`--${flag}=${value}`] : form === 1 ? [`--${flag}`] : [
          `--${flag}`,
          value,
        ]
      )
    );
  const stray: fc.Arbitrary<string[]> = fc.oneof(
    flagToken(FLAG_NAMES),
    fc.constantFrom<string[]>(
      ["-h"],
      ["--help"],
      ["-V"],
      ["--version"],
      ["--"],
      ["-"],
      ["-x"],
      ["--no-such-flag"],
      ["--port"],
    ),
    freeText.map((text) => [text]),
  );
  const podId = fc.oneof(
    fc.stringMatching(/^[A-Za-z0-9]{12}$/),
    fc.constant("AAAAAAAAAAAA"),
    freeText,
  );
  /** Each command with mostly its own flags, and now and then a stray token. */
  const command = (
    name: string[],
    flags: readonly string[],
    positional?: fc.Arbitrary<string>,
  ): fc.Arbitrary<string[]> =>
    fc.array(
      fc.oneof(
        { weight: flags.length ? 8 : 0, arbitrary: flagToken(flags) },
        {
          weight: positional ? 3 : 0,
          arbitrary: (positional ?? freeText).map((text) => [text]),
        },
        { weight: 1, arbitrary: stray },
      ),
      { maxLength: 6 },
    ).map((tokens) => [...name, ...tokens.flat()]);
  const serveFlags = [
    ...SERVE_FLAGS.map((row) => row.flag!),
    "registry",
    "data-dir",
  ];
  const registryFlags = ["registry", "data-dir"];
  const argv = fc.oneof(
    { weight: 3, arbitrary: command([], serveFlags) },
    { weight: 2, arbitrary: command(["serve"], serveFlags) },
    { weight: 1, arbitrary: command(["verify"], [], paths) },
    {
      weight: 1,
      arbitrary: command(["sign"], ["key", "name", "created-at", "out"], paths),
    },
    { weight: 1, arbitrary: command(["keygen"], ["out", "help"]) },
    { weight: 1, arbitrary: command(["list"], [...registryFlags, "owner"]) },
    { weight: 1, arbitrary: command(["delete"], registryFlags, podId) },
  ) // publish would reach the network.
    .filter((args) => args[0] !== "publish");

  return {
    name: "cli",
    arbitrary: argv,
    async check(input) {
      const args = input as string[];
      let code: number;
      let err: string;
      try {
        ({ value: code, stderr: err } = await captureOutput(() =>
          runCli(inside(dir, args), fakeCreateSignalServer)
        ));
      } catch (error) {
        return `runCli threw: ${describe(error)}`;
      }
      return cliProblem(args, code, err);
    },
  };
}

/**
 * `args` with the relative paths the CLI would write to (`--out`,
 * `--data-dir`) moved into `dir`. Not a `Deno.chdir`: the working directory
 * is the whole process's, and test files run side by side in one process,
 * so another file's child process would start in a folder about to go.
 * The argument after either flag is moved whatever it starts with: the CLI
 * takes `-x`, or `--port` for a command without it, as the flag's value.
 */
function inside(dir: string, args: string[]): string[] {
  const writes = /^(--(?:out|data-dir)=)(.+)$/;
  return args.map((arg, i) => {
    const joined = (path: string) =>
      path === "" || path.startsWith("/") ? path : join(dir, path);
    const flag = writes.exec(arg);
    if (flag) return flag[1] + joined(flag[2]!);
    const previous = args[i - 1];
    return previous === "--out" || previous === "--data-dir"
      ? joined(arg)
      : arg;
  });
}

function cliProblem(args: string[], code: number, err: string): string | null {
  const accepted = err.startsWith(
    "pod-broker: unexpected error (a bug, please report it): fuzz-sentinel",
  );
  if (accepted) return code === 1 ? null : `accepted, but exit code ${code}`;
  if (err.includes("unexpected error")) {
    return `exit ${code}, ${err.split("\n")[0]}`;
  }
  if (code === 0) return null;
  // One line: ends in "\n" and has no other line break (\r included, which
  // rewrites the line on a terminal).
  const lines = err.split(/\r\n?|[\n\v\f\u0085\u2028\u2029]/);
  const oneLine = lines.length === 2 && lines[1] === "" && err.endsWith("\n");
  if (code === 2) {
    if (!oneLine) {
      return `exit 2 with ${lines.length - 1} lines on stderr: ${
        JSON.stringify(err)
      }`;
    }
    return /^pod-broker: .+ \(see --help\)$/.test(lines[0]!)
      ? null
      : `exit 2 with an unexpected message: ${lines[0]}`;
  }
  if (code === 1 && oneLine) {
    const command = args[0];
    if (command === "verify" && /^pod-broker: .*: [a-z_]+: Cannot /.test(err)) {
      const podCode = /: ([a-z_]+): Cannot /.exec(err)![1]!;
      if (POD_CODES.has(podCode)) return null;
    }
    if (command === "delete" && /no such pod$/.test(lines[0]!)) return null;
  }
  return `exit ${code}: ${JSON.stringify(err)}`;
}
