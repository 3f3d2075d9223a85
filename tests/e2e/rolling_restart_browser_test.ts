// A rolling restart in Debian's Chromium: two visitors in one room keep
// their data channel and their peer ids while two brokers on Redis, behind
// nginx configured as docs/operators/proxy.md and docs/operators/scale-out.md
// say, are drained and started again one at a time (see
// rolling_restart_journey.ts for what is checked).
import assert from "node:assert/strict";
import { journeyTest } from "../support/browser.ts";

journeyTest(
  "the rolling restart browser test",
  "a rolling restart of two brokers behind nginx: two Chromium visitors keep their peer ids, their data channel and their messages, and see no one leave or join",
  "rolling_restart_journey.ts",
  async (run) => {
    const { output } = await run();
    for (const step of ["restart of broker 1 ok", "restart of broker 2 ok"]) {
      assert.match(output, new RegExp(`^${step}$`, "m"), output);
    }
  },
);
