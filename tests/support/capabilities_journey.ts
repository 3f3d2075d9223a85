// What a pod may do, in real Chromium, run by tests/e2e/capabilities_test.ts
// (inside a loopback-only network namespace when it can): the probe pod of
// tests/testdata/capabilities_probe.html tries each capability that
// docs/authors/capabilities.md lists, on a broker's host (an opaque origin)
// and on a pod's own origin (`podDomain: "localhost"`), and this checks each
// outcome against the page's table. Exits non-zero with the failed
// assertion; prints "journey ok" at the end.
// Usage: deno run -A tests/support/capabilities_journey.ts
import assert from "node:assert/strict";
import { chromium, type Page } from "playwright-core";
import { CHROMIUM, CHROMIUM_FLAGS } from "./chat_journey_config.ts";
import { signedPod, startServer, upload } from "./helpers.ts";

/** Opens the probe at `url`, clicks for the clipboard, returns its outcomes. */
async function probe(
  page: Page,
  url: string,
): Promise<{ outcomes: Record<string, string>; violations: string[] }> {
  page.on("dialog", (dialog) => dialog.dismiss());
  await page.goto(url);
  await page.waitForFunction(() => document.title === "CLICK", null, {
    timeout: 20_000,
  });
  await page.click("#b");
  await page.waitForFunction(() => document.title === "DONE", null, {
    timeout: 20_000,
  });
  // Functions, not strings: the pod's policy refuses eval, Playwright's too.
  const all = await page.evaluate(() =>
    (globalThis as unknown as { __out: unknown }).__out
  ) as
    & Record<string, string>
    & { violations: string[] };
  const { violations, ...outcomes } = all;
  return { outcomes, violations };
}

/** Asserts each outcome's start ("ok ...", "ERR Name: ..."). */
function expect(
  where: string,
  outcomes: Record<string, string>,
  expected: Record<string, RegExp>,
): void {
  for (const [name, pattern] of Object.entries(expected)) {
    assert.match(outcomes[name] ?? "(none)", pattern, `${where}: ${name}`);
  }
}

/** The rows that read the same on both hosts. */
const EVERYWHERE: Record<string, RegExp> = {
  eval: /^ERR EvalError: .*'unsafe-eval'/,
  Function: /^ERR EvalError/,
  setTimeoutString: /^ok 0$/,
  wasm: /^ok instantiated$/,
  workerBlob: /^ERR Error: worker error event/,
  workerData: /^ERR Error: worker error event/,
  fetchData: /^ERR TypeError: Failed to fetch/,
  fetchBlob: /^ERR TypeError: Failed to fetch/,
  blobText: /^ok hi$/,
  fetchOther: /^ERR TypeError: Failed to fetch/,
  wsSignal: /^ok open$/,
  wsOther: /^ERR /,
  clipboardWriteOnClick: /^ok written$/,
  clipboardRead: /^ERR NotAllowedError/,
  windowOpen: /^ok window$/,
  alert: /^ok function$/,
  formSubmitEvent: /^ok submit event, prevented$/,
  formNavigation: /^ok still here$/,
  getUserMedia: /^ERR /,
  geolocation: /^ERR Error: code 1 /,
  imgData: /^ok loaded$/,
  imgRemote: /^ERR Error: img error$/,
  rtc: /^ok created$/,
  notification: /^ok denied$/,
  download: /^ok href set$/,
  history: /^ok #x$/,
};

/** The policy violations both hosts report. */
const VIOLATIONS = [
  "script-src eval",
  "worker-src blob",
  "worker-src data",
  "connect-src data",
  "connect-src blob",
  "connect-src https://example.com/",
  "img-src https://example.com/x.png",
  "frame-src ",
  "form-action ",
];

const html = await Deno.readFile(
  new URL("../testdata/capabilities_probe.html", import.meta.url),
);
const pod = await signedPod(html);
const browser = await chromium.launch({
  executablePath: CHROMIUM,
  args: CHROMIUM_FLAGS,
});
try {
  {
    await using server = await startServer();
    const created = await (await upload(server.url, pod as BodyInit)).json();
    const page = await browser.newPage();
    const { outcomes, violations } = await probe(page, created.url);
    await page.close();
    expect("broker's host", outcomes, {
      ...EVERYWHERE,
      origin: /^ok null$/,
      localStorage: /^ERR SecurityError: .*lacks the 'allow-same-origin' flag/,
      indexedDB: /^ERR SecurityError/,
      cookie: /^ERR SecurityError: .*lacks the 'allow-same-origin' flag/,
      caches: /^ERR SecurityError/,
      serviceWorker:
        /^ERR SecurityError: Failed to read the 'serviceWorker' property/,
      fetchSelfHealth: /^ok 200$/,
    });
    for (const violation of VIOLATIONS) {
      assert.ok(violations.some((v) => v.startsWith(violation)), violation);
    }
  }
  {
    await using server = await startServer({ podDomain: "localhost" });
    const created = await (await upload(server.url, pod as BodyInit)).json();
    const page = await browser.newPage();
    const { outcomes, violations } = await probe(page, created.podUrl);
    await page.close();
    expect("pod's own origin", outcomes, {
      ...EVERYWHERE,
      origin: /^ok http:\/\/[a-z2-7]{20}\.localhost:\d+$/,
      localStorage: /^ok 1$/,
      indexedDB: /^ok opened$/,
      cookie: /^ok a=1$/,
      caches: /^ok opened$/,
      serviceWorker: /^ERR SecurityError: Failed to register a ServiceWorker/,
      fetchSelfHealth: /^ok 404$/,
    });
    for (const violation of VIOLATIONS) {
      assert.ok(violations.some((v) => v.startsWith(violation)), violation);
    }
  }
  console.log("journey ok");
} finally {
  await browser.close();
}
