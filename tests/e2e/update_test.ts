// Signed updates in Debian's Chromium (see update_journey.ts): a visitor's
// page learns from the browser client that a new version is served, and a
// reload runs it at the same URL, on a broker's host and on a pod's own
// origin. The journey runs in a child process, inside a network namespace
// that has only loopback when this is root and `unshare` works.
import { journeyTest } from "../support/browser.ts";

journeyTest(
  "the signed update browser test",
  "updates: a visitor's page shows 'new version available' after publish --update, and a reload runs v2 at the same URL",
  "update_journey.ts",
);
