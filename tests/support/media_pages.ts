// The browser client's media as the journeys drive it (media_journey.ts,
// firefox_journey.ts): track events recorded in each page, canvas tracks
// (ever-changing frames, no device or permission needed), and waits on
// what a page was told and decoded.
import assert from "node:assert/strict";
import { type Peer, WAIT, type Win } from "./client_pages.ts";

/** What a page records of its room's media, beside the harness's hooks. */
export type MediaWin = Win & {
  M: {
    /** `[type, peerId, kind, stream ids]` of each track event. */
    told: [string, string, string, string][];
  };
} & CanvasWin;

/** The canvas tracks a page made with {@linkcode canvasTrack}, by name. */
export type CanvasWin = {
  canvases?: Record<string, [MediaStreamTrack, MediaStream]>;
};

/** Records track events; makes named canvas tracks (ever-changing frames). */
export function setUp(peer: Peer): Promise<void> {
  return peer.page.evaluate(() => {
    const w = globalThis as unknown as MediaWin;
    w.M = { told: [] };
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
export function canvasTrack(
  peer: Pick<Peer, "page">,
  name: string,
): Promise<string> {
  return peer.page.evaluate((name) => {
    const w = globalThis as unknown as CanvasWin;
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
    w.canvases = {
      ...w.canvases,
      [name]: [stream.getVideoTracks()[0]!, stream],
    };
    return stream.id;
  }, name);
}

/** `room.addTrack` of track `name`, to `to` or every peer. */
export function addTrack(peer: Peer, name: string, to?: Peer): Promise<void> {
  return peer.page.evaluate(([name, to]) => {
    const w = globalThis as unknown as MediaWin;
    const [track, stream] = w.canvases![name]!;
    w.T.room.addTrack(track, stream, to === undefined ? {} : { to });
  }, [name, to?.id] as const);
}

/** `room.removeTrack` of track `name`, for `to` or every peer. */
export function removeTrack(
  peer: Peer,
  name: string,
  to?: Peer,
): Promise<void> {
  return peer.page.evaluate(([name, to]) => {
    const w = globalThis as unknown as MediaWin;
    w.T.room.removeTrack(w.canvases![name]![0], to === undefined ? {} : { to });
  }, [name, to?.id] as const);
}

/** The track events `peer` recorded. */
export function told(peer: Peer): Promise<[string, string, string, string][]> {
  return peer.page.evaluate(() => (globalThis as unknown as MediaWin).M.told);
}

/**
 * A call between `x` and `y`: each sends the other a canvas video track,
 * told and decoded at the other end. One after the other: when Firefox and
 * Chromium add tracks at the same moment (crossing offers), no track
 * arrives (the known limitation in docs/authors/calls.md); crossing offers
 * are tested in Chromium.
 */
export async function exchangeVideo(x: Peer, y: Peer): Promise<void> {
  for (const peer of [x, y]) await setUp(peer);
  const fromX = await canvasTrack(x, "x");
  const fromY = await canvasTrack(y, "y");
  await addTrack(x, "x");
  await waitTold(y, ["track", x.id, "video", fromX]);
  await addTrack(y, "y");
  await waitTold(x, ["track", y.id, "video", fromY]);
  await waitFrames(y);
  await waitFrames(x);
}

/** Waits until `peer` recorded `event` (`[type, peerId, kind, streams]`). */
export async function waitTold(peer: Peer, event: string[]): Promise<void> {
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
export function framesDecoded(peer: Peer): Promise<number> {
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
export async function waitFrames(peer: Peer): Promise<void> {
  const before = await framesDecoded(peer);
  const until = Date.now() + WAIT.timeout;
  while (Date.now() < until && await framesDecoded(peer) <= before + 5) {
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  assert.ok(await framesDecoded(peer) > before + 5, "no frames decoded");
}

/** Whether any of `peer`'s connections receives media. */
export function receives(peer: Peer): Promise<boolean> {
  return peer.page.evaluate(() =>
    (globalThis as unknown as Win).T.pcs.some((pc) =>
      pc.getTransceivers().some((t) => /recv/.test(t.currentDirection ?? ""))
    )
  );
}

/** Waits until every connection of `peers` is done negotiating. */
export async function waitStable(peers: Peer[]): Promise<void> {
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
