// The pod headers graded by the tools people use: Mozilla's HTTP Observatory
// (npm @mdn/mdn-http-observatory, its retriever, analyzers and grader) scans
// a pod over https on loopback, and Google's CSP Evaluator (npm
// csp_evaluator) reads the content policy. With scriptPolicy "hashes" the
// grade is A+ and nothing is HIGH; the default policy, which allows inline
// scripts, scores lower and is flagged, so both checks can fail.
//
// The deployment is the one the docs recommend: a TLS terminator (here a
// Deno.serve with a certificate from a throwaway CA made by openssl) in front
// of the broker with trustProxy, and plain http redirected to https.
import assert from "node:assert/strict";
import { OPENSSL, testCertificates } from "../support/tls.ts";
import { runCommand } from "../contract/_servers.ts";
import { gatedTest, inCi } from "../support/gated.ts";
import { createHash } from "node:crypto";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { CspEvaluator } from "npm:csp_evaluator@1.1.8/dist/evaluator.js";
import { CspParser } from "npm:csp_evaluator@1.1.8/dist/parser.js";
import type { PodHeaderOptions } from "../../src/config/types.ts";
import {
  signedPod,
  startServer,
  type TestServer,
  upload,
} from "../support/helpers.ts";

const hasOpenssl = existsSync(OPENSSL);
if (!hasOpenssl) {
  console.error(
    `\n!!! ${OPENSSL} is missing: the HTTP Observatory grade test ${
      inCi ? "FAILS in CI" : "is SKIPPED"
    }.\n!!! Install it: sudo apt-get install -y openssl\n`,
  );
}

const SCRIPT = "document.title = 'graded';";
const POD =
  `<!doctype html><html><head><title>Graded</title><script>${SCRIPT}</script></head><body><p>hi</p></body></html>`;
const SCRIPT_HASH = `'sha256-${
  createHash("sha256").update(SCRIPT).digest("base64")
}'`;
const ROOT = new URL("../..", import.meta.url).pathname;

/** A broker with `podHeaderOptions` behind a proxy, and one pod on it. */
async function brokerWithPod(
  podHeaderOptions: PodHeaderOptions,
): Promise<{ broker: TestServer; id: string }> {
  const broker = await startServer({ podHeaderOptions, trustProxy: true });
  const response = await upload(broker.url, await signedPod(POD) as BodyInit);
  assert.equal(response.status, 201);
  return { broker, id: (await response.json()).id };
}

/** The two Content-Security-Policy headers of a pod response. */
async function podPolicies(url: string): Promise<[string, string]> {
  const response = await fetch(url);
  await response.body?.cancel();
  assert.equal(response.status, 200);
  const policies = response.headers.get("Content-Security-Policy")!.split(
    ", ",
  );
  assert.equal(policies.length, 2);
  return policies as [string, string];
}

function run(
  cmd: string,
  args: string[],
  env: Record<string, string> = {},
): Promise<{ code: number; stdout: string; stderr: string }> {
  return runCommand(cmd, args, { cwd: ROOT, env });
}

/** A throwaway CA and a certificate for 127.0.0.1 signed by it. */
async function makeCertificates(dir: string): Promise<void> {
  await testCertificates(dir, "127.0.0.1", "IP:127.0.0.1");
}

// Runs in a child process, so that NODE_EXTRA_CA_CERTS (read at start-up)
// makes the scanner trust the test CA: the Observatory marks a certificate
// it cannot verify, and that costs the HSTS and redirection results.
// The package's postinstall step downloads Chromium's HSTS preload list,
// which an offline install lacks; a loopback address is on no preload list,
// so an empty list gives the same answers.
const SCAN = `
import fs from "node:fs";
const readFileSync = fs.readFileSync;
fs.readFileSync = (path, ...rest) =>
  String(path).endsWith("/conf/hsts-preload.json") ? "{}" : readFileSync(path, ...rest);
const pkg = "npm:@mdn/mdn-http-observatory@1.4.8/src";
const { retrieve } = await import(pkg + "/retriever/retriever.js");
const { ALL_TESTS } = await import(pkg + "/constants.js");
const { getGradeForScore, getScoreModifier } = await import(pkg + "/grader/grader.js");
const { MINIMUM_SCORE_FOR_EXTRA_CREDIT } = await import(pkg + "/grader/charts.js");
const [httpsPort, httpPort, path] = Deno.args;
const requests = await retrieve("127.0.0.1", { httpsPort, httpPort, path });
if (!requests.responses.auto) throw new Error("Cannot reach the site");
// The scoring of the package's scan(), which takes no port or path.
let withExtraCredit = 100;
let uncurved = 100;
const tests = {};
for (const test of ALL_TESTS) {
  const output = test(requests);
  const modifier = getScoreModifier(output.result);
  withExtraCredit += modifier;
  if (modifier < 0) uncurved += modifier;
  tests[output.constructor.name] = { result: output.result, pass: output.pass, modifier };
}
const score = uncurved >= MINIMUM_SCORE_FOR_EXTRA_CREDIT ? withExtraCredit : uncurved;
console.log(JSON.stringify({ ...getGradeForScore(score), tests }));
`;

interface ObservatoryResult {
  score: number;
  grade: string;
  tests: Record<string, { result: string; pass: boolean; modifier: number }>;
}

/**
 * Scans the pod `id` of `broker` as the Observatory would scan a site: over
 * https through a TLS terminator, with plain http redirecting to it.
 */
async function observatory(
  broker: TestServer,
  id: string,
  dir: string,
): Promise<ObservatoryResult> {
  const terminator = Deno.serve({
    port: 0,
    hostname: "127.0.0.1",
    cert: await Deno.readTextFile(join(dir, "cert.pem")),
    key: await Deno.readTextFile(join(dir, "key.pem")),
    onListen() {},
  }, async (request) => {
    const url = new URL(request.url);
    const headers = new Headers(request.headers);
    headers.set("X-Forwarded-Proto", "https");
    headers.set("X-Forwarded-Host", url.host);
    const answer = await fetch(`${broker.url}${url.pathname}${url.search}`, {
      method: request.method,
      headers,
      body: request.body,
      redirect: "manual",
    });
    return new Response(answer.body, {
      status: answer.status,
      headers: answer.headers,
    });
  });
  const redirector = Deno.serve(
    { port: 0, hostname: "127.0.0.1", onListen() {} },
    (request) =>
      Response.redirect(
        `https://127.0.0.1:${terminator.addr.port}${
          new URL(request.url).pathname
        }`,
        301,
      ),
  );
  try {
    const scan = await run(
      Deno.execPath(),
      [
        "eval",
        SCAN,
        String(terminator.addr.port),
        String(redirector.addr.port),
        `/${id}`,
      ],
      { NODE_EXTRA_CA_CERTS: join(dir, "ca.pem") },
    );
    assert.equal(scan.code, 0, scan.stderr);
    return JSON.parse(scan.stdout);
  } finally {
    await terminator.shutdown();
    await redirector.shutdown();
  }
}

gatedTest(
  "HTTP Observatory: A+ for a pod under scriptPolicy 'hashes', over https behind a TLS terminator",
  hasOpenssl,
  `${OPENSSL} is missing: apt-get install -y openssl`,
  async () => {
    const dir = await Deno.makeTempDir();
    try {
      await makeCertificates(dir);
      const strict = await brokerWithPod({ scriptPolicy: "hashes" });
      await using _strict = strict.broker;
      // The policy graded is the pod's own: its script's hash, no
      // 'unsafe-inline' for scripts.
      const [, content] = await podPolicies(
        `${strict.broker.url}/${strict.id}`,
      );
      assert.match(
        content,
        new RegExp(`script-src ${escape(SCRIPT_HASH)} 'wasm-unsafe-eval';`),
      );

      const graded = await observatory(strict.broker, strict.id, dir);
      assert.equal(graded.grade, "A+", JSON.stringify(graded.tests));
      assert.equal(graded.score, 120, JSON.stringify(graded.tests));
      assert.deepEqual(
        Object.entries(graded.tests).filter(([, t]) => !t.pass),
        [],
      );
      assert.equal(
        graded.tests["strict-transport-security"]?.result,
        "hsts-implemented-max-age-at-least-six-months",
      );
      assert.equal(graded.tests["redirection"]?.result, "redirection-to-https");
      assert.equal(
        graded.tests["content-security-policy"]?.result,
        "csp-implemented-with-unsafe-inline-in-style-src-only",
      );

      // The default policy, with 'unsafe-inline' scripts, is no A+.
      const loose = await brokerWithPod({});
      await using _loose = loose.broker;
      const looseGrade = await observatory(loose.broker, loose.id, dir);
      assert.equal(
        looseGrade.tests["content-security-policy"]?.result,
        "csp-implemented-with-unsafe-inline",
      );
      assert.equal(looseGrade.score, 80);
      assert.equal(looseGrade.grade, "B+");
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
);

function escape(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&");
}

/** The CSP Evaluator's findings on a policy: [severity, type, directive]. */
function evaluate(policy: string): [number, number, string][] {
  return new CspEvaluator(new CspParser(policy).csp).evaluate().map((f) => [
    f.severity,
    f.type,
    f.directive,
  ]);
}

Deno.test("CSP Evaluator: no HIGH finding in the content policy under scriptPolicy 'hashes'", async () => {
  const HIGH = 10;
  const SYNTAX = 20;
  const strict = await brokerWithPod({ scriptPolicy: "hashes" });
  await using _strict = strict.broker;
  const [sandbox, content] = await podPolicies(
    `${strict.broker.url}/${strict.id}`,
  );
  assert.ok(content.includes(SCRIPT_HASH));
  // The evaluator reads one policy. The content policy on its own, and the
  // policy the browser enforces: both headers' directives are disjoint, so
  // together they act as one policy with all of them (the sandbox policy
  // alone has no script-src, which the evaluator would flag).
  for (const policy of [content, `${sandbox}; ${content}`]) {
    const findings = evaluate(policy);
    assert.deepEqual(
      findings.filter(([severity]) => severity <= SYNTAX),
      [],
      `${policy}: ${JSON.stringify(findings)}`,
    );
  }

  // The default policy's 'unsafe-inline' is HIGH: the check can fail.
  const loose = await brokerWithPod({});
  await using _loose = loose.broker;
  const [, looseContent] = await podPolicies(`${loose.broker.url}/${loose.id}`);
  assert.ok(
    evaluate(looseContent).some(([severity, , directive]) =>
      severity === HIGH && directive === "script-src"
    ),
  );
});
