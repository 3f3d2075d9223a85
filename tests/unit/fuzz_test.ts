// A short fuzz run of each target (tests/support/fuzz_targets.ts): a few hundred to a
// few thousand cases, seconds in all. `deno task fuzz` runs a million each.
// FUZZ_SEED=N repeats a run; a failure prints the seed and the shrunk input.
import assert from "node:assert/strict";
import fc from "fast-check";
import {
  createFuzzTargets,
  type FuzzTarget,
  runFuzzTarget,
} from "../support/fuzz_targets.ts";
import { runCli } from "../../src/cli/main.ts";
import { captureOutput } from "../support/capture_output.ts";
import { signedPod } from "../support/helpers.ts";

const RUNS: Record<string, number> = {
  parsePod: 2_000,
  verifyPod: 500,
  parseClientMessage: 3_000,
  resolveOptions: 1_500,
  cli: 1_000,
};
const SEED = Deno.env.get("FUZZ_SEED");

for (const name of Object.keys(RUNS)) {
  Deno.test(`${name}() keeps its invariant on fuzzed input (fast-check)`, async () => {
    await using fuzz = await createFuzzTargets();
    const target = fuzz.targets.find((t) => t.name === name)!;
    const report = await runFuzzTarget(target, {
      runs: RUNS[name]!,
      stopOnFailure: true,
      ...(SEED ? { seed: Number(SEED) } : {}),
    });
    assert.equal(
      report.failures,
      0,
      `${name} failed (FUZZ_SEED=${report.seed}):\n${
        report.examples.join("\n")
      }`,
    );
    assert.ok(report.cases >= RUNS[name]!);
  });
}

Deno.test("runFuzzTarget() reports a broken invariant with a shrunk input", async () => {
  const broken: FuzzTarget = {
    name: "broken",
    arbitrary: fc.uint8Array(),
    check: (input) =>
      Promise.resolve((input as Uint8Array).length >= 4 ? "too long" : null),
  };
  const report = await runFuzzTarget(broken, {
    runs: 200,
    seed: 1,
    stopOnFailure: true,
  });
  assert.equal(report.failures > 0, true);
  assert.match(report.examples[0]!, /^too long\n {4}input \(shrunk\): /);
  assert.match(report.examples[0]!, /Uint8Array\.from\(\[0,0,0,0\]\)/);
});

Deno.test("runFuzzTarget() counts a case that never answers as a hang", async () => {
  const hanging: FuzzTarget = {
    name: "hanging",
    arbitrary: fc.nat(),
    check: (input) =>
      (input as number) % 2 === 1
        ? new Promise<never>(() => {})
        : Promise.resolve(null),
  };
  const report = await runFuzzTarget(hanging, {
    runs: 20,
    seed: 7,
    caseTimeoutMs: 20,
  });
  assert.equal(report.cases, 20);
  assert.equal(report.failures > 0, true);
  assert.match(report.examples[0]!, /^no answer within 20 ms \(a hang\)/);
});

Deno.test("the verifyPod target holds a valid pod to success and a foreign signature to signature_invalid", async () => {
  await using fuzz = await createFuzzTargets();
  const target = fuzz.targets.find((t) => t.name === "verifyPod")!;
  const pristine = {
    key: 0,
    before: new TextEncoder().encode("<!doctype html><head>"),
    after: new TextEncoder().encode("</head><p>hi</p>"),
    name: "Chat",
    createdAt: "2026-11-21T12:00:00.000Z",
    preEdits: [],
    postEdits: [],
    otherSigner: false,
    jsonEdits: [],
    payloadEdits: [],
    flips: [],
  };
  assert.equal(await target.check(pristine), null);
  assert.equal(await target.check({ ...pristine, otherSigner: true }), null);
  // A flip outside the payload must not verify; the check says so when the
  // verifier is right (content_mismatch) and also when it is not.
  assert.equal(await target.check({ ...pristine, flips: [[3, 1]] }), null);
  const good = await signedPod();
  assert.equal(await target.check({ bytes: good }), null);
});

Deno.test("the cli target accepts help, usage errors and options that reach the server", async () => {
  await using fuzz = await createFuzzTargets();
  const target = fuzz.targets.find((t) => t.name === "cli")!;
  // Accepted options reach the fake server factory: not a failure.
  assert.equal(await target.check(["--port", "0"]), null);
  assert.equal(await target.check(["--port", "x"]), null);
  assert.equal(await target.check(["--help"]), null);
  assert.equal(await target.check(["verify", "/nonexistent/pod.html"]), null);
});

Deno.test("the cli target writes nothing outside its own folder, whatever a written path starts with", async () => {
  await using fuzz = await createFuzzTargets();
  const target = fuzz.targets.find((t) => t.name === "cli")!;
  // The CLI takes "-x" and "--port" (not keygen's) as --out's value.
  for (const out of ["-x", "--port", "fuzz-key.pem"]) {
    assert.equal(await target.check(["keygen", "--out", out]), null);
    await assert.rejects(Deno.lstat(out), Deno.errors.NotFound, out);
  }
});

/** Runs the CLI in-process with stdout and stderr captured. */
async function captureCli(
  args: string[],
): Promise<{ code: number; stderr: string }> {
  const { value: code, stderr } = await captureOutput(() =>
    runCli(args, () => Promise.reject(new Error("not reached")))
  );
  return { code, stderr };
}

// Findings of the cli fuzz target, one test each with its minimal input.

Deno.test("runCli() keeps a usage error on one line when the bad value holds a line break", async () => {
  // The value is echoed as given: a newline, carriage return or vertical tab
  // in it splits the one-line message.
  // U+0085 (NEL) and U+2028/U+2029 are line breaks too (the 1M run found
  // NEL in a --script-policy value).
  for (const bad of ["a\nb", "a\rb", "\u000b", "a\u0085b", "a\u2028b"]) {
    const { code, stderr } = await captureCli(["delete", bad]);
    assert.equal(code, 2);
    assert.match(stderr, /^pod-broker: .* \(see --help\)\n$/);
    assert.equal(
      /[\r\n\v\f\u0085\u2028\u2029]/.test(stderr.slice(0, -1)),
      false,
      JSON.stringify(stderr),
    );
  }
});

Deno.test("runCli() refuses an empty --data-dir as a usage error", async () => {
  // Refused before anything is opened or written. (No Deno.chdir into a
  // temp folder: test files run side by side in one process and share its
  // working directory.)
  for (
    const args of [
      ["list", "--data-dir", ""],
      ["delete", "AAAAAAAAAAAA", "--data-dir", ""],
      ["--registry", "sqlite", "--data-dir", ""],
    ]
  ) {
    const { code, stderr } = await captureCli(args);
    assert.equal(code, 2, `${args.join(" ")}: ${stderr}`);
    assert.doesNotMatch(stderr, /unexpected error/);
  }
});

Deno.test("runCli() sign turns an unwritable --out into a usage error", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const key = `${dir}/key.pem`;
    const pod = `${dir}/pod.html`;
    await Deno.writeTextFile(pod, "<p>hi</p>");
    assert.equal((await captureCli(["keygen", "--out", key])).code, 0);
    const { code, stderr } = await captureCli([
      "sign",
      "--key",
      key,
      "--out",
      `${dir}/no/such/dir/pod.html`,
      pod,
    ]);
    assert.equal(code, 2, stderr);
    assert.match(stderr, /^pod-broker: Cannot .*\(see --help\)\n$/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
