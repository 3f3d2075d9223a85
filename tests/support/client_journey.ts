// The browser client in real Chromium, run by client_test.ts (inside a
// network namespace when it can): the client is bundled and inlined into a
// signed test pod served by a real broker, then driven in several browser
// contexts: a three-peer mesh with text and binary both ways, a 5 MB
// message, an ICE restart after the network went away, a broker restart
// that open channels survive and a newcomer after it, an ICE restart begun
// while the broker is down, and glare.
// Exits non-zero with the failed assertion; prints "client journey ok".
// Usage: deno run -A tests/support/client_journey.ts [--cut DEV/ADDR]
//   --cut: ICE runs on ADDR (on device DEV) only, and the ICE restart steps
//   remove and restore that address; without it they are skipped.
import assert from "node:assert/strict";
import type { Browser } from "playwright-core";
import {
  binary,
  events,
  ip,
  open,
  type Peer,
  peersOf,
  podBroker,
  problems,
  releaseWhenHeld,
  text,
  ufrags,
  WAIT,
  waitMeshed,
  waitRestarted,
  type Win,
  withChromium,
} from "./client_pages.ts";

const cutIndex = Deno.args.indexOf("--cut");
const cutArg = cutIndex >= 0 ? Deno.args[cutIndex + 1]! : null;
const cut = cutArg === null ? null : [
  cutArg.slice(0, cutArg.indexOf("/")),
  cutArg.slice(cutArg.indexOf("/") + 1),
] as const;

/**
 * Removes the address ICE runs on until `a` sees its connection to `b`
 * fail, then puts it back.
 */
async function cutNetwork(
  [dev, addr]: readonly [string, string],
  a: Peer,
  b: Peer,
): Promise<void> {
  const seen = (await events(a)).length;
  await ip(`addr del ${addr} dev ${dev}`);
  try {
    await a.page.waitForFunction(
      ([id, seen]) =>
        (globalThis as unknown as Win).T.events.slice(seen).some((e) =>
          e[0] === "connectionchange" && e[1] === id && e[2] === "failed"
        ),
      [b.id, seen] as const,
      { timeout: 45_000, polling: 100 },
    );
  } finally {
    await ip(`addr add ${addr} dev ${dev}`);
  }
}

async function journey(browser: Browser): Promise<void> {
  const broker = await podBroker();
  const { url } = broker;
  try {
    // Three peers mesh (the session is the URL fragment); text and binary
    // go both ways, to all and to one.
    const mesh = `${url}#mesh-${crypto.randomUUID().slice(0, 8)}`;
    const a = await open(browser, mesh);
    const b = await open(browser, mesh);
    const c = await open(browser, mesh);
    assert.equal(
      await a.page.evaluate(() =>
        (globalThis as unknown as Win).T.room.session
      ),
      new URL(mesh).hash.slice(1),
    );
    await waitMeshed([a, b, c]);
    await text(a, "hello from A", [b, c]);
    await text(b, "only to A: ünïcødé ✓", [a], a);
    await text(c, "hello from C", [a, b]);
    await binary(c, 1000, "Uint8Array", [a, b]);
    await binary(a, 4096, "ArrayBuffer", [c], c);
    await binary(b, 800, "Float64Array", [a, c]);
    for (const peer of [a, b, c]) {
      const routes = await peer.page.evaluate(() => {
        const room = (globalThis as unknown as Win).T.room;
        return room.peers.map((id: string) => room.connection(id).route);
      });
      assert.deepEqual(routes, ["direct", "direct"]);
    }
    console.log("mesh ok");

    // Large messages: split into chunks and joined again.
    await binary(a, 5 * 1024 * 1024, "Uint8Array", [b], b);
    await text(c, "é".repeat(150_000), [a, b]);
    console.log("5 MB ok");

    if (cut) {
      // The network goes away: A's connection to B fails and restarts ICE;
      // when the network is back, the same link connects again, with new
      // ICE credentials at both ends (whichever end's offer went first).
      const before = await ufrags(a);
      await cutNetwork(cut, a, b);
      await waitRestarted(a, b, before, true, 45_000);
      await waitMeshed([a, b, c]);
      const log = await events(a);
      const states = log.filter((e) =>
        e[0] === "connectionchange" && e[1] === b.id
      ).map((e) => e[2]);
      assert.ok(
        states.lastIndexOf("failed") < states.lastIndexOf("connected"),
        states.join(),
      );
      assert.ok(!log.some((e) => e[0] === "peerleave"), "no peer left");
      await text(a, "after the ICE restart", [b, c]);
      await text(b, "back, B", [a]);
      console.log("ICE restart ok");
    } else console.error("note: no --cut: the ICE restart steps are skipped");

    // The broker goes away: open channels keep working.
    await broker.stop();
    for (const peer of [a, b, c]) {
      await peer.page.waitForFunction(
        () => !(globalThis as unknown as Win).T.room.online,
        null,
        WAIT,
      );
    }
    await text(a, "no broker, A", [b, c]);
    await binary(b, 70_000, "Uint8Array", [a, c]);
    // It comes back on the same port: everyone rejoins under a new
    // signaling id, keeps its id and its links, and a newcomer finds them.
    await broker.start();
    for (const peer of [a, b, c]) {
      await peer.page.waitForFunction(
        () => (globalThis as unknown as Win).T.room.online,
        null,
        WAIT,
      );
      assert.equal(
        await peer.page.evaluate(() =>
          (globalThis as unknown as Win).T.room.peerId
        ),
        peer.id,
      );
    }
    const d = await open(browser, mesh);
    await waitMeshed([a, b, c, d]);
    await text(d, "new here: D", [a, b, c]);
    await text(a, "welcome D", [d], d);
    await binary(c, 100_000, "ArrayBuffer", [d], d);
    for (const peer of [a, b, c]) {
      const left = (await events(peer)).filter((e) => e[0] === "peerleave");
      assert.deepEqual(left, [], "no channel closed through the restart");
    }
    const health = await (await fetch(`http://127.0.0.1:${broker.port}/health`))
      .json();
    assert.equal(health.peers, 4);
    console.log("broker restart ok");

    if (cut) {
      // The broker goes away, then the network: A's connection to B fails
      // and no restart offer can be sent. The network comes back, then the
      // broker: each peer rejoins under a new signaling id, finds where the
      // others are now, and negotiates again (ICE may have come back by
      // itself meanwhile); the same links connect, their offers answered.
      await broker.stop();
      for (const peer of [a, b, c, d]) {
        await peer.page.waitForFunction(
          () => !(globalThis as unknown as Win).T.room.online,
          null,
          WAIT,
        );
      }
      const before = await ufrags(a);
      await cutNetwork(cut, a, b);
      await broker.start();
      await waitRestarted(a, b, before, false, 45_000);
      await waitMeshed([a, b, c, d]);
      for (const peer of [a, b, c, d]) {
        const left = (await events(peer)).filter((e) => e[0] === "peerleave");
        assert.deepEqual(left, [], "no channel closed through the restart");
      }
      await text(a, "restarted without a broker, A", [b, c, d]);
      await text(d, "back, D", [a], a);
      console.log("ICE restart while the broker is down ok");
    }

    // Glare: two connected peers both restart ICE, and their offers are
    // held until both have made one, so they cross (and each one's
    // candidates arrive before its offer). The lower id yields; the
    // connection carries on with the new ICE credentials of both ends.
    const session = `${url}#glare-${crypto.randomUUID().slice(0, 8)}`;
    const e = await open(browser, session);
    const f = await open(browser, session);
    await waitMeshed([e, f]);
    const pcState = (peer: Peer) =>
      peer.page.evaluate(() => {
        const pc = (globalThis as unknown as Win).T.pcs[0]!;
        const ufrag = (sdp = "") => /a=ice-ufrag:(\S+)/.exec(sdp)?.[1];
        return [
          pc.signalingState,
          ufrag(pc.localDescription?.sdp),
          ufrag(pc.remoteDescription?.sdp),
        ];
      });
    const before = await Promise.all([e, f].map(pcState));
    await Promise.all([e, f].map((peer) =>
      peer.page.evaluate(() => {
        const T = (globalThis as unknown as Win).T;
        T.hold = true;
        T.pcs[0]!.restartIce();
      })
    ));
    await releaseWhenHeld([e, f]);
    for (const [i, peer] of [e, f].entries()) {
      await peer.page.waitForFunction(
        (old) => {
          const pc = (globalThis as unknown as Win).T.pcs[0]!;
          return pc.signalingState === "stable" &&
            pc.connectionState === "connected" &&
            !pc.localDescription!.sdp.includes(`a=ice-ufrag:${old[1]}\r`) &&
            !pc.remoteDescription!.sdp.includes(`a=ice-ufrag:${old[2]}\r`);
        },
        before[i]!,
        WAIT,
      );
    }
    // One end (the higher signaling id) made the first offer; then both
    // made a restart offer, each to the other's one signaling id.
    const offers = await Promise.all(
      [e, f].map((peer) =>
        peer.page.evaluate(() => (globalThis as unknown as Win).T.offers)
      ),
    );
    assert.deepEqual(offers.map((list) => list.length).sort(), [1, 2]);
    assert.ok(offers.every((list) => new Set(list).size === 1), `${offers}`);
    await waitMeshed([e, f]);
    await text(e, "glare, E", [f]);
    await text(f, "glare, F", [e]);
    await binary(f, 200_000, "Uint8Array", [e]);
    console.log("glare ok");

    // Leaving closes the channels: the others see peerleave at once.
    await d.page.evaluate(() => (globalThis as unknown as Win).T.room.leave());
    await a.page.waitForFunction(
      (id) =>
        (globalThis as unknown as Win).T.events.some((e) =>
          e[0] === "peerleave" && e[1] === id
        ),
      d.id,
      WAIT,
    );
    assert.deepEqual(await peersOf(a), [b.id, c.id].sort());

    assert.deepEqual(problems, [], "no CSP violation or page error");
  } finally {
    await broker.stop();
  }
}

await withChromium(!cut, journey);
console.log("client journey ok");
