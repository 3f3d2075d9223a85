// The strict script policy in Debian's Chromium (see _hashes_journey.ts): a
// pod's own inline scripts run, script injected at run time does not. The
// journey runs in a child process, inside a network namespace that has only
// loopback when this is root and `unshare` works.
import { journeyTest } from "../support/browser.ts";

journeyTest(
  "the strict script policy browser test",
  "scriptPolicy 'hashes': Chromium runs the pod's inline scripts and refuses injected ones",
  "hashes_journey.ts",
);
