// `pod-broker dev` in Debian's Chromium (see dev_journey.ts): init, dev, two
// tabs of the printed URL talk; an edit of the folder shows in the open
// tabs; a build error shows in the page. The journey runs in a child
// process, inside a network namespace that has only loopback when this is
// root and `unshare` works.
import {
  browserTest,
  chromiumNotice,
  runJourneyOk,
} from "../support/browser.ts";
import { supportFile } from "../support/paths.ts";

const JOURNEY = supportFile("dev_journey.ts");
chromiumNotice("the dev loop browser test");

browserTest(
  "dev: from init to two tabs talking; an edit shows in the open tabs, a build error in the page",
  async () => {
    const result = await runJourneyOk(JOURNEY);
    // The figure the docs quote.
    console.log(/timing: .*/.exec(result.output)?.[0]);
  },
);
