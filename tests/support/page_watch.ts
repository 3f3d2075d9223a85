// What the Chromium journeys watch on a page: console lines that report a
// CSP violation, and uncaught page errors.
import type { Page } from "playwright-core";

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
