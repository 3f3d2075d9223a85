// Private rooms in real Chromium, run by private_room_test.ts (inside a
// network namespace when it can): A opens a private room (its secret goes
// into the URL fragment), B opens A's link and they exchange messages both
// ways; C, with the session's name but not the secret, is refused; D holds
// the link but everything it signals is altered on the way (as a broker
// that rewrote sealed signals would), so A and B drop what it sends and no
// connection forms with it. Then E and F do the same across two brokers that
// share Redis.
// Exits non-zero with the failed assertion; prints "private room journey ok".
// Usage: deno run -A tests/support/private_room_journey.ts
import assert from "node:assert/strict";
import type { Browser, Page } from "playwright-core";
import {
  open,
  type Peer,
  peersOf,
  podBroker,
  problems,
  text,
  WAIT,
  waitMeshed,
  type Win,
  withChromium,
} from "./client_pages.ts";
import { exchangeVideo } from "./media_pages.ts";
import { HOOKS, type PrivateWin } from "./private_room_pages.ts";
import { startRedis } from "./redis.ts";
import { createRedisBus } from "../../src/signaling/bus/redis.ts";

async function hooked(browser: Browser, url: string): Promise<Page> {
  const { page } = await open(browser, url, false);
  await page.evaluate(HOOKS);
  return page;
}

async function journey(browser: Browser): Promise<void> {
  const broker = await podBroker();
  try {
    // A opens a private room: the fragment becomes its secret.
    const pageA = await hooked(browser, broker.url);
    const idA = await pageA.evaluate(() =>
      (globalThis as unknown as Win).T.join({ private: true })
    );
    const a: Peer = { page: pageA, id: idA };
    const { link, session, isPrivate } = await pageA.evaluate(() => ({
      link: location.href,
      session: (globalThis as unknown as Win).T.room.session,
      isPrivate: (globalThis as unknown as Win).T.room.private,
    }));
    assert.equal(isPrivate, true);
    const secret = new URL(link).hash.slice(1);
    assert.match(secret, /^k_[\w-]{43}$/);
    assert.match(session, /^k_[\w-]{43}$/);
    assert.notEqual(session, secret, "the session is not the secret");

    // B opens A's link: the same room, private without asking.
    const pageB = await hooked(browser, link);
    const b: Peer = {
      page: pageB,
      id: await pageB.evaluate(() => (globalThis as unknown as Win).T.join()),
    };
    assert.deepEqual(
      await pageB.evaluate(() => {
        const room = (globalThis as unknown as Win).T.room;
        return [room.private, room.session];
      }),
      [true, session],
    );
    await waitMeshed([a, b]);
    await text(a, "hello from A", [b]);
    await text(b, "hello from B", [a]);
    // A call: a video track each way, decoded at the other end.
    await exchangeVideo(a, b);
    // Every signal went sealed: the broker saw none of their SDP.
    for (const page of [pageA, pageB]) {
      const { sealed, plain } = await page.evaluate(() =>
        (globalThis as unknown as PrivateWin).P
      );
      assert.ok(sealed > 0, "signals were sealed");
      assert.equal(plain, 0, "no signal went in clear");
    }

    // C knows the session's name, not the secret: the broker refuses it.
    const pageC = await hooked(browser, broker.url);
    const refused = await pageC.evaluate(
      (session) =>
        (globalThis as unknown as Win).T.join({ session }).then(
          () => "joined",
          (error: Error) => error.message,
        ),
      session,
    );
    assert.match(refused, /room_locked/);

    // D holds the link, but what it signals is altered on the way: A and
    // B drop it, and no connection forms with D.
    const pageD = await hooked(browser, link);
    await pageD.evaluate(() => {
      (globalThis as unknown as PrivateWin).P.tamper = true;
    });
    await pageD.evaluate(() => (globalThis as unknown as Win).T.join());
    for (const page of [pageA, pageB]) {
      await page.waitForFunction(
        () => (globalThis as unknown as PrivateWin).P.drops > 0,
        null,
        WAIT,
      );
    }
    assert.deepEqual(await peersOf(a), [b.id]);
    assert.deepEqual(await peersOf(b), [a.id]);
    const states = await pageD.evaluate(() => {
      const T = (globalThis as unknown as Win).T;
      return [T.room.peers, T.pcs.map((pc) => pc.remoteDescription?.type)];
    });
    assert.deepEqual(states[0], [], "D reached no one");
    // A and B stay connected to each other.
    await text(a, "still here", [b]);

    assert.deepEqual(problems, [], "no CSP violation or page error");
  } finally {
    await broker.stop();
  }
  await acrossBrokers(browser);
}

// E opens a private room on one broker, F opens E's link on another: the
// brokers share the keyed session through Redis, and still read no signal.
async function acrossBrokers(browser: Browser): Promise<void> {
  await using redis = await startRedis();
  const buses = [
    await createRedisBus({ url: redis.url }),
    await createRedisBus({ url: redis.url }),
  ];
  const one = await podBroker({ bus: buses[0]! });
  const two = await podBroker({ bus: buses[1]! }, one.pod);
  try {
    const pageE = await hooked(browser, one.url);
    const e: Peer = {
      page: pageE,
      id: await pageE.evaluate(() =>
        (globalThis as unknown as Win).T.join({ private: true })
      ),
    };
    const fragment = new URL(await pageE.evaluate(() => location.href)).hash;
    const pageF = await hooked(browser, two.url + fragment);
    const f: Peer = {
      page: pageF,
      id: await pageF.evaluate(() => (globalThis as unknown as Win).T.join()),
    };
    await waitMeshed([e, f]);
    await text(e, "from broker one", [f]);
    await text(f, "from broker two", [e]);
    for (const page of [pageE, pageF]) {
      const { sealed, plain } = await page.evaluate(() =>
        (globalThis as unknown as PrivateWin).P
      );
      assert.ok(sealed > 0, "signals were sealed across brokers");
      assert.equal(plain, 0, "no signal went in clear across brokers");
    }
    console.log("across brokers ok");
  } finally {
    await one.stop();
    await two.stop();
    for (const bus of buses) await bus.close();
  }
}

await withChromium(true, journey);
console.log("private room journey ok");
