// A real webxdc app (poll.xdc, unmodified) imported as a pod and run by
// three visitors in Chromium on the pod's own origin (see
// webxdc_journey.ts). The journey runs in a child process, inside a
// loopback-only network namespace when this is root and `unshare` works.
// Then hello.xdc and poll.xdc with a Chromium and a Firefox visitor, and
// webxdc-test.xdc in Firefox, in a namespace with a veth pair (firefox.ts
// says why). And where apps meet a pod's limits
// (webxdc_limits_journey.ts): a visitor that lies in its summaries is cut
// and disconnected; webxdc-test, unmodified, runs with its framed page and
// its other pages; an
// app that builds its files' paths in script gets the files from the pod.
import { journeyTest } from "../support/browser.ts";
import {
  crossBrowserTest,
  firefoxNotice,
  runFirefoxJourney,
} from "../support/firefox.ts";
import { supportFile } from "../support/paths.ts";

journeyTest(
  "the webxdc browser test",
  "webxdc: poll.xdc as a pod: A's vote shows at B, A reloads alone and keeps the state, C comes later and gets the whole history, the broker carries no update",
  "webxdc_journey.ts",
);

journeyTest(
  "the webxdc limits browser test",
  "webxdc: a visitor whose summary claims updates it does not send is cut and its connection closed, the others still talk; webxdc-test, unmodified, runs its framed page and its other pages (its duplicated updates race shows no duplicate) and passes its WebAssembly and update checks; an app's files loaded by paths built in script come from the pod",
  "webxdc_limits_journey.ts",
);

firefoxNotice("the webxdc Firefox and Chromium journey");

crossBrowserTest(
  "webxdc: hello.xdc and poll.xdc as pods with a Chromium and a Firefox visitor: each one's message and vote shows at the other, and Firefox alone reloads and keeps both; webxdc-test runs its framed page, its duplicated updates race page (no duplicate) and its WebAssembly and update checks in Firefox; an app's files loaded by paths built in script come from the pod",
  () => runFirefoxJourney(supportFile("webxdc_firefox_journey.ts")),
);
