// The chat pod's whole journey in Debian's Chromium (see _chat_journey.ts).
// It runs in a child process, inside a network namespace that has only
// loopback when this is root and `unshare` works, so no candidate or packet
// can leave the machine.
import assert from "node:assert/strict";
import {
  CHROMIUM,
  chromiumNotice,
  hasChromium,
  inCi,
  runJourney,
} from "../support/browser.ts";

const JOURNEY = new URL("../support/chat_journey.ts", import.meta.url).pathname;
chromiumNotice("the browser end-to-end test");

Deno.test({
  name: "chat pod: two browsers chat through the broker, then without it",
  ignore: !hasChromium && !inCi,
  async fn() {
    assert.ok(
      hasChromium,
      `${CHROMIUM} is missing: apt-get install -y chromium`,
    );
    // The README's picture is of the built chat (tests/e2e/examples_test.ts
    // with UPDATE_SCREENSHOT=1); this one is of the hand-written chat.html.
    const screenshot = await Deno.makeTempFile({ suffix: ".png" });
    const result = await runJourney(JOURNEY, [screenshot]);
    assert.equal(result.code, 0, result.output);
    assert.match(result.output, /journey ok/);
    assert.ok(
      (await Deno.stat(screenshot)).size > 10_000,
      "a screenshot was taken",
    );
  },
});
