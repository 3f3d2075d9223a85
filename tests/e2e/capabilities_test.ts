// What a pod may do: the table of docs/authors/capabilities.md, every cell
// checked in Debian's Chromium and Firefox ESR, on a broker's host and on a
// pod's own origin (see tests/support/capabilities_journey.ts). Each run is
// a child process inside a network namespace: loopback only for Chromium,
// a veth pair for Firefox (tests/support/firefox.ts says why).
import assert from "node:assert/strict";
import { supportFile } from "../support/paths.ts";
import { browserTest, chromiumNotice, runJourney } from "../support/browser.ts";
import {
  firefoxNotice,
  firefoxTest,
  runFirefoxJourney,
} from "../support/firefox.ts";

const JOURNEY = supportFile("capabilities_journey.ts");
chromiumNotice("the capabilities test in Chromium");
firefoxNotice("the capabilities test in Firefox");

browserTest(
  "a pod's capabilities in Chromium are those docs/authors/capabilities.md lists, on both hosts",
  async () => {
    const result = await runJourney(JOURNEY, ["chromium"]);
    assert.equal(result.code, 0, result.output);
    assert.match(result.output, /^journey ok$/m);
  },
);

firefoxTest(
  "a pod's capabilities in Firefox are those docs/authors/capabilities.md lists, on both hosts",
  () => runFirefoxJourney(JOURNEY),
);
