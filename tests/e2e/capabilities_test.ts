// What a pod may do (docs/authors/capabilities.md), tried in Debian's
// Chromium from inside a pod, on a broker's host and on a pod's own origin
// (see tests/support/capabilities_journey.ts). The journey runs in a child
// process, inside a network namespace that has only loopback when this is
// root and `unshare` works.
import {
  browserTest,
  chromiumNotice,
  runJourneyOk,
} from "../support/browser.ts";

const JOURNEY =
  new URL("../support/capabilities_journey.ts", import.meta.url).pathname;
chromiumNotice("the capabilities browser test");

browserTest(
  "a pod's capabilities in Chromium are those docs/authors/capabilities.md lists, on both hosts",
  async () => {
    await runJourneyOk(JOURNEY);
  },
);
