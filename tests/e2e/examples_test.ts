// The built example pods (examples/file-drop/, examples/chat/) in Debian's
// Chromium (see _examples_journey.ts). The journey runs in a child process,
// inside a network namespace that has only loopback when this is root and
// `unshare` works, so no candidate or packet can leave the machine.
import assert from "node:assert/strict";
import { join } from "node:path";
import {
  browserTest,
  chromiumNotice,
  runJourneyOk,
} from "../support/browser.ts";

const JOURNEY =
  new URL("../support/examples_journey.ts", import.meta.url).pathname;
chromiumNotice("the examples' browser test");

browserTest(
  "examples: the built file drop sends 3 MB with progress, the built chat talks both ways and without the broker",
  async () => {
    // UPDATE_SCREENSHOT=1 refreshes the tutorial's picture of the built chat.
    const shots = await Deno.makeTempDir({ prefix: "pod-shots-" });
    await runJourneyOk(JOURNEY, [shots]);
    const chat = join(shots, "chat.png");
    assert.ok((await Deno.stat(chat)).size > 10_000, "a screenshot was taken");
    if (Deno.env.get("UPDATE_SCREENSHOT")) {
      await Deno.copyFile(
        chat,
        new URL("../../examples/chat/screenshot.png", import.meta.url),
      );
    }
    await Deno.remove(shots, { recursive: true });
  },
);
