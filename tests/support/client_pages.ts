// What the browser client's journeys share (client_journey.ts,
// client_hostile_journey.ts): a signed test pod with the client bundled
// and inlined, served by a real broker that can be stopped and started again
// on its port; Chromium; and the pages' test hooks and helpers.
import assert from "node:assert/strict";
import { type Browser, chromium, type Page } from "playwright-core";
import { generateKeyPair } from "../../src/pod/ed25519.ts";
import { signPod } from "../../src/pod/sign.ts";
import type { JoinOptions, Room } from "../../src/client/mod.ts";
import { CHROMIUM, CHROMIUM_FLAGS } from "./chat_journey_config.ts";
import { bundleClient } from "./client_bundle.ts";
import { restartableBroker } from "./helpers.ts";
import type { SignalServerOptions } from "../../src/core.ts";

/** How long a page waits for something (long: a loaded 2-core machine runs
 * two browsers and the brokers), and how often it looks. */
export const WAIT = { timeout: 45_000, polling: 100 };

/**
 * The page's test hooks: events and messages as they arrive, and a wrapper
 * around WebSocket.send that counts offers and can hold them back (`hold`),
 * so that two peers' offers cross (glare) and candidates outrun their
 * offer, or hold every signal (`holdAll`).
 */
export const HARNESS = `
const T = window.T = { events: [], texts: [], bins: [], offers: [], held: [], hold: false, holdAll: false };
const PC = RTCPeerConnection;
T.pcs = [];
window.RTCPeerConnection = class extends PC { constructor(c) { super(c); T.pcs.push(this); } };
const wsSend = WebSocket.prototype.send;
WebSocket.prototype.send = function (text) {
  const m = JSON.parse(text);
  if (m.type === "signal") {
    const offer = m.data.sdp && m.data.sdp.type === "offer";
    if (offer) T.offers.push(m.to);
    if (T.holdAll || (T.hold && offer)) { T.held.push([this, text]); return; }
  }
  return wsSend.call(this, text);
};
T.release = () => { T.hold = T.holdAll = false; for (const [ws, text] of T.held.splice(0)) wsSend.call(ws, text); };
const ufrag = (d) => d && (/a=ice-ufrag:(\\S+)/.exec(d.sdp) || [])[1];
const fingerprint = (d) => d && (/a=fingerprint:\\S+ (\\S+)/.exec(d.sdp) || [])[1];
T.fingerprints = () => T.pcs.map((pc) => fingerprint(pc.localDescription));
T.ufrags = () => T.pcs.map((pc) => [fingerprint(pc.remoteDescription), pc.connectionState,
  pc.signalingState, ufrag(pc.localDescription), ufrag(pc.remoteDescription)]);
const hex = (buffer) => Array.from(new Uint8Array(buffer), (b) => b.toString(16).padStart(2, "0")).join("");
T.digest = async (bytes) => hex(await crypto.subtle.digest("SHA-256", bytes));
T.join = async (options) => {
  const room = T.room = await PodClient.joinRoom(options);
  for (const type of ["peerjoin", "peerleave", "connectionchange", "onlinechange"]) {
    room.addEventListener(type, (e) => T.events.push([type, e.peerId,
      type === "connectionchange" ? room.connection(e.peerId).state : room.online]));
  }
  room.addEventListener("message", async (e) => {
    if (typeof e.data === "string") T.texts.push([e.peerId, e.data]);
    else T.bins.push([e.peerId, e.data.byteLength, await T.digest(e.data)]);
  });
  return room.peerId;
};
`;

/** The page's hooks, as HARNESS defines them. */
export interface Hooks {
  room: Room;
  events: [string, string, unknown][];
  texts: [string, string][];
  bins: [string, number, string][];
  offers: string[];
  pcs: RTCPeerConnection[];
  held: unknown[];
  hold: boolean;
  holdAll: boolean;
  release(): void;
  /** Each connection's local DTLS fingerprint. */
  fingerprints(): string[];
  /**
   * Each connection's remote DTLS fingerprint, connection and signaling
   * state, local and remote ICE username fragment.
   */
  ufrags(): string[][];
  digest(bytes: BufferSource): Promise<string>;
  join(options?: JoinOptions): Promise<string>;
}
/** A page's global object. */
export type Win = { T: Hooks };

/** CSP violations and uncaught errors of every page. */
export const problems: string[] = [];

/** A page that joined, and its id. */
export interface Peer {
  /** The page. */
  page: Page;
  /** Its room's peer id. */
  id: string;
}

/** Opens `url` in a new context; `join`: joins its session (T.join). */
export async function open(
  browser: Browser,
  url: string,
  join = true,
): Promise<Peer> {
  const context = await browser.newContext();
  // Without a media permission Chromium hides host candidates behind mDNS.
  await context.grantPermissions(["camera", "microphone"]);
  const page = await context.newPage();
  page.on("console", (message) => {
    if (/Content Security Policy|Refused to/i.test(message.text())) {
      problems.push(message.text());
    }
  });
  page.on("pageerror", (error) => problems.push(error.message));
  await page.goto(url);
  if (!join) return { page, id: "" };
  const id = await page.evaluate(() => (globalThis as unknown as Win).T.join());
  assert.match(id, /^[A-Za-z0-9]{16}$/);
  return { page, id };
}

/** The peers of `peer`'s room, sorted. */
export function peersOf(peer: Peer): Promise<string[]> {
  return peer.page.evaluate(() =>
    (globalThis as unknown as Win).T.room.peers.sort()
  );
}

/**
 * Waits until each of `peers` holds an outgoing frame (`T.hold`), then
 * releases them all at once, so that what they held crosses.
 */
export async function releaseWhenHeld(peers: Peer[]): Promise<void> {
  for (const peer of peers) {
    await peer.page.waitForFunction(
      () => (globalThis as unknown as Win).T.held.length > 0,
      null,
      WAIT,
    );
  }
  await Promise.all(
    peers.map((peer) =>
      peer.page.evaluate(() => (globalThis as unknown as Win).T.release())
    ),
  );
}

/** Waits until every one of `peers` has all others connected. */
export async function waitMeshed(peers: Peer[], timeout = WAIT.timeout) {
  for (const peer of peers) {
    const others = peers.filter((other) => other !== peer).map((p) => p.id);
    await peer.page.waitForFunction(
      (ids) => {
        const room = (globalThis as unknown as Win).T.room;
        return ids.every((id: string) =>
          room.peers.includes(id) &&
          room.connection(id).state === "connected"
        );
      },
      others,
      { timeout, polling: 100 },
    ).catch(async (error) => {
      const state = await Promise.all(peers.map((p) =>
        p.page.evaluate(() => {
          const T = (globalThis as unknown as Win).T;
          return JSON.stringify({
            id: T.room.peerId,
            peers: T.room.peers,
            events: T.events.slice(-8),
            offers: T.offers,
            pcs: T.pcs.map((pc) =>
              [
                pc.signalingState,
                pc.connectionState,
                pc.iceConnectionState,
                pc.iceGatheringState,
                pc.localDescription?.type,
                pc.remoteDescription?.type,
              ].join()
            ),
          });
        })
      ));
      throw new Error(`${error.message}\n${state.join("\n")}`);
    });
    assert.deepEqual(await peersOf(peer), others.sort());
  }
}

/** Sends text from `from` (to `to` only, or to all) and waits for it. */
export async function text(
  from: Peer,
  message: string,
  receivers: Peer[],
  to?: Peer,
) {
  await from.page.evaluate(
    ([message, to]) =>
      (globalThis as unknown as Win).T.room.send(message, { to }),
    [message, to?.id] as const,
  );
  for (const receiver of receivers) {
    await receiver.page.waitForFunction(
      ([from, message]) =>
        (globalThis as unknown as Win).T.texts.some((t: string[]) =>
          t[0] === from && t[1] === message
        ),
      [from.id, message],
      WAIT,
    );
  }
}

/**
 * Sends `size` random bytes (as `kind`) from `from` and waits until every
 * receiver has them with the same SHA-256.
 */
export async function binary(
  from: Peer,
  size: number,
  kind: "ArrayBuffer" | "Uint8Array" | "Float64Array",
  receivers: Peer[],
  to?: Peer,
): Promise<void> {
  const digest = await from.page.evaluate(
    async ([size, kind, to]) => {
      const bytes = new Uint8Array(size);
      for (let at = 0; at < size; at += 65_536) {
        crypto.getRandomValues(bytes.subarray(at, at + 65_536));
      }
      const T = (globalThis as unknown as Win).T;
      const data = kind === "ArrayBuffer"
        ? bytes.buffer
        : kind === "Uint8Array"
        ? bytes
        : new Float64Array(bytes.buffer);
      T.room.send(data, { to });
      return await T.digest(bytes);
    },
    [size, kind, to?.id] as const,
  );
  for (const receiver of receivers) {
    await receiver.page.waitForFunction(
      ([from, size, digest]) =>
        (globalThis as unknown as Win).T.bins.some((b: unknown[]) =>
          b[0] === from && b[1] === size && b[2] === digest
        ),
      [from.id, size, digest] as const,
      WAIT,
    );
  }
}

/**
 * Waits until the connection of `peer` to `other` that was connected in
 * `before` (what `T.ufrags()` said then) is connected again and done
 * negotiating (an offer left waiting would block every later restart);
 * `fresh`: with new ICE credentials at both ends. It is the same
 * connection: not replaced.
 */
export async function waitRestarted(
  peer: Peer,
  other: Peer,
  before: string[][],
  fresh: boolean,
  timeout = WAIT.timeout,
): Promise<void> {
  const theirs = await other.page.evaluate(() =>
    (globalThis as unknown as Win).T.fingerprints()
  );
  const i = before.findIndex(([fingerprint, state]) =>
    theirs.includes(fingerprint!) && state === "connected"
  );
  assert.ok(i >= 0, JSON.stringify(before));
  await peer.page.waitForFunction(
    ([i, old, fresh]) => {
      const now = (globalThis as unknown as Win).T.ufrags()[i]!;
      return now[1] === "connected" && now[2] === "stable" &&
        (!fresh || (now[3] !== old[3] && now[4] !== old[4]));
    },
    [i, before[i]!, fresh] as const,
    { timeout, polling: 100 },
  ).catch(async (error) => {
    const now = await peer.page.evaluate(() =>
      (globalThis as unknown as Win).T.ufrags()
    );
    throw new Error(`${error.message}\n${JSON.stringify({ before, now })}`);
  });
}

/** What `T.ufrags()` says in `peer`'s page. */
export function ufrags(peer: Peer): Promise<string[][]> {
  return peer.page.evaluate(() => (globalThis as unknown as Win).T.ufrags());
}

/** The events `peer`'s page recorded. */
export function events(peer: Peer): Promise<[string, string, unknown][]> {
  return peer.page.evaluate(() => (globalThis as unknown as Win).T.events);
}

/** Runs `ip ARGS`, which must succeed. */
export async function ip(args: string): Promise<void> {
  const { code, stderr } = await new Deno.Command("ip", {
    args: args.split(" "),
  }).output();
  assert.equal(code, 0, new TextDecoder().decode(stderr));
}

/** A broker serving the client's test pod; `stop` and `start` it again. */
export interface PodBroker {
  /** The pod's URL (add `#session`). */
  url: string;
  /** The broker's port (the same after a restart). */
  port: number;
  /** The signed pod it serves (to upload it to another broker too). */
  pod: Uint8Array;
  /** Stops the broker (idempotent). */
  stop(): Promise<void>;
  /** Starts it again on the same port. */
  start(): Promise<void>;
}

/**
 * Starts a broker with `options` and uploads the client's test pod to it
 * (`pod`, the signed test pod another broker got, or a new one).
 */
export async function podBroker(
  options: Partial<SignalServerOptions> = {},
  pod?: Uint8Array,
): Promise<PodBroker> {
  const broker = await restartableBroker(options);
  const { port } = broker;
  pod ??= await testPod();
  const uploaded = await fetch(`http://127.0.0.1:${port}/pods`, {
    method: "POST",
    headers: { "Content-Type": "text/html" },
    body: pod as BodyInit,
  });
  assert.equal(uploaded.status, 201);
  const { url } = await uploaded.json();
  return { url, port, pod, stop: broker.stop, start: broker.start };
}

/** The client's test pod (the client and HARNESS), signed with a new key. */
export async function testPod(): Promise<Uint8Array> {
  const html = `<!doctype html><meta charset="utf-8"><title>client</title>` +
    `<script>${await bundleClient("iife")}</script><script>${HARNESS}</script>`;
  return await signPod(html, (await generateKeyPair()).seed);
}

/**
 * Runs `journey` in Debian's Chromium, then closes it. `loopback`: whether
 * ICE may use loopback (not when a test cuts a real address).
 */
export async function withChromium(
  loopback: boolean,
  journey: (browser: Browser) => Promise<void>,
): Promise<void> {
  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: loopback
      ? CHROMIUM_FLAGS
      : CHROMIUM_FLAGS.filter((flag) =>
        flag !== "--allow-loopback-in-peer-connection"
      ),
  });
  try {
    await journey(browser);
  } finally {
    await browser.close();
  }
}
