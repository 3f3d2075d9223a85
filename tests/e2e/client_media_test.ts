// The browser client's media in Debian's Chromium (see
// tests/support/media_journey.ts): a track sent to one peer alone, removed
// for one peer and for all, and two peers adding tracks to each other with
// crossing offers; a hostile peer's track is told under the id DTLS
// proved, never under one its hello claims. The journey runs in a child process, inside a network
// namespace that has only loopback when this is root and `unshare` works.
import assert from "node:assert/strict";
import { journeyTest } from "../support/browser.ts";

journeyTest(
  "the browser client's media test",
  "client media in Chromium: addTrack and removeTrack to one peer or all, track and trackend, glare, tracks under the DTLS-proven id",
  "media_journey.ts",
  async (run) => {
    const { output } = await run();
    for (
      const step of [
        "to one peer",
        "removeTrack for one peer and for all",
        "glare",
        "tracks under the id DTLS proved",
      ]
    ) assert.match(output, new RegExp(`^${step} ok$`, "m"), output);
  },
);
