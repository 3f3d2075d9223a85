// A webxdc app (hello.xdc, unmodified) as a pod on its own origin with one
// visitor in Chromium and one in Firefox ESR (over WebDriver BiDi), run by
// tests/e2e/webxdc_test.ts inside a network namespace with a veth pair (see
// firefox.ts): each one's message shows at the other, and Firefox, alone
// after Chromium left, reloads and still has both (its IndexedDB).
// Exits non-zero with the failed assertion; prints "journey ok" at the end.
// Usage: deno run -A tests/support/webxdc_firefox_journey.ts
import assert from "node:assert/strict";
import { importXdc } from "../../src/bundler/xdc_build.ts";
import { newSeed, startServer, upload } from "./helpers.ts";
import { problems, WAIT } from "./client_pages.ts";
import { withChromiumAndFirefox } from "./cross_browser.ts";
import { openInFirefox } from "./firefox.ts";
import { watchPage } from "./page_watch.ts";

const HELLO = new URL("../../../shared/webxdc/hello.xdc", import.meta.url)
  .pathname;

await withChromiumAndFirefox(async (chromium, firefox) => {
  await using server = await startServer({ podDomain: "localhost" });
  const { html } = await importXdc(HELLO, {
    maxBytes: 50 * 1024 * 1024,
    seed: await newSeed(),
  });
  const uploaded = await upload(server.url, html as BodyInit);
  assert.equal(uploaded.status, 201, await uploaded.clone().text());
  const link = `${(await uploaded.json()).podUrl}#hello-firefox`;
  const context = await chromium.newContext();
  await context.grantPermissions(["camera", "microphone"]);
  const a = await context.newPage();
  watchPage(a, problems, problems);
  await a.goto(link);
  const { firefox: b } = await openInFirefox(firefox, link);
  const shows = (text: string) =>
    b.waitForFunction(
      (text) => document.querySelector("#output")?.textContent?.includes(text),
      WAIT,
      text,
    );
  await a.fill("#input", "hello from Chromium");
  await a.locator('input[type="submit"]').click();
  await shows("hello from Chromium");
  await b.type("#input", "hello from Firefox");
  await b.click('input[type="submit"]');
  await a.locator("#output", { hasText: "hello from Firefox" }).waitFor(WAIT);
  await context.close();
  await b.reload();
  await shows("hello from Chromium");
  await shows("hello from Firefox");
  console.log("firefox ok");
});
