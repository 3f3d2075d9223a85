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
//   track, and frames flow both ways.
// Prints "<step> ok" per step, then "media journey ok"; exits non-zero with
// the failed assertion.
import assert from "node:assert/strict";
import type { Browser } from "playwright-core";
import {
  open,
  type Peer,
  podBroker,
  problems,
  WAIT,
  waitMeshed,
  type Win,
  withChromium,
} from "./client_pages.ts";

/** What a page records of its room's media, beside the harness's hooks. */
type MediaWin = Win & {
  M: {
    /** `[type, peerId, kind, stream ids]` of each track event. */
    told: [string, string, string, string][];
    /** The canvas tracks this page made, by name. */
    tracks: Record<string, [MediaStreamTrack, MediaStream]>;
  };
};

/** Records track events; makes named canvas tracks (ever-changing frames). */
function setUp(peer: Peer): Promise<void> {
  return peer.page.evaluate(() => {
    const w = globalThis as unknown as MediaWin;
    w.M = { told: [], tracks: {} };
    for (const type of ["track", "trackend"]) {
      w.T.room.addEventListener(type, (event) => {
        const { peerId, track, streams } = event as unknown as {
          peerId: string;
          track: MediaStreamTrack;
          streams: MediaStream[];
        };
        w.M.told.push([
          type,
          peerId,
          track.kind,
          streams.map((s) => s.id).join(),
        ]);
      });
    }
  });
}

/** Makes canvas track `name` in `peer`'s page; its stream's id. */
function canvasTrack(peer: Peer, name: string): Promise<string> {
  return peer.page.evaluate((name) => {
    const w = globalThis as unknown as MediaWin;
    const canvas = document.createElement("canvas");
    canvas.width = 64;
    canvas.height = 48;
    const g = canvas.getContext("2d")!;
    let n = 0;
    setInterval(() => {
      g.fillStyle = `hsl(${(n++ * 37) % 360} 80% 50%)`;
      g.fillRect(0, 0, 64, 48);
    }, 50);
    const stream = canvas.captureStream(20);
    w.M.tracks[name] = [stream.getVideoTracks()[0]!, stream];
    return stream.id;
  }, name);
}

/** `room.addTrack` of track `name`, to `to` or every peer. */
function addTrack(peer: Peer, name: string, to?: Peer): Promise<void> {
  return peer.page.evaluate(([name, to]) => {
    const w = globalThis as unknown as MediaWin;
    const [track, stream] = w.M.tracks[name]!;
    w.T.room.addTrack(track, stream, to === undefined ? {} : { to });
  }, [name, to?.id] as const);
}

/** `room.removeTrack` of track `name`, for `to` or every peer. */
function removeTrack(peer: Peer, name: string, to?: Peer): Promise<void> {
  return peer.page.evaluate(([name, to]) => {
    const w = globalThis as unknown as MediaWin;
    w.T.room.removeTrack(w.M.tracks[name]![0], to === undefined ? {} : { to });
  }, [name, to?.id] as const);
}

/** The track events `peer` recorded. */
function told(peer: Peer): Promise<[string, string, string, string][]> {
  return peer.page.evaluate(() => (globalThis as unknown as MediaWin).M.told);
}

/** Waits until `peer` recorded `event` (`[type, peerId, kind, streams]`). */
async function waitTold(peer: Peer, event: string[]): Promise<void> {
  await peer.page.waitForFunction(
    (event) =>
      (globalThis as unknown as MediaWin).M.told.some((e) =>
        e.join("\n") === event.join("\n")
      ),
    event,
    WAIT,
  ).catch(async (error) => {
    throw new Error(
      `${error.message}\nwanted ${JSON.stringify(event)}, told ${
        JSON.stringify(await told(peer))
      }`,
    );
  });
}

/** Video frames `peer` decoded so far, on all its connections. */
function framesDecoded(peer: Peer): Promise<number> {
  return peer.page.evaluate(async () => {
    let frames = 0;
    for (const pc of (globalThis as unknown as Win).T.pcs) {
      (await pc.getStats()).forEach((report) => {
        if (report.type === "inbound-rtp" && report.kind === "video") {
          frames += report.framesDecoded ?? 0;
        }
      });
    }
    return frames;
  });
}

/** Waits until `peer` decodes more frames than it has now. */
async function waitFrames(peer: Peer): Promise<void> {
  const before = await framesDecoded(peer);
  const until = Date.now() + WAIT.timeout;
  while (Date.now() < until && await framesDecoded(peer) <= before + 5) {
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  assert.ok(await framesDecoded(peer) > before + 5, "no frames decoded");
}

/** Whether any of `peer`'s connections receives media. */
function receives(peer: Peer): Promise<boolean> {
  return peer.page.evaluate(() =>
    (globalThis as unknown as Win).T.pcs.some((pc) =>
      pc.getTransceivers().some((t) => /recv/.test(t.currentDirection ?? ""))
    )
  );
}

/** Waits until every connection of `peers` is done negotiating. */
async function waitStable(peers: Peer[]): Promise<void> {
  for (const peer of peers) {
    await peer.page.waitForFunction(
      () =>
        (globalThis as unknown as Win).T.pcs.every((pc) =>
          pc.signalingState === "stable" || pc.signalingState === "closed"
        ),
      null,
      WAIT,
    );
  }
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
    for (const peer of [a, b]) {
      await peer.page.waitForFunction(
        () => (globalThis as unknown as Win).T.held.length > 0,
        null,
        WAIT,
      );
    }
    await Promise.all(
      [a, b].map((peer) =>
        peer.page.evaluate(() => (globalThis as unknown as Win).T.release())
      ),
    );
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

    assert.deepEqual(problems, [], "no CSP violation or page error");
  } finally {
    await broker.stop();
  }
}

await withChromium(true, journey);
console.log("media journey ok");
