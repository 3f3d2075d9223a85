// Real webxdc apps, unmodified, as pods on their own origins with one
// visitor in Chromium and one in Firefox ESR (over WebDriver BiDi), run by
// tests/e2e/webxdc_test.ts inside a network namespace with a veth pair (see
// firefox.ts). hello.xdc: each one's message shows at the other, and
// Firefox, alone after Chromium left, reloads and still has both (its
// IndexedDB). poll.xdc: Chromium's poll and vote show in Firefox, and
// Firefox's vote in Chromium. webxdc-test.xdc in Firefox: the page it
// frames runs in its frame, its WebAssembly check (a .wasm of the bundle,
// fetched) passes, and its update check too, across a reload; its link to
// its duplicated updates race page shows that page, with no duplicate. An app that
// builds its files' paths in script gets each file from the pod in Firefox
// too.
// Exits non-zero with the failed assertion; prints "journey ok" at the end.
// Usage: deno run -A tests/support/webxdc_firefox_journey.ts
import assert from "node:assert/strict";
import type {
  Browser as Chromium,
  BrowserContext,
  Page,
} from "playwright-core";
import type { Browser as Firefox } from "puppeteer-core";
import { importXdc } from "../../src/bundler/xdc_build.ts";
import { newSeed, startServer, upload } from "./helpers.ts";
import { problems, WAIT } from "./client_pages.ts";
import { withChromiumAndFirefox } from "./cross_browser.ts";
import { openInFirefox } from "./firefox.ts";
import { watchPage } from "./page_watch.ts";
import { createPoll } from "./webxdc_journey.ts";
import {
  ASSET_IMAGES,
  ASSET_WORDS,
  assetsSeen,
  publishAssetsApp,
} from "./webxdc_limits_journey.ts";

const SHARED = new URL("../../../shared/webxdc/", import.meta.url).pathname;

/** Imports `${SHARED}NAME`, uploads it to `broker` and returns its pod URL. */
async function publish(broker: string, name: string): Promise<string> {
  const { html } = await importXdc(`${SHARED}${name}`, {
    maxBytes: 50 * 1024 * 1024,
    seed: await newSeed(),
  });
  const uploaded = await upload(broker, html as BodyInit);
  assert.equal(uploaded.status, 201, await uploaded.clone().text());
  return (await uploaded.json()).podUrl;
}

await withChromiumAndFirefox(async (chromium, firefox) => {
  await using server = await startServer({ podDomain: "localhost" });
  await hello(
    chromium,
    firefox,
    `${await publish(server.url, "hello.xdc")}#hello-firefox`,
  );
  await poll(
    chromium,
    firefox,
    `${await publish(server.url, "poll.xdc")}#poll-firefox`,
  );
  await conformance(
    firefox,
    `${await publish(server.url, "webxdc-test.xdc")}#conformance`,
  );
  const { firefox: page } = await openInFirefox(
    firefox,
    await publishAssetsApp(server.url),
  );
  const seen = await page.waitForFunction(assetsSeen, WAIT);
  assert.deepEqual(await seen.jsonValue(), [
    ASSET_IMAGES,
    ASSET_WORDS,
    ASSET_WORDS,
    true,
  ]);
  await page.close();
});

/** A Chromium visitor in a context of its own, on `link`, watched. */
async function chromiumVisitor(
  chromium: Chromium,
  link: string,
): Promise<{ context: BrowserContext; page: Page }> {
  const context = await chromium.newContext();
  // Without a media permission Chromium offers no loopback ICE candidate.
  await context.grantPermissions(["camera", "microphone"]);
  const page = await context.newPage();
  watchPage(page, problems, problems);
  await page.goto(link);
  return { context, page };
}

/** hello.xdc: messages both ways; Firefox alone reloads and keeps both. */
async function hello(
  chromium: Chromium,
  firefox: Firefox,
  link: string,
): Promise<void> {
  const { context, page: a } = await chromiumVisitor(chromium, link);
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
}

/** poll.xdc: Chromium's poll and vote show in Firefox; Firefox's vote in Chromium. */
async function poll(
  chromium: Chromium,
  firefox: Firefox,
  link: string,
): Promise<void> {
  const { context, page: a } = await chromiumVisitor(chromium, link);
  const { firefox: b } = await openInFirefox(firefox, link);
  await createPoll(a);
  await b.waitForFunction(
    () => document.querySelector("#voteQuestion")?.textContent === "Lunch?",
    WAIT,
  );
  await b.click("#voteRadio1");
  await b.evaluate(() =>
    [...document.querySelectorAll<HTMLElement>("a.button")]
      .find((link) => link.textContent?.trim() === "Vote")!.click()
  );
  await b.waitForFunction(
    () => document.querySelector("#resultsTotalVotes")?.textContent === "2",
    WAIT,
  );
  await a.locator("#resultsTotalVotes", { hasText: "2" }).waitFor(WAIT);
  await context.close();
  await b.close();
}

/**
 * webxdc-test.xdc in Firefox: its framed page runs, and its update check
 * passes, across a reload. Its console is not watched: the app's checks
 * try what a pod refuses, and say so there.
 */
async function conformance(firefox: Firefox, link: string): Promise<void> {
  const page = await firefox.newPage();
  await page.goto(link);
  const runs = (previous: string) =>
    page.waitForFunction(
      (previous) =>
        document.querySelector<HTMLElement>("#updates-ok")?.style.display !==
          "none" &&
        document.querySelector("#previous-runs")?.textContent === previous,
      WAIT,
      previous,
    );
  await runs("0");
  await page.waitForFunction(
    () =>
      document.querySelector("#wasm-output")?.textContent?.includes(
        "WebAssembly is supported",
      ),
    WAIT,
  );
  const framed = await Promise.all(
    page.frames().map((frame) =>
      frame.evaluate(() => document.body?.textContent ?? "")
    ),
  );
  assert.ok(
    framed.some((text) => text.includes("RTCPeerConnection object: function")),
    `the framed page ran: ${JSON.stringify(framed.map((t) => t.slice(0, 80)))}`,
  );
  await page.reload();
  await page.waitForFunction(
    () => Number(document.querySelector("#previous-runs")?.textContent) >= 1,
    WAIT,
  );
  const [shown, held] = await page.evaluate(async () => [
    Number(document.getElementById("previous-runs")!.textContent),
    (await (globalThis as unknown as {
      webxdc: { getAllUpdates(): Promise<unknown[]> };
    }).webxdc.getAllUpdates()).length,
  ]);
  assert.equal(shown, held! - 1, "every update held is shown once");
  // Its link to the duplicated updates race page shows that page, whose
  // three updates each come once.
  await page.click('a[href="./duplicated_updates_race.html"]');
  await page.waitForFunction(
    () => document.body.children.length === 1,
    WAIT,
  );
  const race = page.frames().find((frame) => frame !== page.mainFrame())!;
  await race.waitForSelector("button", WAIT);
  await race.click("button");
  const text = await race.waitForFunction(
    () => {
      const updates = document.querySelector<HTMLElement>("#updates")!;
      return /^\[[\d,]+\]$/m.test(updates.innerText) && updates.innerText;
    },
    WAIT,
  );
  const seen = await text.jsonValue() as string;
  assert.doesNotMatch(seen, /Processing duplicated update/, seen);
  assert.deepEqual(
    seen.trim().split("\n").flatMap((line) => JSON.parse(line)).slice(-3),
    [held! + 1, held! + 2, held! + 3],
    seen,
  );
  await page.close();
}
