// The strict script policy in Debian's Chromium (see _hashes_journey.ts): a
// pod's own inline scripts run, script injected at run time does not. The
// journey runs in a child process, inside a network namespace that has only
// loopback when this is root and `unshare` works.
import {
  browserTest,
  chromiumNotice,
  runJourneyOk,
} from "../support/browser.ts";

const JOURNEY =
  new URL("../support/hashes_journey.ts", import.meta.url).pathname;
chromiumNotice("the strict script policy browser test");

browserTest(
  "scriptPolicy 'hashes': Chromium runs the pod's inline scripts and refuses injected ones",
  async () => {
    await runJourneyOk(JOURNEY);
  },
);
