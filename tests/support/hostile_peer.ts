// A hostile peer for the browser client's journeys: a page that does not
// use the client but speaks its wire format itself (the broker's signaling,
// one data channel negotiated as id 0, frames with a header byte, the hello
// `{id, sid}`), so that it can lie (client_hostile_journey.ts,
// media_journey.ts).
import type { Browser, Page } from "playwright-core";
import { open } from "./client_pages.ts";

/**
 * The hostile peer, as page script: `H.join(session)`, `H.connect(sid)`
 * (a link to an honest peer, its hello kept in `H.hellos`, none sent),
 * `H.send(sid, flags, text)` (one frame), `H.flood(sid, bytes)` (chunks
 * that never end a message, until `bytes` or the channel closes).
 */
export const HOSTILE = `
const A62 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
const H = window.H = { links: new Map(), hellos: {}, joined: [], chain: Promise.resolve() };
const put = (frame) => H.ws.send(JSON.stringify(frame));
// Every wait fails after a while, naming what it waited for.
const within = (promise, what, ms = 30000) => {
  let timer;
  const late = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error("Timed out after " + ms + " ms waiting for " + what)), ms);
  });
  return Promise.race([promise, late]).finally(() => clearTimeout(timer));
};
const describe = (sid, pc) => put({ type: "signal", to: sid,
  data: { sdp: { type: pc.localDescription.type, sdp: pc.localDescription.sdp } } });
H.join = async (session) => {
  H.cert = await RTCPeerConnection.generateCertificate({ name: "ECDSA", namedCurve: "P-256" });
  // The id an honest client takes from this certificate.
  H.id = H.cert.getFingerprints()[0].value.split(":").slice(0, 16)
    .map((hex) => A62[parseInt(hex, 16) % 62]).join("");
  const url = new URL("/signal", location.href);
  url.protocol = "ws:";
  H.ws = new WebSocket(url);
  await within(new Promise((resolve) => H.ws.onopen = resolve), "the hostile peer's socket to open");
  put({ type: "join", session });
  return await within(new Promise((resolve) => {
    H.ws.onmessage = ({ data }) => {
      const m = JSON.parse(data);
      if (m.type === "joined") { H.sid = m.peerId; H.peers = m.peers; resolve(m.peerId); }
      if (m.type === "peer-joined") H.joined.push(m.peerId);
      if (m.type === "signal") H.chain = H.chain.then(() => H.signal(m.from, m.data)).catch(() => {});
    };
  }), "the hostile peer's joined frame");
};
H.link = (sid) => {
  let link = H.links.get(sid);
  if (link) return link;
  const pc = new RTCPeerConnection({ certificates: [H.cert] });
  const dc = pc.createDataChannel("pod", { negotiated: true, id: 0 });
  dc.binaryType = "arraybuffer";
  pc.onicecandidate = ({ candidate: c }) => c && put({ type: "signal", to: sid, data: { candidate: {
    candidate: c.candidate, sdpMid: c.sdpMid, sdpMLineIndex: c.sdpMLineIndex, usernameFragment: c.usernameFragment } } });
  dc.onmessage = ({ data }) => {
    const bytes = new Uint8Array(data);
    if (bytes[0] & 4) H.hellos[sid] = JSON.parse(new TextDecoder().decode(bytes.subarray(1)));
  };
  // bounded: awaited through within() in H.connect
  link = { pc, dc, open: new Promise((resolve) => dc.onopen = resolve) };
  // bounded: only raced with the channel draining in H.flood
  link.closed = new Promise((resolve) => dc.onclose = resolve);
  H.links.set(sid, link);
  return link;
};
H.signal = async (from, data) => {
  const { pc } = H.link(from);
  if (data.sdp) {
    await pc.setRemoteDescription(data.sdp);
    if (data.sdp.type === "offer") { await pc.setLocalDescription(); describe(from, pc); }
  } else if (data.candidate) await pc.addIceCandidate(data.candidate).catch(() => {});
};
// The higher signaling id offers, as the client does.
H.connect = async (sid) => {
  const link = H.link(sid);
  if (H.sid > sid) { await link.pc.setLocalDescription(); describe(sid, link.pc); }
  await within(link.open, "the data channel to " + sid + " to open");
  for (let i = 0; !H.hellos[sid]; i++) {
    if (i === 1500) throw new Error("Timed out waiting for the hello of " + sid);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return H.hellos[sid];
};
H.send = (sid, flags, text) => {
  const bytes = new TextEncoder().encode(text);
  const frame = new Uint8Array(bytes.length + 1);
  frame[0] = flags;
  frame.set(bytes, 1);
  try { H.links.get(sid).dc.send(frame); } catch { /* closed by the victim */ }
};
H.flood = async (sid, bytes) => {
  const { dc } = H.links.get(sid);
  const chunk = new Uint8Array(65536); // header 0: not the last chunk
  let sent = 0;
  dc.bufferedAmountLowThreshold = 1 << 20;
  while (sent < bytes && dc.readyState === "open") {
    if (dc.bufferedAmount > 4 << 20) {
      await within(Promise.race([new Promise((resolve) => dc.onbufferedamountlow = resolve), H.links.get(sid).closed]),
        "the channel to drain or close");
      continue;
    }
    dc.send(chunk);
    sent += chunk.length - 1;
  }
  return sent;
};
// Resolves once what the channel buffered has gone out (or it closed).
H.drained = async (sid) => {
  const { dc } = H.links.get(sid);
  while (dc.readyState === "open" && dc.bufferedAmount > 0) {
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
};
`;

/** Header bits of a frame (see src/client/negotiation.ts). */
export const LAST = 1, TEXT = 2, CONTROL = 4;

/** A hostile page's global object. */
export type HostileWin = {
  H: {
    id: string;
    sid: string;
    peers: string[];
    joined: string[];
    join(session: string): Promise<string>;
    connect(sid: string): Promise<{ id: string; sid: string }>;
    send(sid: string, flags: number, text: string): void;
    flood(sid: string, bytes: number): Promise<number>;
    drained(sid: string): Promise<void>;
  };
};

/** A hostile page in the session: joined, linked to every honest member. */
export interface Hostile {
  page: Page;
  /** Its own signaling id. */
  sid: string;
  /** Each honest member's signaling id, by its id (from their hellos). */
  sids: Map<string, string>;
}

/** Joins a hostile page and links it to every member not in `others`. */
export async function hostile(
  browser: Browser,
  url: string,
  others: Hostile[] = [],
): Promise<Hostile> {
  const { page } = await open(browser, url, false);
  await page.evaluate(HOSTILE);
  const session = new URL(url).hash.slice(1);
  const [sid, peers] = await page.evaluate(async (session) => {
    const { H } = globalThis as unknown as HostileWin;
    await H.join(session);
    return [H.sid, H.peers] as const;
  }, session);
  const sids = new Map<string, string>();
  const skip = others.map((other) => other.sid);
  for (const sid of peers.filter((sid) => !skip.includes(sid))) {
    const hello = await page.evaluate(
      (sid) => (globalThis as unknown as HostileWin).H.connect(sid),
      sid,
    );
    sids.set(hello.id, hello.sid);
  }
  return { page, sid, sids };
}

/** Sends one frame from the hostile page to the member at `sid`. */
export function frame(h: Hostile, sid: string, flags: number, body: string) {
  return h.page.evaluate(
    ([sid, flags, body]) =>
      (globalThis as unknown as HostileWin).H.send(sid, flags, body),
    [sid, flags, body] as const,
  );
}

/** A hello frame's body. */
export const hello = (id: string, sid: string): string =>
  JSON.stringify({ id, sid });
