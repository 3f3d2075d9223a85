// The browser client against hostile peers (issue 19 items 1 and 3, issue
// 26 item 5), in
// real Chromium: tests/support/client_hostile_journey.ts, in a child process
// inside a network namespace when it can.
import assert from "node:assert/strict";
import { supportFile } from "../support/paths.ts";
import {
  browserTest,
  CHROMIUM,
  chromiumNotice,
  hasChromium,
  runJourney,
} from "../support/browser.ts";

const JOURNEY = supportFile("client_hostile_journey.ts");

chromiumNotice("the browser client's security tests");

/** Runs the hostile journey's `item` and checks that each step passed. */
async function hostile(item: string, steps: string[]): Promise<string> {
  assert.ok(hasChromium, `${CHROMIUM} is missing: apt-get install -y chromium`);
  const result = await runJourney(JOURNEY, [item]);
  assert.equal(result.code, 0, result.output);
  for (const step of steps) {
    assert.ok(result.output.includes(`${step} ok\n`), result.output);
  }
  assert.match(result.output, /^hostile journey ok$/m);
  return result.output;
}

browserTest(
  "security 1: no member can take another's id or cut two members apart (client, Chromium)",
  async () => {
    await hostile("ids", [
      "A: cut X's link to V",
      "B: impersonate a newcomer",
      "C: take the id of a peer that left",
    ]);
  },
);

browserTest(
  "security 3: a peer's endless message closes its link, the victim's memory stays bounded (client, Chromium)",
  async () => {
    const output = await hostile("cap", ["cap"]);
    console.log(/^victim grew .*$/m.exec(output)?.[0]);
  },
);

browserTest(
  "security round 3, 5: hostile peers together cannot make a tab hold more than the room's receive budget (client, Chromium)",
  async () => {
    const output = await hostile("budget", [
      "past the budget",
      "honest message",
    ]);
    console.log(/^victim held .*$/m.exec(output)?.[0]);
    console.log(/^victim grew .*$/m.exec(output)?.[0]);
  },
);
