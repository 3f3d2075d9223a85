// The browser client in real Chromium, run by client_test.ts (inside a
// network namespace when it can): the client is bundled and inlined into a
// signed test pod served by a real broker, then driven in several browser
// contexts: a three-peer mesh with text and binary both ways, a 5 MB
// message, an ICE restart after the network went away, a broker restart
// that open channels survive and a newcomer after it, and glare.
// Exits non-zero with the failed assertion; prints "client journey ok".
// Usage: deno run -A tests/support/client_journey.ts [--cut DEV/ADDR]
//   --cut: ICE runs on ADDR (on device DEV) only, and the ICE restart step
//   removes and restores that address; without it the step is skipped.
import assert from "node:assert/strict";
import { type Browser, chromium, type Page } from "playwright-core";
import { createSignalServer } from "../../src/adapters/deno.ts";
import { silentLogger } from "../../src/_util/log.ts";
import { generateKeyPair } from "../../src/pod/ed25519.ts";
import { signPod } from "../../src/pod/sign.ts";
import { MemoryRegistry } from "../../src/registries/memory.ts";
import type { SignalServer } from "../../src/config/types.ts";
import type { JoinOptions, Room } from "../../src/client/mod.ts";
import { CHROMIUM, CHROMIUM_FLAGS } from "./chat_journey_config.ts";
import { bundleClient } from "./client_bundle.ts";

const WAIT = { timeout: 20_000, polling: 100 };
const cutIndex = Deno.args.indexOf("--cut");
const cutArg = cutIndex >= 0 ? Deno.args[cutIndex + 1]! : null;
const cut = cutArg === null ? null : [
  cutArg.slice(0, cutArg.indexOf("/")),
  cutArg.slice(cutArg.indexOf("/") + 1),
];

// The page's test hooks: events and messages as they arrive, and a wrapper
// around WebSocket.send that counts offers and can hold them back, so that
// two peers' offers cross (glare) and candidates outrun their offer.
const HARNESS = `
const T = window.T = { events: [], texts: [], bins: [], offers: [], held: [], hold: false };
const PC = RTCPeerConnection;
T.pcs = [];
window.RTCPeerConnection = class extends PC { constructor(c) { super(c); T.pcs.push(this); } };
const wsSend = WebSocket.prototype.send;
WebSocket.prototype.send = function (text) {
  const m = JSON.parse(text);
  if (m.type === "signal" && m.data.sdp && m.data.sdp.type === "offer") {
    T.offers.push(m.to);
    if (T.hold) { T.held.push([this, text]); return; }
  }
  return wsSend.call(this, text);
};
T.release = () => { T.hold = false; for (const [ws, text] of T.held.splice(0)) wsSend.call(ws, text); };
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
interface Hooks {
  room: Room;
  events: [string, string, unknown][];
  texts: [string, string][];
  bins: [string, number, string][];
  offers: string[];
  pcs: RTCPeerConnection[];
  held: unknown[];
  hold: boolean;
  release(): void;
  digest(bytes: BufferSource): Promise<string>;
  join(options?: JoinOptions): Promise<string>;
}
type Win = { T: Hooks };

/** CSP violations and uncaught errors of every page. */
const problems: string[] = [];

interface Peer {
  page: Page;
  id: string;
}

async function open(
  browser: Browser,
  url: string,
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
  const id = await page.evaluate(() => (globalThis as unknown as Win).T.join());
  assert.match(id, /^[A-Za-z0-9]{16}$/);
  return { page, id };
}

function peersOf(peer: Peer): Promise<string[]> {
  return peer.page.evaluate(() =>
    (globalThis as unknown as Win).T.room.peers.sort()
  );
}

async function waitMeshed(peers: Peer[], timeout = WAIT.timeout) {
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
async function text(from: Peer, message: string, receivers: Peer[], to?: Peer) {
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
async function binary(
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

function events(peer: Peer): Promise<[string, string, unknown][]> {
  return peer.page.evaluate(() => (globalThis as unknown as Win).T.events);
}

async function ip(args: string): Promise<void> {
  const { code, stderr } = await new Deno.Command("ip", {
    args: args.split(" "),
  }).output();
  assert.equal(code, 0, new TextDecoder().decode(stderr));
}

async function journey(browser: Browser): Promise<void> {
  const registry = new MemoryRegistry();
  const start = (port: number) =>
    createSignalServer({
      registry,
      port,
      hostname: "127.0.0.1",
      logger: silentLogger,
      accessLog: "off",
    });
  let server: SignalServer = await start(0);
  const port = server.port;
  try {
    const html = `<!doctype html><meta charset="utf-8"><title>client</title>` +
      `<script>${await bundleClient(
        "iife",
      )}</script><script>${HARNESS}</script>`;
    const pod = await signPod(html, (await generateKeyPair()).seed);
    const uploaded = await fetch(`http://127.0.0.1:${port}/pods`, {
      method: "POST",
      headers: { "Content-Type": "text/html" },
      body: pod as BodyInit,
    });
    assert.equal(uploaded.status, 201);
    const { url } = await uploaded.json();

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
      // The network goes away: every connection fails and restarts ICE;
      // when it is back, the same links connect again.
      const [dev, addr] = cut;
      const offersBefore = await a.page.evaluate(() =>
        (globalThis as unknown as Win).T.offers.length
      );
      await ip(`addr del ${addr} dev ${dev}`);
      try {
        await a.page.waitForFunction(
          (id) =>
            (globalThis as unknown as Win).T.events.some((e) =>
              e[0] === "connectionchange" && e[1] === id && e[2] === "failed"
            ),
          b.id,
          { timeout: 45_000, polling: 100 },
        );
      } finally {
        await ip(`addr add ${addr} dev ${dev}`);
      }
      await waitMeshed([a, b, c], 45_000);
      const log = await events(a);
      const states = log.filter((e) =>
        e[0] === "connectionchange" && e[1] === b.id
      )
        .map((e) => e[2]);
      assert.ok(
        states.lastIndexOf("failed") < states.lastIndexOf("connected"),
        states.join(),
      );
      assert.ok(!log.some((e) => e[0] === "peerleave"), "no peer left");
      // Both ends restart; at least one restart offer went from A to B.
      const offers: string[] = await a.page.evaluate(() =>
        (globalThis as unknown as Win).T.offers
      );
      assert.ok(offers.slice(offersBefore).includes(b.id), offers.join());
      await text(a, "after the ICE restart", [b, c]);
      await text(b, "back, B", [a]);
      console.log("ICE restart ok");
    } else console.error("note: no --cut: the ICE restart step is skipped");

    // The broker goes away: open channels keep working.
    await server.close();
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
    server = await start(port);
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
    const health = await (await fetch(`http://127.0.0.1:${port}/health`))
      .json();
    assert.equal(health.peers, 4);
    console.log("broker restart ok");

    // Glare: two connected peers both restart ICE, and their offers are
    // held until both have made one, so they cross (and each one's
    // candidates arrive before its offer). The lower id yields; the
    // connection carries on with the new ICE credentials of both ends.
    const session = `${url}#glare-${crypto.randomUUID().slice(0, 8)}`;
    const e = await open(browser, session);
    const f = await open(browser, session);
    await waitMeshed([e, f]);
    const ufrags = (peer: Peer) =>
      peer.page.evaluate(() => {
        const pc = (globalThis as unknown as Win).T.pcs[0]!;
        const ufrag = (sdp = "") => /a=ice-ufrag:(\S+)/.exec(sdp)?.[1];
        return [
          pc.signalingState,
          ufrag(pc.localDescription?.sdp),
          ufrag(pc.remoteDescription?.sdp),
        ];
      });
    const before = await Promise.all([e, f].map(ufrags));
    await Promise.all([e, f].map((peer) =>
      peer.page.evaluate(() => {
        const T = (globalThis as unknown as Win).T;
        T.hold = true;
        T.pcs[0]!.restartIce();
      })
    ));
    for (const peer of [e, f]) {
      await peer.page.waitForFunction(
        () => (globalThis as unknown as Win).T.held.length > 0,
        null,
        WAIT,
      );
    }
    await Promise.all(
      [e, f].map((peer) =>
        peer.page.evaluate(() => (globalThis as unknown as Win).T.release())
      ),
    );
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
    // The higher id made the first offer; then both made a restart offer.
    for (const [me, other] of [[e, f], [f, e]] as const) {
      assert.deepEqual(
        await me.page.evaluate(() => (globalThis as unknown as Win).T.offers),
        me.id > other.id ? [other.id, other.id] : [other.id],
      );
    }
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
    await server.close();
  }
}

const flags = cut
  ? CHROMIUM_FLAGS.filter((flag) =>
    flag !== "--allow-loopback-in-peer-connection"
  )
  : CHROMIUM_FLAGS;
const browser = await chromium.launch({
  executablePath: CHROMIUM,
  args: flags,
});
try {
  await journey(browser);
  console.log("client journey ok");
} finally {
  await browser.close();
}
