// The browser client's media in real Chromium, run by
// tests/e2e/client_media_test.ts (inside a loopback-only network namespace
// when it can), with the client's test pod (client_pages.ts). The tracks are
// a canvas's, so no device and no permission is needed:
// - `addTrack(track, stream, { to })` sends to that peer alone: it gets
//   `track` (its peer id, its kind, the sender's stream id) and frames; the
//   third peer gets nothing and its connections receive nothing;
// - `addTrack` without `to` sends to every peer; `removeTrack(track, { to })`
//   ends it for that peer alone (`trackend`), `removeTrack(track)` for all;
// - glare: two peers add a track to each other at once, their offers held
//   until both have sent one, so the offers cross: each gets the other's
//   track, and frames flow both ways;
// - a hostile peer (hostile_peer.ts) that sends a track is told under the id
//   DTLS proved for it; when its hello then claims another member's id, its
//   link is closed and its track ends, under its own id: no track is ever
//   told under the id it claimed, and the honest members keep talking.
// Prints "<step> ok" per step, then "media journey ok"; exits non-zero with
// the failed assertion.
import assert from "node:assert/strict";
import type { Browser } from "playwright-core";
import {
  open,
  podBroker,
  problems,
  releaseWhenHeld,
  text,
  waitMeshed,
  type Win,
  withChromium,
} from "./client_pages.ts";
import {
  addTrack,
  canvasTrack,
  type CanvasWin,
  receives,
  removeTrack,
  setUp,
  told,
  waitFrames,
  waitStable,
  waitTold,
} from "./media_pages.ts";
import {
  CONTROL,
  frame,
  hello,
  hostile,
  type HostileWin,
  LAST,
} from "./hostile_peer.ts";

/** What a hostile page holds beside its hooks: its links and socket. */
type HostileLinks = {
  H: HostileWin["H"] & {
    links: Map<string, { pc: RTCPeerConnection }>;
    ws: WebSocket;
  };
};

/**
 * A hostile peer's track is told under the id DTLS proved, and ends under it
 * when the peer's hello claims another member's id.
 */
async function bound(browser: Browser, url: string): Promise<void> {
  const session = `${url}#bound-${crypto.randomUUID().slice(0, 8)}`;
  const v = await open(browser, session);
  const x = await open(browser, session);
  await waitMeshed([v, x]);
  await setUp(v);
  const m = await hostile(browser, session);
  const vSid = m.sids.get(v.id)!;
  // M sends a canvas track on its link to V: a new offer of its own.
  const stream = await canvasTrack(m, "m");
  const mId = await m.page.evaluate(async (vSid) => {
    const { H, canvases } = globalThis as unknown as HostileLinks & CanvasWin;
    const { pc } = H.links.get(vSid)!;
    pc.addTrack(...canvases!.m!);
    await pc.setLocalDescription();
    const { type, sdp } = pc.localDescription!;
    H.ws.send(
      JSON.stringify({
        type: "signal",
        to: vSid,
        data: { sdp: { type, sdp } },
      }),
    );
    return H.id;
  }, vSid);
  assert.notEqual(mId, x.id);
  await waitTold(v, ["track", mId, "video", stream]);
  // Its hello now claims X's id: V closes the link, and the track ends.
  await frame(m, vSid, CONTROL | LAST, hello(x.id, m.sid));
  await waitTold(v, ["trackend", mId, "video", stream]);
  assert.deepEqual(await told(v), [
    ["track", mId, "video", stream],
    ["trackend", mId, "video", stream],
  ]);
  await text(v, "V to X", [x], x);
  await text(x, "X to V", [v], v);
  assert.deepEqual(await told(v), [
    ["track", mId, "video", stream],
    ["trackend", mId, "video", stream],
  ]);
}

async function journey(browser: Browser): Promise<void> {
  const broker = await podBroker();
  try {
    const url = `${broker.url}#media-${crypto.randomUUID().slice(0, 8)}`;
    const a = await open(browser, url);
    const b = await open(browser, url);
    const c = await open(browser, url);
    await waitMeshed([a, b, c]);
    for (const peer of [a, b, c]) await setUp(peer);

    // To one peer: B gets it, C gets nothing.
    const camera = await canvasTrack(a, "camera");
    await addTrack(a, "camera", b);
    await waitTold(b, ["track", a.id, "video", camera]);
    await waitFrames(b);
    await waitStable([a, b, c]);
    assert.deepEqual(await told(c), []);
    assert.equal(await receives(c), false, "C receives media");
    console.log("to one peer ok");

    // To every peer; then ended for C alone, then for all.
    await addTrack(a, "camera");
    await waitTold(c, ["track", a.id, "video", camera]);
    await waitFrames(c);
    await removeTrack(a, "camera", c);
    await waitTold(c, ["trackend", a.id, "video", camera]);
    await waitStable([a, b, c]);
    assert.deepEqual(await told(b), [["track", a.id, "video", camera]]);
    await waitFrames(b);
    await removeTrack(a, "camera");
    await waitTold(b, ["trackend", a.id, "video", camera]);
    assert.deepEqual(await told(c), [
      ["track", a.id, "video", camera],
      ["trackend", a.id, "video", camera],
    ]);
    console.log("removeTrack for one peer and for all ok");

    // Glare: A and B each add a track for the other at once; their offers
    // are held until both sent one, so they cross.
    const fromA = await canvasTrack(a, "a");
    const fromB = await canvasTrack(b, "b");
    for (const [peer, name, to] of [[a, "a", b], [b, "b", a]] as const) {
      await peer.page.evaluate(() => {
        const T = (globalThis as unknown as Win).T;
        T.offers.length = 0;
        T.hold = true;
      });
      await addTrack(peer, name, to);
    }
    // (An offer's `to` is a signaling id: each has made one, held.)
    await releaseWhenHeld([a, b]);
    await waitTold(a, ["track", b.id, "video", fromB]);
    await waitTold(b, ["track", a.id, "video", fromA]);
    await waitStable([a, b]);
    await waitFrames(a);
    await waitFrames(b);
    for (const peer of [a, b]) {
      const offers = await peer.page.evaluate(() =>
        (globalThis as unknown as Win).T.offers
      );
      assert.equal(new Set(offers).size, 1, `${offers}: to one peer`);
    }
    console.log("glare ok");

    await bound(browser, broker.url);
    console.log("tracks under the id DTLS proved ok");

    assert.deepEqual(problems, [], "no CSP violation or page error");
  } finally {
    await broker.stop();
  }
}

await withChromium(true, journey);
console.log("media journey ok");
