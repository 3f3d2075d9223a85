// Private rooms in Debian's Chromium, and between Chromium and Firefox ESR:
// see private_room_journey.ts and private_room_firefox_journey.ts for what
// each browser does.
import assert from "node:assert/strict";
import { journeyTest, runJourney } from "../support/browser.ts";
import {
  crossBrowserTest,
  FIREFOX_NAMESPACE,
  firefoxNotice,
} from "../support/firefox.ts";
import { supportFile } from "../support/paths.ts";

journeyTest(
  "the private room browser test",
  "private rooms in Chromium: a link holder joins, chats and calls, the session's name alone is refused, altered sealed signals are dropped, and a room spans two brokers on Redis",
  "private_room_journey.ts",
  async (run) => {
    const { output } = await run();
    assert.match(output, /^across brokers ok$/m, output);
  },
);

firefoxNotice("the private room Firefox journey");

crossBrowserTest(
  "private rooms in Firefox and Chromium: messages and a video track each way, sealed; the session's name alone is refused; altered sealed signals reach no one",
  async () => {
    const result = await runJourney(
      supportFile("private_room_firefox_journey.ts"),
      [],
      [FIREFOX_NAMESPACE],
    );
    assert.notEqual(
      result.setup,
      null,
      `Firefox needs a network namespace with a veth pair (root and unshare): ${result.output}`,
    );
    assert.equal(result.code, 0, result.output);
    for (const step of ["client ok", "media ok", "tamper ok", "journey ok"]) {
      assert.match(result.output, new RegExp(`^${step}$`, "m"));
    }
  },
);
