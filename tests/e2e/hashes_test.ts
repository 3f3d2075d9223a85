// The strict script policy in Debian's Chromium (see _hashes_journey.ts): a
// pod's own inline scripts run, script injected at run time does not. The
// journey runs in a child process, inside a network namespace that has only
// loopback when this is root and `unshare` works.
import assert from "node:assert/strict";
import {
  CHROMIUM,
  chromiumNotice,
  hasChromium,
  inCi,
  runJourney,
} from "../support/browser.ts";

const JOURNEY =
  new URL("../support/hashes_journey.ts", import.meta.url).pathname;
chromiumNotice("the strict script policy browser test");

Deno.test({
  name:
    "scriptPolicy 'hashes': Chromium runs the pod's inline scripts and refuses injected ones",
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
