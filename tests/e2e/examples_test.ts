// The built example pods (examples/file-drop/, examples/chat/) in Debian's
// Chromium (see _examples_journey.ts). The journey runs in a child process,
// inside a network namespace that has only loopback when this is root and
// `unshare` works, so no candidate or packet can leave the machine.
import assert from "node:assert/strict";
import {
  CHROMIUM,
  chromiumNotice,
  hasChromium,
  inCi,
  runJourney,
} from "../support/browser.ts";

const JOURNEY =
  new URL("../support/examples_journey.ts", import.meta.url).pathname;
chromiumNotice("the examples' browser test");

Deno.test({
  name:
    "examples: the built file drop sends 3 MB with progress, the built chat talks both ways and without the broker",
  ignore: !hasChromium && !inCi,
  async fn() {
    assert.ok(
      hasChromium,
      `${CHROMIUM} is missing: apt-get install -y chromium`,
    );
    const result = await runJourney(JOURNEY, []);
    assert.equal(result.code, 0, result.output);
    assert.match(result.output, /journey ok/);
  },
});
