// Hostile peers against the browser client in real Chromium, run by
// tests/e2e/client_security_test.ts (inside a network namespace when it
// can). A hostile page does not use the client: it speaks the client's wire
// format itself (the broker's signaling, one data channel negotiated as id
// 0, frames with a header byte, the hello `{id, sid}`) and lies.
// Usage: deno run -A tests/support/client_hostile_journey.ts ITEM
//   ITEM "ids" (issue 19 item 1): (A) a member's hello claims another's
//   signaling id, to cut that member's link; (B) a member claims the id of
//   a newcomer whose DTLS has not finished; (C) a member claims the id of a
//   peer that left. Each fails; the honest peers keep talking.
//   ITEM "cap" (issue 19 item 3): a peer streams chunks that never end a
//   message; the victim closes the link and its memory stays bounded. A
//   control message past 1 KiB closes the link too.
//   ITEM "budget" (issue 26 item 5): five peers each stream 15/16 of the
//   victim's maxMessageBytes (4 MiB here) without ever ending a message, so
//   no link passes its cap; the room (default budget: 4 x that, 16 MiB)
//   closes a link holding the most, never an honest peer's whose message is
//   smaller, and the victim's memory stays within the budget.
// Prints "<step> ok" per step, then "hostile journey ok"; exits non-zero
// with the failed assertion.
import assert from "node:assert/strict";
import type { Browser } from "playwright-core";
import {
  binary,
  events,
  open,
  type Peer,
  podBroker,
  problems,
  text,
  WAIT,
  type Win,
  withChromium,
} from "./client_pages.ts";
import {
  CONTROL,
  frame,
  hello,
  type Hostile,
  hostile,
  type HostileWin,
  LAST,
  TEXT,
} from "./hostile_peer.ts";

/** What `peer` has received from `from` so far. */
async function textsFrom(peer: Peer, from: string): Promise<string[]> {
  return (await peer.page.evaluate(() =>
    (globalThis as unknown as Win).T.texts
  )).filter(([id]) => id === from).map(([, text]) => text);
}

/**
 * Waits until each of `peers` has every other one open and connected (the
 * hostile pages may be peers too).
 */
async function waitLinked(peers: Peer[]): Promise<void> {
  for (const peer of peers) {
    await peer.page.waitForFunction(
      (ids) => {
        const room = (globalThis as unknown as Win).T.room;
        return ids.every((id) =>
          room.peers.includes(id) && room.connection(id).state === "connected"
        );
      },
      peers.filter((other) => other !== peer).map((other) => other.id),
      WAIT,
    );
  }
}

/** Waits until `peer` saw a `type` event about `id` (after `seen` events). */
async function waitEvent(peer: Peer, type: string, id: string, seen = 0) {
  await peer.page.waitForFunction(
    ([type, id, seen]) =>
      (globalThis as unknown as Win).T.events.slice(seen).some((e) =>
        e[0] === type && e[1] === id
      ),
    [type, id, seen] as const,
    WAIT,
  );
}

async function ids(browser: Browser, url: string): Promise<void> {
  const mesh = `${url}#ids-${crypto.randomUUID().slice(0, 8)}`;
  const v = await open(browser, mesh);
  const x = await open(browser, mesh);
  await waitLinked([v, x]);

  // (A) M's hello on its own link to V names X's signaling id.
  const m = await hostile(browser, mesh);
  await frame(
    m,
    m.sids.get(v.id)!,
    CONTROL | LAST,
    hello(
      await m.page.evaluate(() => (globalThis as unknown as HostileWin).H.id),
      m.sids.get(x.id)!,
    ),
  );
  await text(v, "A: V to X", [x], x);
  await text(x, "A: X to V", [v], v);
  assert.ok(
    !(await events(v)).some((e) => e[0] === "peerleave" && e[1] === x.id),
  );
  await waitLinked([v, x]);
  console.log("A: cut X's link to V ok");

  // (B) A newcomer N whose signals are held (its DTLS with V cannot
  // finish): M2 claims N's id and signaling id, then speaks as N.
  const m2 = await hostile(browser, mesh, [m]);
  const { page } = await open(browser, mesh, false);
  const n: Peer = {
    page,
    id: await page.evaluate(() => {
      const T = (globalThis as unknown as Win).T;
      T.holdAll = true;
      return T.join();
    }),
  };
  const nSid = await m2.page.evaluate(async () => {
    const { H } = globalThis as unknown as HostileWin;
    while (!H.joined.length) await new Promise((r) => setTimeout(r, 20));
    return H.joined[0]!;
  });
  const vSid = m2.sids.get(v.id)!;
  await frame(m2, vSid, CONTROL | LAST, hello(n.id, nSid));
  await frame(m2, vSid, TEXT | LAST, "B: I am N");
  await n.page.evaluate(() => (globalThis as unknown as Win).T.release());
  await waitLinked([v, x, n]);
  await text(n, "B: the real N", [v, x]);
  assert.deepEqual(await textsFrom(v, n.id), ["B: the real N"]);
  await text(v, "B: V to X", [x], x);
  console.log("B: impersonate a newcomer ok");

  // (C) P meshes, then leaves; M3 claims P's id and speaks as P.
  const p = await open(browser, mesh);
  await waitLinked([v, x, n, p]);
  const seen = (await events(v)).length;
  await p.page.evaluate(() => (globalThis as unknown as Win).T.room.leave());
  await waitEvent(v, "peerleave", p.id, seen);
  const m3 = await hostile(browser, mesh, [m, m2]);
  const after = (await events(v)).length;
  await frame(m3, m3.sids.get(v.id)!, CONTROL | LAST, hello(p.id, m3.sid));
  await frame(m3, m3.sids.get(v.id)!, TEXT | LAST, "C: I am P");
  // The honest peers keep talking; V never heard "P" again.
  await text(x, "C: X to V", [v], v);
  await text(v, "C: V to all", [x, n]);
  assert.deepEqual(await textsFrom(v, p.id), []);
  assert.ok(
    !(await events(v)).slice(after).some((e) =>
      e[0] === "peerjoin" && e[1] === p.id
    ),
  );
  console.log("C: take the id of a peer that left ok");
}

/** What the hostile peer tries to make the victim hold. */
const FLOOD = 64 << 20;

/** The victim's JS heap and ArrayBuffer memory, after a full GC, in MiB. */
async function memory(peer: Peer): Promise<number> {
  const cdp = await peer.page.context().newCDPSession(peer.page);
  await cdp.send("HeapProfiler.collectGarbage");
  const usage = await cdp.send("Runtime.getHeapUsage") as {
    usedSize: number;
    backingStorageSize?: number;
  };
  await cdp.detach();
  return (usage.usedSize + (usage.backingStorageSize ?? 0)) / 2 ** 20;
}

async function cap(browser: Browser, url: string): Promise<void> {
  const session = `${url}#cap-${crypto.randomUUID().slice(0, 8)}`;
  const v = await open(browser, session);
  const before = await memory(v);
  const m = await hostile(browser, session);
  const mId = await m.page.evaluate(() =>
    (globalThis as unknown as HostileWin).H.id
  );
  const sent = await m.page.evaluate(
    ([sid, bytes]) => (globalThis as unknown as HostileWin).H.flood(sid, bytes),
    [m.sids.get(v.id)!, FLOOD] as const,
  );
  const grown = await memory(v) - before;
  console.log(
    `victim grew ${grown.toFixed(1)} MiB for ${
      (sent / 2 ** 20).toFixed(1)
    } MiB sent of ${FLOOD / 2 ** 20} MiB`,
  );
  // The link closed at the cap (16 MiB), long before the flood ended,
  // and the victim let go of what it held.
  assert.ok(sent < FLOOD, `all ${sent} bytes went through`);
  await waitEvent(v, "peerleave", mId);
  assert.ok(grown < 8, `the victim grew by ${grown} MiB`);
  // A control message (a hello) is capped at 1 KiB.
  const m2 = await hostile(browser, session, [m]);
  const m2Id = await m2.page.evaluate(() =>
    (globalThis as unknown as HostileWin).H.id
  );
  // A true hello, padded past the cap: without it the link would stay.
  const padded = { id: m2Id, sid: m2.sid, pad: "x".repeat(1024) };
  await frame(m2, m2.sids.get(v.id)!, CONTROL | LAST, JSON.stringify(padded));
  await waitEvent(v, "peerleave", m2Id);
  console.log("cap ok");
}

/**
 * The victim's `maxMessageBytes` in "budget", a quarter of the default so
 * that the test moves a quarter of the bytes; its receive budget is then
 * the default 4 × that, 16 MiB.
 */
const MAX = 4 << 20;
/** What each hostile peer of "budget" makes the victim hold: under MAX. */
const PARTIAL = MAX * 15 / 16;

/** Floods `v` from `h` with PARTIAL bytes (or more) that end no message. */
async function partial(h: Hostile, v: Peer): Promise<number> {
  const sid = h.sids.get(v.id)!;
  return await h.page.evaluate(async ([sid, bytes]) => {
    const { H } = globalThis as unknown as HostileWin;
    const sent = await H.flood(sid, bytes);
    await H.drained(sid);
    return sent;
  }, [sid, PARTIAL] as const);
}

/** The ids `peer` saw leave, in order. */
async function left(peer: Peer): Promise<string[]> {
  return (await events(peer)).filter((e) => e[0] === "peerleave").map((e) =>
    e[1]
  );
}

async function budget(browser: Browser, url: string): Promise<void> {
  const session = `${url}#budget-${crypto.randomUUID().slice(0, 8)}`;
  const { page } = await open(browser, session, false);
  const v: Peer = {
    page,
    id: await page.evaluate(
      (max) => (globalThis as unknown as Win).T.join({ maxMessageBytes: max }),
      MAX,
    ),
  };
  const x = await open(browser, session);
  await waitLinked([v, x]);
  const before = await memory(v);
  // Four hostile peers hold 15.2 MiB of the victim's 16 MiB: allowed.
  const hs: Hostile[] = [];
  const ids: string[] = [];
  for (let i = 0; i < 5; i++) {
    const h = await hostile(browser, session, hs);
    hs.push(h);
    ids.push(
      await h.page.evaluate(() => (globalThis as unknown as HostileWin).H.id),
    );
    if (i < 4) assert.ok(await partial(h, v) >= PARTIAL, "all sent");
  }
  assert.deepEqual(await left(v), [], "no link closed within the budget");
  // The fifth goes past it: a link holding the most is closed, not the
  // fifth's, which holds less when the budget runs out.
  await partial(hs[4]!, v);
  const held = await memory(v) - before;
  console.log(`victim held ${held.toFixed(1)} MiB after five floods`);
  await v.page.waitForFunction(
    () =>
      (globalThis as unknown as Win).T.events.some((e) => e[0] === "peerleave"),
    undefined,
    WAIT,
  );
  const first = await left(v);
  assert.equal(first.length, 1, JSON.stringify(first));
  assert.ok(ids.slice(0, 4).includes(first[0]!), "a largest holder closed");
  console.log("past the budget ok");
  // An honest peer's message, smaller than what each hostile link holds,
  // goes through: another hostile link is closed to make room.
  await binary(x, MAX / 2, "Uint8Array", [v], v);
  const second = await left(v);
  assert.equal(second.length, 2, JSON.stringify(second));
  assert.ok(ids.includes(second[1]!) && second[1] !== first[0]);
  const peers = await v.page.evaluate(() =>
    (globalThis as unknown as Win).T.room.peers
  );
  assert.ok(peers.includes(x.id) && peers.includes(ids[4]!), String(peers));
  const grown = await memory(v) - before;
  console.log(`victim grew ${grown.toFixed(1)} MiB in all`);
  assert.ok(grown < 4 * MAX / 2 ** 20 + 2, `the victim grew by ${grown} MiB`);
  console.log("honest message ok");
}

const JOURNEYS = { ids, cap, budget };
const item = Deno.args[0] as keyof typeof JOURNEYS;
assert.ok(item in JOURNEYS, "usage: ITEM is ids, cap or budget");
const broker = await podBroker();
try {
  await withChromium(true, (browser) => JOURNEYS[item](browser, broker.url));
  assert.deepEqual(problems, [], "no CSP violation or page error");
} finally {
  await broker.stop();
}
console.log("hostile journey ok");
