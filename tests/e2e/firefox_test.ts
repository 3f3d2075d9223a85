// Firefox beside Chromium: Debian's Firefox ESR (over WebDriver BiDi) and
// Chromium are peers of one room, with the browser client's test pod (data
// and a video track each way) and with the chat pod. The journey runs in a child process inside a network
// namespace with a veth pair (firefox.ts says why).
import assert from "node:assert/strict";
import { supportFile } from "../support/paths.ts";
import { runJourney } from "../support/browser.ts";
import {
  crossBrowserTest,
  FIREFOX_NAMESPACE,
  firefoxNotice,
} from "../support/firefox.ts";

const JOURNEY = supportFile("firefox_journey.ts");
firefoxNotice("the Firefox and Chromium journey");

crossBrowserTest(
  "Firefox and Chromium: the client meshes, sends text and binary both ways, reports the route and carries a video track each way; the chat pod chats both ways",
  async () => {
    const result = await runJourney(JOURNEY, [], [FIREFOX_NAMESPACE]);
    assert.notEqual(
      result.setup,
      null,
      `Firefox needs a network namespace with a veth pair (root and unshare): ${result.output}`,
    );
    assert.equal(result.code, 0, result.output);
    assert.match(result.output, /^client ok$/m);
    assert.match(result.output, /^media ok$/m);
    assert.match(result.output, /^chat ok$/m);
    assert.match(result.output, /^journey ok$/m);
  },
);
