// The built example pods (examples/file-drop/, examples/chat/) in Debian's
// Chromium (see _examples_journey.ts). The journey runs in a child process,
// inside a network namespace that has only loopback when this is root and
// `unshare` works, so no candidate or packet can leave the machine.
import assert from "node:assert/strict";
import { join } from "node:path";
import { journeyTest } from "../support/browser.ts";

journeyTest(
  "the examples' browser test",
  "examples: the built file drop sends 3 MB with progress, the built chat talks both ways and without the broker",
  "examples_journey.ts",
  async (run) => {
    // UPDATE_SCREENSHOT=1 refreshes the tutorial's picture of the built chat.
    const shots = await Deno.makeTempDir({ prefix: "pod-shots-" });
    await run([shots]);
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
