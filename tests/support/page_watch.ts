// What the Chromium journeys watch on a page: console lines that report a
// CSP violation, and uncaught page errors; and the tab of a chat pod they
// open and watch.
import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import type { Browser, BrowserContext, Page } from "playwright-core";

/** Whether a console line reports a Content Security Policy refusal. */
export const CSP_REFUSAL: RegExp = /Content Security Policy|Refused to/i;

/**
 * Adds `page`'s CSP refusals (console lines) to `violations` and, with
 * `errors`, its uncaught errors to `errors`.
 */
export function watchPage(
  page: Page,
  violations: string[],
  errors?: string[],
): void {
  page.on("console", (message) => {
    const text = message.text();
    if (CSP_REFUSAL.test(text)) violations.push(text);
  });
  if (errors) page.on("pageerror", (error) => errors.push(error.message));
}

/**
 * Makes `page` report each `securitypolicyviolation` event on its console,
 * like Chromium's own messages. The browser injects it, so the page's own
 * policy does not apply to it.
 */
export async function reportViolationEvents(page: Page): Promise<void> {
  await page.addInitScript(() => {
    document.addEventListener("securitypolicyviolation", (event) => {
      console.error(
        `Content Security Policy violation event: ${event.violatedDirective} ${event.blockedURI}`,
      );
    }, true);
  });
}

/** A chat pod open in its own browser context, and its peer id. */
export interface Tab {
  context: BrowserContext;
  page: Page;
  id: string;
}

/** How {@linkcode openTab} opens and watches a page. */
export interface TabOptions {
  /** The page's size. */
  viewport: { width: number; height: number };
  /** Where CSP refusals go. */
  violations: string[];
  /** Where uncaught errors go. */
  errors: string[];
  /** The element that shows the peer id. @default {"#me"} */
  me?: string;
  /** Whether downloads are accepted (Playwright's default when not given). */
  acceptDownloads?: boolean;
  /** Whether `securitypolicyviolation` events are reported too. */
  reportEvents?: boolean;
}

/**
 * Opens `url` in a fresh context, watched, and waits until it says it is
 * connected; its peer id is the text of `me`.
 */
export async function openTab(
  browser: Browser,
  url: string,
  options: TabOptions,
): Promise<Tab> {
  const { viewport, acceptDownloads } = options;
  const context = await browser.newContext(
    acceptDownloads === undefined
      ? { viewport }
      : { viewport, acceptDownloads },
  );
  // Without a media permission Chromium offers no loopback ICE candidate.
  await context.grantPermissions(["camera", "microphone"]);
  const page = await context.newPage();
  watchPage(page, options.violations, options.errors);
  if (options.reportEvents) await reportViolationEvents(page);
  await page.goto(url);
  await page.waitForSelector('#status[data-state="connected"]', {
    timeout: 20_000,
  });
  const id = (await page.locator(options.me ?? "#me").textContent())!;
  assert.match(id, /^[A-Za-z0-9]{16}$/);
  return { context, page, id };
}

/** The tabs in one picture, side by side, as the tutorial shows the chat. */
export async function sideBySide(
  browser: Browser,
  tabs: Tab[],
  path: string,
  width = 1500,
): Promise<void> {
  const shots = await Promise.all(tabs.map((tab) => tab.page.screenshot()));
  const images = shots.map((png) =>
    `<img src="data:image/png;base64,${
      Buffer.from(png).toString("base64")
    }" style="box-shadow:0 2px 8px #0005">`
  );
  const frame = await browser.newPage({
    viewport: { width, height: 580 },
  });
  await frame.setContent(
    `<body style="margin:0;display:flex;gap:20px;background:#d0d4da;padding:10px">` +
      `${images.join("")}</body>`,
  );
  await frame.screenshot({ path });
  await frame.close();
}
