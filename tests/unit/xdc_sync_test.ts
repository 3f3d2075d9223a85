// Peers that lie in the webxdc sync (src/client/webxdc_sync.ts), against a
// real runtime (src/client/webxdc_runtime.ts) with real Ed25519: a
// summary is a claim, and a peer whose claims and answers do not agree is
// cut; a peer cut has its link closed, and closed again when it comes
// back. Honest peers, in rounds bound by count or by bytes, are never cut
// (tests/unit/xdc_runtime_test.ts has the rest of the runtime).
import assert from "node:assert/strict";
import { WebxdcRuntime } from "../../src/client/webxdc_runtime.ts";
import {
  MAX_LOG_UPDATES,
  type SignedUpdate,
} from "../../src/client/webxdc_log.ts";
import { MemoryStore } from "../../src/client/webxdc_store.ts";
import { newAuthor, signUpdate } from "../../src/client/webxdc_sign.ts";
import { ROUND_UPDATES } from "../../src/client/webxdc_sync.ts";

/**
 * Runtime "a" with peer "h" joined, played by the test: what a sends h,
 * the links a closes, the cuts a makes, and h's own signed updates.
 */
async function withPeer(answerMs?: number) {
  const sent: { t: string; u?: SignedUpdate[]; more?: boolean }[] = [];
  const closed: string[] = [];
  const cuts: string[] = [];
  const a = new WebxdcRuntime({
    instance: "room",
    selfAddr: "a@example",
    selfName: "a",
    store: Promise.resolve(new MemoryStore()),
    wire: {
      send: (_peer, text) => void sent.push(JSON.parse(text)),
      sendBinary: () => {},
      close: (peer) => void closed.push(peer),
    },
    onCut: (_peer, why) => void cuts.push(why),
    ...(answerMs === undefined ? {} : { answerMs }),
  });
  await a.ready;
  a.replicator.join("h");
  const author = await newAuthor();
  const signed = async (n: number, body = `{"payload":${n}}`) => {
    const update = { a: author.id, n, b: body, s: "" };
    update.s = await signUpdate("room", author, update);
    return update;
  };
  const from = (message: unknown) => a.message("h", JSON.stringify(message));
  return { a, sent, closed, cuts, signed, from, author: author.id };
}

/** Checks that h was cut once for `why`, its link closed, nothing read after. */
async function assertCut(
  peer: Awaited<ReturnType<typeof withPeer>>,
  why: string,
) {
  assert.deepEqual(peer.cuts, [why]);
  assert.deepEqual(peer.closed, ["h"], "the link is closed");
  assert.equal(peer.a.replicator.isCut("h"), true);
  const before = peer.a.log.maxSerial;
  await peer.from({ t: "upd", u: [await peer.signed(99)] });
  assert.equal(peer.a.log.maxSerial, before, "nothing more is read");
  assert.deepEqual(peer.a.replicator.peers, []);
}

Deno.test("webxdc sync: a peer whose summary claims updates its last answer does not bring is cut, and its link closed", async () => {
  const peer = await withPeer();
  await peer.from({ t: "have", h: { [peer.author]: 3 } });
  await peer.from({
    t: "upd",
    u: [await peer.signed(1), await peer.signed(2)],
    more: false,
    r: true,
  });
  assert.equal(peer.a.log.maxSerial, 2, "what it sent is kept");
  await assertCut(peer, "a summary that claims updates it did not send");
});

Deno.test("webxdc sync: a peer whose summary claims what ours lacks and that never answers is cut when the answer is due", async () => {
  const peer = await withPeer(50);
  await peer.from({ t: "have", h: { [peer.author]: 2 } });
  assert.deepEqual(peer.cuts, [], "not before the answer is due");
  await new Promise((done) => setTimeout(done, 120));
  await assertCut(peer, "a summary that claims updates it never sends");
});

Deno.test("webxdc sync: a peer that answers what it claimed in time is not cut, and no deadline is left behind", async () => {
  const peer = await withPeer(50);
  await peer.from({ t: "have", h: { [peer.author]: 2 } });
  await peer.from({
    t: "upd",
    u: [await peer.signed(2), await peer.signed(1)],
    more: false,
    r: true,
  });
  await new Promise((done) => setTimeout(done, 120));
  assert.deepEqual(peer.cuts, []);
  assert.deepEqual(peer.closed, []);
  assert.equal(peer.a.log.maxSerial, 2);
});

Deno.test("webxdc sync: summaries and answers that cannot be honest cut the peer: too much, taken back, what we hold, more that is not full", async () => {
  const cases: [
    string,
    (peer: Awaited<ReturnType<typeof withPeer>>) => Promise<void>,
  ][] = [
    ["a summary that claims more than a log holds", async ({ from }) => {
      const h: Record<string, number> = {};
      for (let i = 0; i < 3; i++) h[`${"A".repeat(42)}${i}`] = 4_000;
      assert.ok(Object.values(h).reduce((x, y) => x + y) > MAX_LOG_UPDATES);
      await from({ t: "have", h });
    }],
    ["a summary that takes back what it claimed", async (peer) => {
      // Enough here for two rounds, so that h may send a second summary.
      for (let i = 0; i <= ROUND_UPDATES; i++) {
        peer.a.sendUpdate({ payload: i });
      }
      await peer.a.flushed();
      await peer.from({ t: "have", h: { [peer.author]: 1 } });
      await peer.from({ t: "upd", u: [await peer.signed(1)], r: true });
      assert.equal(peer.sent.at(-1)!.more, true, "a first round of two");
      await peer.from({ t: "have", h: {} });
    }],
    ["a batch of updates we said we hold", async (peer) => {
      peer.a.sendUpdate({ payload: "own" });
      await peer.a.flushed();
      peer.a.peerLeft("h");
      peer.a.peerJoined("h"); // h again, now asked with a's summary {a: 1}
      await peer.a.flushed();
      // h relays a's own update back as an answer to that summary.
      await peer.from({ t: "upd", u: [peer.a.log.at(1)], r: true });
    }],
    ["a batch that says more but is not full", async (peer) => {
      await peer.from({
        t: "upd",
        u: [await peer.signed(1)],
        more: true,
        r: true,
      });
    }],
  ];
  for (const [why, act] of cases) {
    const peer = await withPeer();
    await act(peer);
    await assertCut(peer, why);
  }
});

Deno.test("webxdc sync: a cut peer that connects again is closed again, and gets nothing", async () => {
  const peer = await withPeer();
  await peer.a.message("h", "{");
  assert.deepEqual(peer.cuts, ["not JSON"]);
  const sent = peer.sent.length;
  peer.a.peerJoined("h");
  await peer.a.flushed();
  assert.deepEqual(peer.closed, ["h", "h"]);
  assert.equal(peer.sent.length, sent, "no summary for it");
});
