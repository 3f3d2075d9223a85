// Firefox and Chromium as peers of one room, run by firefox_test.ts inside
// a network namespace with a veth pair (see firefox.ts): the browser
// client's test pod (mesh, text and binary both ways, the route each end
// reports, a video track each way: a call between the two browsers, with
// canvas tracks) and the chat pod (two visitors chat both ways).
// Exits non-zero with the failed assertion; prints "journey ok" at the end.
// Usage: deno run -A tests/support/firefox_journey.ts
import assert from "node:assert/strict";
import { startServer } from "./helpers.ts";
import { uploadChatPod } from "./chat_pod.ts";
import type { Browser as Chromium } from "playwright-core";
import type { Browser as Firefox } from "puppeteer-core";
import { MemoryRegistry } from "../../src/registries/memory.ts";
import {
  binary,
  open,
  type Peer,
  podBroker,
  text,
  WAIT,
  waitMeshed,
  type Win,
} from "./client_pages.ts";
import { exchangeVideo } from "./media_pages.ts";
import { withChromiumAndFirefox } from "./cross_browser.ts";
import { openInFirefox } from "./firefox.ts";

/** Waits until `peer` reports `route` for its connection to `other`. */
async function waitRoute(peer: Peer, other: Peer, route: string) {
  await peer.page.waitForFunction(
    ([id, route]) =>
      (globalThis as unknown as Win).T.room.connection(id).route === route,
    [other.id, route] as const,
    WAIT,
  );
}

async function clientSteps(chromium: Chromium, firefox: Firefox) {
  const broker = await podBroker();
  try {
    const url = `${broker.url}#ff-${crypto.randomUUID().slice(0, 8)}`;
    const c = await open(chromium, url);
    const { page } = await openInFirefox(firefox, url);
    const id = await page.evaluate(() =>
      (globalThis as unknown as Win).T.join()
    );
    assert.match(id, /^[A-Za-z0-9]{16}$/);
    const f: Peer = { page, id };
    await waitMeshed([c, f]);
    await text(c, "from Chromium", [f]);
    await text(f, "from Firefox", [c]);
    await binary(c, 1_000_000, "ArrayBuffer", [f]);
    await binary(f, 1_000_000, "Uint8Array", [c]);
    // Firefox has no selectedcandidatepairchange: the client reads the
    // route from getStats() there.
    await waitRoute(c, f, "direct");
    await waitRoute(f, c, "direct");
    console.log("client ok");
    // A call: a video track each way, told and decoded at the other end.
    await exchangeVideo(c, f);
    console.log("media ok");
    // Closed before the broker stops, so no page reports a lost socket.
    await c.page.context().close();
    await page.evaluate(() => (globalThis as unknown as Win).T.room.leave());
  } finally {
    await broker.stop();
  }
}

async function chatSteps(chromium: Chromium, firefox: Firefox) {
  const registry = new MemoryRegistry();
  const server = (await startServer({
    registry,
  })).server;
  try {
    const broker = `http://127.0.0.1:${server.port}`;
    const url = `${(await uploadChatPod(broker)).url}#ff-${
      crypto.randomUUID().slice(0, 8)
    }`;
    const context = await chromium.newContext();
    await context.grantPermissions(["camera", "microphone"]);
    const a = await context.newPage();
    await a.goto(url);
    const { firefox: b } = await openInFirefox(firefox, url);
    const connected = '#status[data-state="connected"]';
    await a.waitForSelector(connected, WAIT);
    await b.waitForSelector(connected, WAIT);
    const idA = (await a.locator("#me").textContent())!;
    const idB = await b.$eval("#me", (node) => node.textContent ?? "");
    await a.locator(`#peers li[data-peer-id="${idB}"][data-state="open"]`)
      .waitFor(WAIT);
    await b.waitForSelector(
      `#peers li[data-peer-id="${idA}"][data-state="open"]`,
      WAIT,
    );
    await a.fill("#input", "hello from Chromium");
    await a.press("#input", "Enter");
    await b.waitForFunction(
      (from) =>
        [...document.querySelectorAll(`#log .msg[data-from="${from}"]`)]
          .some((node) => node.textContent?.includes("hello from Chromium")),
      WAIT,
      idA,
    );
    await b.type("#input", "hello from Firefox");
    await b.keyboard.press("Enter");
    await a.locator(`#log .msg[data-from="${idB}"]`, {
      hasText: "hello from Firefox",
    }).waitFor(WAIT);
    await context.close();
    console.log("chat ok");
  } finally {
    await server.close();
  }
}

await withChromiumAndFirefox(async (chromium, firefox) => {
  await clientSteps(chromium, firefox);
  await chatSteps(chromium, firefox);
});
