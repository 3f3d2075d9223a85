// The chat pod's whole journey in Debian's Chromium (see _chat_journey.ts).
// It runs in a child process, inside a network namespace that has only
// loopback when this is root and `unshare` works, so no candidate or packet
// can leave the machine.
import assert from "node:assert/strict";
import { journeyTest } from "../support/browser.ts";

journeyTest(
  "the browser end-to-end test",
  "chat pod: two browsers chat through the broker, then without it",
  "chat_journey.ts",
  async (run) => {
    // The tutorial's picture is of the built chat (tests/e2e/examples_test.ts
    // with UPDATE_SCREENSHOT=1); this one is of the hand-written chat.html.
    const screenshot = await Deno.makeTempFile({ suffix: ".png" });
    await run([screenshot]);
    assert.ok(
      (await Deno.stat(screenshot)).size > 10_000,
      "a screenshot was taken",
    );
  },
);
