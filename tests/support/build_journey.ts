// A built pod in Debian's Chromium, run by build_test.ts (inside a
// loopback-only network namespace when it can): build the app fixture
// (tests/testdata/build/app/) signed, upload it to a real broker, open it,
// and check that its module and classic scripts, its CSS (an @import chain,
// url()s, a style attribute), its images, its WebAssembly and the browser
// client (joined to the broker's /signal) all work, with no CSP violation
// and no uncaught error. Then a blocked load proves that violations are
// seen at all. Exits non-zero with the failed assertion; prints
// "journey ok" at the end.
// Usage: deno run -A tests/support/build_journey.ts
import assert from "node:assert/strict";
import { chromium } from "playwright-core";
import { buildPod } from "../../src/bundler/mod.ts";
import { verifyPod } from "../../src/pod/verify.ts";
import { CHROMIUM, CHROMIUM_FLAGS } from "./chat_journey_config.ts";
import { reportViolationEvents, watchPage } from "./page_watch.ts";
import { newSeed, startServer, upload } from "./helpers.ts";

const FIXTURE =
  new URL("../testdata/build/app/index.html", import.meta.url).pathname;
const WAIT = { timeout: 20_000 };

const violations: string[] = [];
const errors: string[] = [];

const { html, warnings } = await buildPod(FIXTURE, {
  seed: await newSeed(),
  name: "Build fixture",
});
assert.equal((await verifyPod(html)).manifest.name, "Build fixture");
assert.equal(warnings.length, 1, warnings.join("\n"));

await using broker = await startServer();
const browser = await chromium.launch({
  executablePath: CHROMIUM,
  args: CHROMIUM_FLAGS,
});
try {
  const uploaded = await upload(broker.url, html as BodyInit);
  assert.equal(uploaded.status, 201, await uploaded.clone().text());
  const { url } = await uploaded.json();

  const page = await browser.newPage();
  watchPage(page, violations, errors);
  await reportViolationEvents(page);
  await page.goto(url);
  for (const marker of ["app", "classic", "wasm", "module"]) {
    await page.waitForSelector(`body[data-${marker}="done"]`, WAIT);
  }

  const seen = await page.evaluate(async () => {
    const $ = (selector: string) => document.querySelector(selector)!;
    const style = (selector: string) => getComputedStyle($(selector));
    const logo = $("#logo") as HTMLImageElement;
    const photo = $("#photo") as HTMLImageElement;
    await logo.decode();
    await photo.decode();
    const button = $("#classic") as HTMLButtonElement;
    button.click();
    return {
      title: $("#title").textContent,
      titleColor: style("#title").color,
      escape: $("#escape").textContent,
      logo: [logo.naturalWidth, logo.currentSrc.slice(0, 15)],
      logoBorder: style("#logo").borderTopColor,
      // The <picture>'s SVG source wins over its PNG fallback.
      photo: [photo.naturalWidth > 0, photo.currentSrc.slice(0, 18)],
      inlineStyle: [
        style("#inline-style").color,
        style("#inline-style").backgroundImage.slice(0, 26),
      ],
      styled: style("#styled").backgroundImage.slice(0, 26),
      body: style("body").backgroundImage.slice(0, 26),
      wasm: [$("#wasm").textContent, style("#wasm").color],
      client: $("#client").textContent,
      classic: button.textContent,
      scripts: document.scripts.length,
    };
  });
  assert.deepEqual(seen, {
    title: "Hello, pod",
    titleColor: "rgb(1, 2, 3)",
    escape: "</script><!-- <script> --></SCRIPT >",
    logo: [4, "data:image/png;"],
    logoBorder: "rgb(4, 5, 6)",
    photo: [true, "data:image/svg+xml"],
    inlineStyle: ["rgb(7, 8, 9)", 'url("data:image/png;base64'],
    styled: 'url("data:image/png;base64',
    body: 'url("data:image/png;base64',
    wasm: ["5", "rgb(10, 11, 12)"],
    client: seen.client,
    classic: "42",
    // The module, the classic script, the inline module and the manifest.
    scripts: 4,
  });
  assert.match(seen.client ?? "", /^[A-Za-z0-9]{16}$/);
  assert.equal(errors.length, 0, `uncaught errors: ${errors.join("\n")}`);
  assert.equal(
    violations.length,
    0,
    `CSP violations: ${violations.join("\n")}`,
  );

  // The check can fail: a load the policy blocks is reported, both by
  // Chromium and by the event.
  await page.evaluate(() => {
    new Image().src = "http://127.0.0.1:9/blocked.png";
  });
  for (let i = 0; i < 100 && violations.length < 2; i++) {
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  assert.ok(
    violations.some((text) => text.includes("violation event: img-src")),
    violations.join("\n"),
  );
  assert.ok(
    violations.some((text) =>
      /blocked\.png' violates .* Content Security Policy directive: "img-src/
        .test(text)
    ),
    violations.join("\n"),
  );
  console.log("journey ok");
} finally {
  await browser.close();
}
