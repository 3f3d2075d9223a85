// Calls in pods (examples/call/) in Debian's Chromium with fake devices and
// a real coturn: see tests/support/call_journey.ts for what each visitor
// does. The journey runs in a child process, inside a network namespace
// that has only loopback when this is root and `unshare` works.
import assert from "node:assert/strict";
import { supportFile } from "../support/paths.ts";
import { gatedTest } from "../support/gated.ts";
import {
  chromiumNotice,
  hasChromium,
  runJourneyOk,
} from "../support/browser.ts";
import { haveCoturn } from "../support/coturn.ts";

const JOURNEY = supportFile("call_journey.ts");
chromiumNotice("the call browser test");
const have = haveCoturn() && hasChromium;

gatedTest(
  "calls: three visitors on pod origins see and hear each other, mute, camera off, a screen share, one leaving, a broker restart and a late fourth; relay only through coturn; the broker host says calls need a pod domain; an undeclared pod gets NotAllowedError",
  have,
  "Chromium and coturn are needed",
  async () => {
    const { output } = await runJourneyOk(JOURNEY);
    for (
      const step of [
        "three visitors see and hear each other",
        "mute and camera off seen remotely",
        "screen share arrives",
        "ICE restarts keep media flowing",
        "a late visitor gets every track, after a broker restart",
        "a relay-only call goes through coturn",
        "refusals ok",
      ]
    ) assert.match(output, new RegExp(step), output);
  },
);
