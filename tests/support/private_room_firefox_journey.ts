// A private room between Chromium and Firefox, run by private_room_test.ts
// inside a network namespace with a veth pair (see firefox.ts): Chromium
// opens a private room, Firefox opens its link, and they exchange messages
// and a video track each way, every signal sealed; a Firefox page with the
// session's name but not the secret is refused, and one holding the link
// whose sealed signals are altered on the way reaches no one.
// Exits non-zero with the failed assertion; prints "journey ok" at the end.
// Usage: deno run -A tests/support/private_room_firefox_journey.ts
import assert from "node:assert/strict";
import type { Browser as Chromium } from "playwright-core";
import type { Browser as Firefox } from "puppeteer-core";
import {
  open,
  type Peer,
  peersOf,
  podBroker,
  text,
  WAIT,
  waitMeshed,
  type Win,
} from "./client_pages.ts";
import { exchangeVideo } from "./media_pages.ts";
import { withChromiumAndFirefox } from "./cross_browser.ts";
import { openInFirefox } from "./firefox.ts";
import { HOOKS, type PrivateWin } from "./private_room_pages.ts";

async function inFirefox(firefox: Firefox, url: string) {
  const { page } = await openInFirefox(firefox, url);
  await page.evaluate(HOOKS);
  return page;
}

async function steps(chromium: Chromium, firefox: Firefox): Promise<void> {
  const broker = await podBroker();
  try {
    const { page: pageC } = await open(chromium, broker.url, false);
    await pageC.evaluate(HOOKS);
    const c: Peer = {
      page: pageC,
      id: await pageC.evaluate(() =>
        (globalThis as unknown as Win).T.join({ private: true })
      ),
    };
    const link = await pageC.evaluate(() => location.href);
    const session = await pageC.evaluate(() =>
      (globalThis as unknown as Win).T.room.session
    );

    const pageF = await inFirefox(firefox, link);
    const f: Peer = {
      page: pageF,
      id: await pageF.evaluate(() => (globalThis as unknown as Win).T.join()),
    };
    assert.deepEqual(
      await pageF.evaluate(() => {
        const room = (globalThis as unknown as Win).T.room;
        return [room.private, room.session];
      }),
      [true, session],
    );
    await waitMeshed([c, f]);
    await text(c, "from Chromium", [f]);
    await text(f, "from Firefox", [c]);
    console.log("client ok");
    // A call, one track after the other (see firefox_journey.ts).
    await exchangeVideo(c, f);
    for (const peer of [c, f]) {
      const { sealed, plain } = await peer.page.evaluate(() =>
        (globalThis as unknown as PrivateWin).P
      );
      assert.ok(sealed > 0, "signals were sealed");
      assert.equal(plain, 0, "no signal went in clear");
    }
    console.log("media ok");

    // The session's name without the secret.
    const outsider = await inFirefox(firefox, broker.url);
    const refused = await outsider.evaluate(
      (session) =>
        (globalThis as unknown as Win).T.join({ session: session as string })
          .then(() => "joined", (error: Error) => error.message),
      session,
    );
    assert.match(refused as string, /room_locked/);

    // The link, with every sealed signal altered on the way.
    const tampered = await inFirefox(firefox, link);
    await tampered.evaluate(() => {
      (globalThis as unknown as PrivateWin).P.tamper = true;
    });
    await tampered.evaluate(() => (globalThis as unknown as Win).T.join());
    for (const peer of [c, f]) {
      await peer.page.waitForFunction(
        () => (globalThis as unknown as PrivateWin).P.drops > 0,
        null,
        WAIT,
      );
    }
    assert.deepEqual(await peersOf(c), [f.id]);
    assert.deepEqual(await peersOf(f), [c.id]);
    assert.deepEqual(
      await tampered.evaluate(() =>
        (globalThis as unknown as Win).T.room.peers
      ),
      [],
    );
    console.log("tamper ok");
    // Closed before the broker stops, so no page reports a lost socket.
    await c.page.context().close();
    for (const page of [pageF, tampered]) {
      await page.evaluate(() => (globalThis as unknown as Win).T.room.leave());
    }
  } finally {
    await broker.stop();
  }
}

await withChromiumAndFirefox(steps);
