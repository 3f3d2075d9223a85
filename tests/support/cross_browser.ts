// The frame of the journeys that run in Chromium and Firefox at once
// (firefox_journey.ts, private_room_firefox_journey.ts): both browsers
// open, the steps, both closed, then no page error in either.
import assert from "node:assert/strict";
import type { Browser as Chromium } from "playwright-core";
import type { Browser as Firefox } from "puppeteer-core";
import { problems, withChromium } from "./client_pages.ts";
import { firefoxProblems, launchFirefox } from "./firefox.ts";

/**
 * Runs `steps` with Debian's Chromium and Firefox ESR, closes both, fails
 * on any CSP violation or page error in Chromium and any console error in
 * Firefox (a missing favicon aside), and prints "journey ok".
 */
export async function withChromiumAndFirefox(
  steps: (chromium: Chromium, firefox: Firefox) => Promise<void>,
): Promise<void> {
  await withChromium(true, async (chromium) => {
    const firefox = await launchFirefox();
    try {
      await steps(chromium, firefox);
    } finally {
      await firefox.close();
    }
  });
  assert.deepEqual(problems, [], "Chromium: CSP violations or page errors");
  const uncaught = firefoxProblems.filter((line) => !/favicon/.test(line));
  assert.deepEqual(uncaught, [], "Firefox: console errors or page errors");
  console.log("journey ok");
}
