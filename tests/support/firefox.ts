// What the Firefox tests share: Debian's Firefox ESR driven by
// puppeteer-core over WebDriver BiDi (never a downloaded browser), the loud
// notice when it is missing, and the network namespace it needs: Firefox
// gathers no ICE candidate when the only interface is loopback, so the
// namespace gets a veth pair with an address and a default route. Both ends
// of the pair are inside the namespace: no packet can leave it.
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import puppeteer, {
  type Browser,
  type Page as FirefoxPage,
} from "puppeteer-core";
import type { Page } from "playwright-core";
import { hasChromium, runJourney } from "./browser.ts";
import { gatedTest, inCi } from "./gated.ts";

/** Debian's Firefox ESR. */
export const FIREFOX = "/usr/bin/firefox-esr";

/** Whether Debian's Firefox ESR is installed. */
export const hasFirefox: boolean = existsSync(FIREFOX);

/**
 * The namespace setup of the Firefox journeys: loopback, and a veth pair
 * with an address and a default route, both ends inside the namespace.
 */
export const FIREFOX_NAMESPACE = "ip link set lo up && " +
  "ip link add pb0 type veth peer name pb1 && " +
  "ip addr add 10.77.0.1/24 dev pb0 && ip link set pb0 up && " +
  "ip link set pb1 up && ip route add default dev pb0";

/**
 * Runs the journey `journey` with the argument `firefox` in
 * {@linkcode FIREFOX_NAMESPACE}; asserts that it exits 0 with a line
 * "journey ok".
 */
export async function runFirefoxJourney(journey: string): Promise<void> {
  const result = await runJourney(journey, ["firefox"], [FIREFOX_NAMESPACE]);
  assert.equal(result.code, 0, result.output);
  assert.match(result.output, /^journey ok$/m);
}

/** Prints the loud notice for a missing Firefox; `what` names the test. */
export function firefoxNotice(what: string): void {
  if (hasFirefox) return;
  console.error(
    `\n!!! ${FIREFOX} is missing: ${what} ${
      inCi ? "FAILS in CI" : "is SKIPPED"
    }.\n!!! Install Debian's Firefox ESR: sudo apt-get install -y firefox-esr\n`,
  );
}

/**
 * A test that needs Firefox: ignored (after {@linkcode firefoxNotice}'s
 * loud note) where it is missing outside CI, failed where it is missing in
 * CI.
 */
export function firefoxTest(name: string, fn: () => Promise<void>): void {
  gatedTest(
    name,
    hasFirefox,
    `${FIREFOX} is missing: apt-get install -y firefox-esr`,
    fn,
  );
}

/**
 * A test that needs both Firefox and Chromium: ignored (after the loud
 * notices) where one is missing outside CI, failed where one is missing in
 * CI.
 */
export function crossBrowserTest(name: string, fn: () => Promise<void>): void {
  gatedTest(
    name,
    hasFirefox && hasChromium,
    hasFirefox
      ? "/usr/bin/chromium is missing: apt-get install -y chromium"
      : `${FIREFOX} is missing: apt-get install -y firefox-esr`,
    fn,
  );
}

/**
 * Starts Firefox ESR headless over WebDriver BiDi: host candidates with
 * their addresses (no mDNS names, which nothing in the namespace answers),
 * and fake media devices without a prompt.
 */
export function launchFirefox(): Promise<Browser> {
  return puppeteer.launch({
    browser: "firefox",
    executablePath: FIREFOX,
    headless: true,
    extraPrefsFirefox: {
      "media.peerconnection.ice.obfuscate_host_addresses": false,
      "media.navigator.streams.fake": true,
      "media.navigator.permission.disabled": true,
    },
  });
}

/** A Firefox page's console errors and uncaught errors. */
export const firefoxProblems: string[] = [];

/**
 * Opens `url` in a new Firefox page and returns it with the two methods the
 * Chromium journeys' helpers use, in Playwright's argument order
 * (`evaluate(fn, arg)`, `waitForFunction(fn, arg, options)`), so that
 * those helpers drive both browsers.
 */
export async function openInFirefox(
  browser: Browser,
  url: string,
): Promise<{ page: Page; firefox: FirefoxPage }> {
  const firefox = await browser.newPage();
  firefox.on("console", (message) => {
    if (message.type() === "error") firefoxProblems.push(message.text());
  });
  firefox.on("pageerror", (error) => {
    firefoxProblems.push(
      error instanceof Error ? `${error.message} ${error.stack}` : `${error}`,
    );
  });
  await firefox.goto(url);
  const page = {
    evaluate: (fn: (arg: unknown) => unknown, arg?: unknown) =>
      firefox.evaluate(fn, arg),
    waitForFunction: (
      fn: (arg: unknown) => unknown,
      arg: unknown,
      options: { timeout?: number; polling?: number } = {},
    ) => firefox.waitForFunction(fn, options, arg),
  };
  return { page: page as unknown as Page, firefox };
}
