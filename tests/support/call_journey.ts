// The call example (examples/call/) in real Chromium with fake devices, run
// by tests/e2e/call_test.ts (inside a loopback-only network namespace when
// it can). Pods are served on their own origins (`podDomain: "localhost"`,
// http://LABEL.localhost:PORT/, which Chromium resolves to loopback).
//
// - Three visitors see each other's camera (each remote <video> has a
//   width and its time advances) and hear each other (an audio track whose
//   packets arrive); a mute is seen by the others; a camera turned off and
//   on again; a screen share arrives as a track of its own; ICE restarts
//   keep it all flowing.
// - One leaves; the broker goes away and comes back: media flow on, and a
//   fourth visitor who joins then gets every track already added.
// - Relay only: two visitors whose connections may use nothing but a TURN
//   relay (a real coturn) see each other.
// - The same pod on a broker without a pod domain says that calls need one,
//   at once; a pod that declares nothing gets NotAllowedError on its own
//   origin, and one that declares the camera gets it.
// - No page logs an error about its Permissions-Policy header (a feature
//   Chromium does not know), a CSP violation, or an uncaught error.
//
// Usage: deno run -A tests/support/call_journey.ts [--figures]
//   --figures: instead, prints the time from a second visitor opening the
//   pod to its first frame of the first visitor's camera, median of 5.
import assert from "node:assert/strict";
import { type Browser, chromium, type Page } from "playwright-core";
import { buildPod } from "../../src/bundler/mod.ts";
import { generateKeyPair } from "../../src/pod/ed25519.ts";
import { signPod } from "../../src/pod/sign.ts";
import type { SignalServerOptions } from "../../src/config/types.ts";
import { CHROMIUM, CHROMIUM_FLAGS } from "./chat_journey_config.ts";
import { startCoturn } from "./coturn.ts";
import { restartableBroker } from "./helpers.ts";

/**
 * Fake camera, microphone and screen (10 frames a second: four visitors
 * encoding and decoding each other's video share two busy cores); every
 * prompt answered yes.
 */
const FLAGS = [
  ...CHROMIUM_FLAGS,
  "--use-fake-device-for-media-stream=fps=10",
  "--use-fake-ui-for-media-stream",
];
/** How long a page waits (fake devices start slowly on a busy machine). */
const WAIT = { timeout: 60_000, polling: 200 };
/** How long a click or a page load may take (a busy renderer is slow). */
const ACT = { timeout: 60_000 };

/** Console lines and errors that fail the journey, from every page. */
const problems: string[] = [];

/**
 * Runs in each page before the pod: keeps its connections (for their
 * statistics) and, with `relay`, forces them to relay only, as a firewall
 * that lets nothing but the TURN server through would.
 */
function hooks(relay: boolean): void {
  // Runs in the page: typed loosely, Deno has no DOM types here.
  // deno-lint-ignore no-explicit-any
  const page = globalThis as any;
  // Small video: every visitor encodes its camera once per peer, and a
  // busy 2-core machine runs them all (the test's doing; the pod asks for
  // what it asks for).
  const media = page.navigator.mediaDevices;
  const small = (video: unknown, width: number, height: number) =>
    video
      ? { ...(video === true ? {} : video as object), width, height }
      : video;
  const getUserMedia = media.getUserMedia.bind(media);
  media.getUserMedia = (c: { video?: unknown }) =>
    getUserMedia({ ...c, video: small(c.video, 320, 240) });
  const getDisplayMedia = media.getDisplayMedia.bind(media);
  media.getDisplayMedia = (c: { video?: unknown }) =>
    getDisplayMedia({ ...c, video: small(c.video, 640, 360) });
  const Native = page.RTCPeerConnection;
  page.pcs = [];
  // What the room told, for a failure's diagnosis.
  page.told = [];
  const listen = setInterval(() => {
    const room = page.podCall?.room;
    if (!room) return;
    clearInterval(listen);
    for (
      const type of [
        "peerjoin",
        "peerleave",
        "connectionchange",
        "onlinechange",
      ]
    ) {
      room.addEventListener(type, (event: { peerId: string }) =>
        page.told.push(
          `${Math.round(performance.now())} ${type} ${
            event.peerId.slice(0, 4)
          } ${
            type === "connectionchange"
              ? room.connection(event.peerId).state
              : ""
          }`,
        ));
    }
  }, 50);
  page.RTCPeerConnection = class extends Native {
    constructor(config = {}) {
      super(relay ? { ...config, iceTransportPolicy: "relay" } : config);
      page.pcs.push(this);
      // When each connection changed state or was closed, for a failure's
      // diagnosis (a link that never connects is given up after a while).
      const n = page.pcs.length - 1;
      const note = (what: string) =>
        page.told.push(`${Math.round(performance.now())} pc${n} ${what}`);
      this.addEventListener(
        "connectionstatechange",
        () => note(this.connectionState),
      );
      const close = this.close.bind(this);
      this.close = () => {
        note("close()");
        close();
      };
    }
    setConfiguration(config = {}) {
      return super.setConfiguration(
        relay ? { ...config, iceTransportPolicy: "relay" } : config,
      );
    }
  };
}

/** Prints that `step` passed, and when (seconds since the journey began). */
function passed(step: string): void {
  console.log(`${step} (at ${Math.round(performance.now() / 1000)} s)`);
}

interface Visitor {
  page: Page;
  id: string;
}

/** Every visitor so far, for {@linkcode diagnose}. */
const visitors: Visitor[] = [];

/** What each open page's connections and tiles are, printed on a failure. */
async function diagnose(): Promise<void> {
  console.error(
    `at ${Math.round(performance.now() / 1000)} s; each page's times are ` +
      "ms since it opened:",
  );
  for (const v of visitors) {
    const state = await v.page.evaluate(() => {
      const page = globalThis as unknown as {
        pcs: RTCPeerConnection[];
        told: string[];
      };
      return {
        told: page.told,
        tiles: [...document.querySelectorAll<HTMLElement>("#grid figure")]
          .map((el) => ({ ...el.dataset })),
        pcs: page.pcs.map((pc) => ({
          state: [pc.signalingState, pc.connectionState].join(),
          transceivers: pc.getTransceivers().map((t) =>
            [
              t.mid,
              t.direction,
              t.currentDirection,
              t.sender.track?.kind ?? "-",
              t.receiver.track.readyState,
            ].join()
          ),
        })),
      };
    }).catch((error) => String(error));
    console.error(`${v.id}: ${JSON.stringify(state)}`);
  }
}

/** Opens `url` in a fresh profile and waits until it joined the call. */
async function visit(
  browser: Browser,
  url: string,
  relay = false,
): Promise<Visitor> {
  const context = await browser.newContext();
  await context.addInitScript(hooks, relay);
  const page = await context.newPage();
  watch(page);
  await page.goto(url, ACT);
  await page.waitForSelector('#status[data-state="connected"]', WAIT);
  const id = await page.evaluate(() =>
    (globalThis as unknown as { podCall: { room: { peerId: string } } })
      .podCall.room.peerId
  );
  assert.match(id, /^[A-Za-z0-9]{16}$/);
  visitors.push({ page, id });
  return { page, id };
}

function watch(page: Page): void {
  page.on("console", (message) => {
    const text = message.text();
    // "Error with Permissions-Policy header: Unrecognized feature: ..."
    if (
      /Permissions-Policy header|Content Security Policy|Refused to/i.test(text)
    ) {
      problems.push(`${page.url()}: ${text}`);
    }
  });
  page.on("pageerror", (error) => {
    // The pod on a broker without a pod domain stops on purpose.
    if (!/has no origin of its own/.test(error.message)) {
      problems.push(`${page.url()}: ${error.message}`);
    }
  });
}

/** The selector of `from`'s tile of `kind` with its video on. */
const tile = (from: string, kind: string, more = "") =>
  `#grid figure[data-peer-id="${from}"][data-kind="${kind}"]${more}`;

/** Waits until `v` plays `from`'s `kind` video: a width, time advancing. */
async function seesVideo(
  v: Visitor,
  from: string,
  kind: "camera" | "screen",
): Promise<void> {
  const video = `${tile(from, kind, '[data-video="on"]')} video`;
  const timeOf = () =>
    v.page.waitForFunction(
      (video) => {
        const el = document.querySelector<HTMLVideoElement>(video);
        return el && el.videoWidth > 0 && el.currentTime > 0 && el.currentTime;
      },
      video,
      WAIT,
    ).then((handle) => handle.jsonValue() as Promise<number>);
  const first = await timeOf();
  await v.page.waitForFunction(
    ([video, first]) =>
      document.querySelector<HTMLVideoElement>(video as string)!.currentTime >
        (first as number) + 0.5,
    [video, first] as const,
    WAIT,
  );
}

/** Waits until `v` receives `from`'s microphone: its packets keep coming. */
async function hearsAudio(v: Visitor, from: string): Promise<void> {
  const packets = () =>
    v.page.evaluate(async (selector) => {
      const video = document.querySelector<HTMLVideoElement>(selector);
      const track = (video?.srcObject as MediaStream | null)
        ?.getAudioTracks()[0];
      if (!track || track.readyState !== "live") return 0;
      let received = 0;
      for (
        const pc of (globalThis as unknown as { pcs: RTCPeerConnection[] })
          .pcs
      ) {
        const stats = await pc.getStats(track).catch(() => new Map());
        stats.forEach((report) => {
          if (report.type === "inbound-rtp" && report.kind === "audio") {
            received += report.packetsReceived;
          }
        });
      }
      return received;
    }, `${tile(from, "camera")} video`);
  let first = 0;
  const until = Date.now() + WAIT.timeout;
  while ((first = await packets()) === 0) {
    assert.ok(Date.now() < until, `no audio from ${from}`);
    await sleep(200);
  }
  while ((await packets()) <= first) {
    assert.ok(Date.now() < until, `the audio from ${from} stopped`);
    await sleep(200);
  }
}

async function seesEveryone(visitors: Visitor[]): Promise<void> {
  for (const v of visitors) {
    for (const other of visitors) {
      if (other === v) continue;
      await seesVideo(v, other.id, "camera");
      await hearsAudio(v, other.id);
    }
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** A broker on 127.0.0.1 that can be stopped and started on its port. */
function broker(options: Partial<SignalServerOptions> = {}) {
  return restartableBroker(options);
}

/** Uploads `pod`; returns its URL on the broker and its own URL, if any. */
async function publish(
  url: string,
  pod: Uint8Array,
): Promise<{ url: string; podUrl?: string }> {
  const uploaded = await fetch(`${url}/pods`, {
    method: "POST",
    headers: { "Content-Type": "text/html; charset=utf-8" },
    body: pod as BodyInit,
  });
  assert.equal(uploaded.status, 201, await uploaded.clone().text());
  return await uploaded.json();
}

/** The call example, built and signed. */
async function callPod(): Promise<Uint8Array> {
  const entry = new URL("../../examples/call/index.html", import.meta.url);
  const { html } = await buildPod(entry.pathname, {
    seed: (await generateKeyPair()).seed,
    name: "Call",
  });
  return html;
}

const session = (name: string) => `#${name}-${crypto.randomUUID().slice(0, 8)}`;

const online = (v: Visitor, state: boolean) =>
  v.page.waitForFunction(
    (state) =>
      (globalThis as unknown as { podCall: { room: { online: boolean } } })
        .podCall.room.online === state,
    state,
    WAIT,
  );

/** Three visitors, a mute, a camera off and on, a screen, a restart, a fourth. */
async function call(browser: Browser, pod: Uint8Array): Promise<void> {
  const b = await broker({ podDomain: "localhost" });
  try {
    const { podUrl } = await publish(b.url, pod);
    const url = `${podUrl}${session("call")}`;
    const [alice, bob, carol] = [
      await visit(browser, url),
      await visit(browser, url),
      await visit(browser, url),
    ] as [Visitor, Visitor, Visitor];
    await seesEveryone([alice, bob, carol]);
    passed("three visitors see and hear each other");

    // A mute is seen by the others, and so is its end.
    await alice.page.click("#mic", ACT);
    for (const v of [bob, carol]) {
      await v.page.waitForSelector(
        tile(alice.id, "camera", '[data-mic="off"]'),
        WAIT,
      );
    }
    await alice.page.click("#mic", ACT);
    for (const v of [bob, carol]) {
      await v.page.waitForSelector(
        tile(alice.id, "camera", '[data-mic="on"]'),
        WAIT,
      );
    }
    // A camera turned off ends its track at the others (the microphone
    // stays); turned on again, a new track arrives.
    await bob.page.click("#cam", ACT);
    for (const v of [alice, carol]) {
      await v.page.waitForSelector(
        tile(bob.id, "camera", '[data-video="off"]'),
        WAIT,
      );
    }
    await hearsAudio(alice, bob.id);
    await bob.page.click("#cam", ACT);
    for (const v of [alice, carol]) await seesVideo(v, bob.id, "camera");
    passed("mute and camera off seen remotely");

    // A screen share arrives as a track of its own.
    await alice.page.click("#screen", ACT);
    for (const v of [bob, carol]) await seesVideo(v, alice.id, "screen");
    passed("screen share arrives");

    // ICE restarts (new credentials at both ends): media flow on.
    const ufrags = () =>
      alice.page.evaluate(() =>
        (globalThis as unknown as { pcs: RTCPeerConnection[] }).pcs.map((pc) =>
          [pc.signalingState, pc.connectionState, pc.localDescription?.sdp]
            .map((part) => /a=ice-ufrag:(\S+)/.exec(part ?? "")?.[1] ?? part)
            .join(" ")
        )
      );
    const before = await ufrags();
    assert.equal(before.length, 2);
    await alice.page.evaluate(() => {
      for (
        const pc of (globalThis as unknown as { pcs: RTCPeerConnection[] }).pcs
      ) pc.restartIce();
    });
    await alice.page.waitForFunction(
      (before) =>
        (globalThis as unknown as { pcs: RTCPeerConnection[] }).pcs.every((
          pc,
          i,
        ) =>
          pc.signalingState === "stable" &&
          pc.connectionState === "connected" &&
          !pc.localDescription!.sdp.includes(
            `a=ice-ufrag:${before[i]!.split(" ")[2]}\r`,
          )
        ),
      before,
      WAIT,
    );
    for (const v of [bob, carol]) {
      await seesVideo(v, alice.id, "camera");
      await seesVideo(v, alice.id, "screen");
      await seesVideo(alice, v.id, "camera");
    }
    passed("ICE restarts keep media flowing");

    // Carol leaves: her tiles go at the others (and her load off the
    // machine: two busy cores encode every camera once per peer).
    await carol.page.click("#leave", ACT);
    for (const v of [alice, bob]) {
      await v.page.waitForSelector(`#grid figure[data-peer-id="${carol.id}"]`, {
        state: "detached",
        ...WAIT,
      });
    }
    await carol.page.context().close();

    // The broker goes away: media flow on. It comes back: everyone rejoins.
    await b.stop();
    for (const v of [alice, bob]) await online(v, false);
    await seesVideo(bob, alice.id, "camera");
    await seesVideo(bob, alice.id, "screen");
    await b.start();
    for (const v of [alice, bob]) await online(v, true);

    // A fourth visitor, joining late, gets every track already added.
    const dave = await visit(browser, url);
    for (const v of [alice, bob]) {
      await seesVideo(dave, v.id, "camera");
      await hearsAudio(dave, v.id);
      await seesVideo(v, dave.id, "camera");
    }
    await seesVideo(dave, alice.id, "screen");
    await dave.page.waitForSelector(
      tile(bob.id, "camera", '[data-mic="on"]'),
      WAIT,
    );
    passed("a late visitor gets every track, after a broker restart");

    // Sharing stops: the screen's tile goes at the others.
    await alice.page.click("#screen", ACT);
    for (const v of [bob, dave]) {
      await v.page.waitForSelector(tile(alice.id, "screen"), {
        state: "detached",
        ...WAIT,
      });
    }
    for (const v of [alice, bob, dave]) await v.page.context().close();
  } finally {
    await b.stop();
  }
}

/** Two visitors who may use nothing but a TURN relay see each other. */
async function relayOnly(browser: Browser, pod: Uint8Array): Promise<void> {
  const secret = `secret-${crypto.randomUUID()}`;
  await using coturn = await startCoturn({ secret, allowLoopbackPeers: true });
  const b = await broker({
    podDomain: "localhost",
    turn: { urls: [`turn:127.0.0.1:${coturn.port}`], secret },
  });
  try {
    const { podUrl } = await publish(b.url, pod);
    const url = `${podUrl}${session("relay")}`;
    const a = await visit(browser, url, true);
    const z = await visit(browser, url, true);
    const pair = [a, z];
    await seesEveryone(pair);
    for (const [v, other] of [[a, z], [z, a]] as const) {
      const route = await v.page.evaluate(
        (id) =>
          (globalThis as unknown as {
            podCall: { room: { connection(id: string): { route: string } } };
          }).podCall.room.connection(id).route,
        other.id,
      );
      assert.equal(route, "relayed");
    }
    for (const v of pair) await v.page.context().close();
    passed("a relay-only call goes through coturn");
  } finally {
    await b.stop();
  }
}

/** What a page says about its camera: `ok`, or the error's name. */
const CAMERA_PROBE = `<script>
navigator.mediaDevices.getUserMedia({ video: true }).then(
  (stream) => { document.title = "ok " + stream.getVideoTracks().length; },
  (error) => { document.title = error.name; },
);
</script>`;

/** The broker's host says calls need a pod domain; undeclared is refused. */
async function refusals(browser: Browser, pod: Uint8Array): Promise<void> {
  // On a broker without a pod domain the call pod says so at once.
  const plain = await broker();
  try {
    const { url } = await publish(plain.url, pod);
    const context = await browser.newContext();
    const page = await context.newPage();
    watch(page);
    await page.goto(`${url}${session("plain")}`, ACT);
    const status = page.locator('#status[data-state="error"]');
    await status.waitFor({ timeout: 15_000 });
    assert.match(await status.textContent() ?? "", /pod domain/);
    assert.match(
      await page.locator("#notice").textContent() ?? "",
      /--pod-domain/,
    );
    assert.equal(await page.locator("#grid figure").count(), 0);
    await context.close();
  } finally {
    await plain.stop();
  }
  // On its own origin, a pod that declares nothing cannot prompt; one that
  // declares the camera can.
  const b = await broker({ podDomain: "localhost" });
  try {
    const seed = (await generateKeyPair()).seed;
    for (
      const [head, expected] of [
        ["", "NotAllowedError"],
        ['<meta name="pod-permissions" content="camera">', "ok 1"],
      ]
    ) {
      const html = `<!doctype html><html><head>${head}<title>probe</title>` +
        `</head><body>${CAMERA_PROBE}</body></html>`;
      const { podUrl } = await publish(b.url, await signPod(html, seed));
      const context = await browser.newContext();
      const page = await context.newPage();
      watch(page);
      await page.goto(podUrl!, ACT);
      await page.waitForFunction(
        () => document.title !== "probe",
        null,
        WAIT,
      );
      assert.equal(await page.title(), expected, head);
      await context.close();
    }
  } finally {
    await b.stop();
  }
  passed("refusals ok");
}

/**
 * Runs in the second visitor's page: when (ms after navigation) its own
 * camera and a remote camera first have a frame.
 */
function marks(): void {
  // deno-lint-ignore no-explicit-any
  const page = globalThis as any;
  const seen: Record<string, number> = page.marks = {};
  const timer = setInterval(() => {
    for (const video of document.querySelectorAll("video")) {
      const mine = video.closest("figure")?.dataset.peerId === "me";
      if (video.videoWidth > 0) {
        seen[mine ? "local" : "remote"] ??= performance.now();
      }
    }
    if (page.podCall?.room.peers.length) seen.peer ??= performance.now();
    if (document.querySelector('figure:not([data-peer-id="me"])')) {
      seen.track ??= performance.now();
    }
    if (seen.remote) clearInterval(timer);
  }, 10);
}

/**
 * The time from a second visitor opening the pod to its first frame of the
 * first visitor's camera (and to its own camera's first frame), five
 * times; prints each and the medians.
 */
async function figures(browser: Browser, pod: Uint8Array): Promise<void> {
  const b = await broker({ podDomain: "localhost" });
  try {
    const { podUrl } = await publish(b.url, pod);
    const remote: number[] = [];
    const local: number[] = [];
    const peer: number[] = [];
    const track: number[] = [];
    for (let round = 0; round < 5; round++) {
      const url = `${podUrl}${session("figure")}`;
      const first = await visit(browser, url);
      await first.page.waitForSelector(
        `${tile("me", "camera", '[data-video="on"]')}`,
        WAIT,
      );
      const context = await browser.newContext();
      await context.addInitScript(marks);
      const page = await context.newPage();
      await page.goto(url, ACT);
      const seen = await page.waitForFunction(
        () =>
          (globalThis as unknown as { marks: Record<string, number> }).marks
            .remote && (globalThis as unknown as { marks: unknown }).marks,
        null,
        WAIT,
      ).then((handle) => handle.jsonValue() as Promise<Record<string, number>>);
      remote.push(seen.remote!);
      local.push(seen.local ?? NaN);
      peer.push(seen.peer ?? NaN);
      track.push(seen.track ?? NaN);
      await context.close();
      await first.page.context().close();
    }
    const median = (list: number[]) =>
      Math.round([...list].sort((a, b) => a - b)[2]!);
    console.log(
      `figure: first remote video frame ${
        remote.map(Math.round).join(", ")
      } ms after opening the pod, median ${
        median(remote)
      } ms; its own camera's first frame: median ${
        median(local)
      } ms; a data channel to the first: median ${
        median(peer)
      } ms; its first track: median ${median(track)} ms`,
    );
  } finally {
    await b.stop();
  }
}

const browser = await chromium.launch({
  executablePath: CHROMIUM,
  args: FLAGS,
});
try {
  const pod = await callPod();
  if (Deno.args.includes("--figures")) await figures(browser, pod);
  else {
    await call(browser, pod).catch(async (error) => {
      await diagnose();
      throw error;
    });
    await relayOnly(browser, pod);
    await refusals(browser, pod);
    assert.deepEqual(problems, [], "no page logged a problem");
    console.log("call journey ok");
  }
} finally {
  await browser.close();
}
