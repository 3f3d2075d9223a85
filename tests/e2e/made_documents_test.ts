// What the documents a pod makes at its own origin can reach (a popup of
// about:blank or of a blob:, its tab navigated to a blob:), in Debian's
// Chromium and Firefox ESR: with a pod domain alone, the camera and the
// microphone, whatever the pod declared; with `--pod-storage granted`, nothing for a pod granted
// nothing (see tests/support/made_documents_journey.ts). Each run is a child
// process inside a network namespace: loopback only for Chromium, a veth
// pair for Firefox (tests/support/firefox.ts says why).
import assert from "node:assert/strict";
import { supportFile } from "../support/paths.ts";
import { browserTest, chromiumNotice, runJourney } from "../support/browser.ts";
import {
  firefoxNotice,
  firefoxTest,
  runFirefoxJourney,
} from "../support/firefox.ts";

const JOURNEY = supportFile("made_documents_journey.ts");
chromiumNotice("the made documents test in Chromium");
firefoxNotice("the made documents test in Firefox");

browserTest(
  "Chromium: a pod's popups and blob: pages get the camera and microphone on its own origin whatever it declared, and none does under storage granted for a pod granted nothing",
  async () => {
    const result = await runJourney(JOURNEY, ["chromium"]);
    assert.equal(result.code, 0, result.output);
    assert.match(result.output, /^journey ok$/m);
  },
);

firefoxTest(
  "Firefox: a pod's popups and blob: pages get the camera and microphone on its own origin whatever it declared, and none does under storage granted for a pod granted nothing",
  () => runFirefoxJourney(JOURNEY),
);
